"""The ``reviewer-app`` command line, one module per command family; ``main`` is the console script's entry point.

``main`` is also what console scripts installed by earlier versions call: an agent's hook (``reviewer-app hook
…``) goes on to :func:`reviewer_app.__main__.main` (the hook's lean path) before the CLI's imports load.
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False  # no ``typing`` before the hook's lean path runs
if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    if argv is None and sys.argv[1:2] == ["hook"]:
        from reviewer_app.__main__ import main as entry

        return entry()
    from reviewer_app.cli.command import main as cli_main

    return cli_main(argv)
