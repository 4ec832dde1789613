"""The window (PySide6): one package per view, a thin main window that assembles them.

``inbox/``, ``runs/`` and ``detail/`` are the views: each holds its panel (the widgets and what
the operator does there), its Qt item model and whatever only it needs. Views to come take the
same shape beside them: ``history/`` (decided requests, audit), ``rules/``, ``statistics/``.
Rooms the views share sit at this level: the feed (``live``), decisions, dialogs, tray,
settings, banner, theme. Nothing here touches the store or SQL: only the backend's methods.
"""
