"""The window on the desktop: tray icon, native notifications, one window per database."""
