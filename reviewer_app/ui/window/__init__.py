"""The main window and what it assembles: the live feed, banner, menus, keymap, side windows, settings."""
