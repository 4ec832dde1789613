"""Deciding in the window: the keys and buttons, the one decision operation, the high-risk confirm key."""
