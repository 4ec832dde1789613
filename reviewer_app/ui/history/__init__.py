"""The History tab: decided requests, searched and paged (panel, model, what the detail shows)."""
