"""The window (PySide6): one package per view or shared room, a thin main window that assembles them.

Views: ``inbox/``, ``detail/``, ``runs/``, ``history/``, ``rules/``, ``audit/``, ``stats/`` (each holds its panel,
its Qt item model and whatever only it needs). Rooms the views share: ``window/`` (the main window, the live feed,
banner, keymap, settings), ``decide/`` (keys, buttons and the one decision operation), ``dialogs/``, ``triage/``
(undo, bulk), ``desktop/`` (tray, notifications, one window per database), ``startup/`` (QApplication, platform
checks), ``models/`` (shared Qt item models) and ``common/`` (texts, theme, keepers). Nothing here touches the store
or SQL: only the backend's and the runtime's methods.
"""
