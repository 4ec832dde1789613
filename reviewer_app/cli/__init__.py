"""The ``reviewer-app`` command line, one module per command family; ``main`` is the console script's entry point."""

from reviewer_app.cli.command import main

__all__ = ["main"]
