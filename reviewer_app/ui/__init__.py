"""PySide6 widgets, Qt item models and dialogs. Talks to services, never to SQL."""
