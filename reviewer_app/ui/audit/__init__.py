"""The audit view (Ctrl+5): the decision log paged, its chain verified, exported to JSONL or CSV."""
