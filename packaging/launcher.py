"""Entry point of the frozen app: the same ``main`` as the ``reviewer-app`` console script (``reviewer_app.__main__``).

The one frozen-only concern lives here: a windowed Windows executable starts
with ``sys.stdout``/``sys.stderr`` set to None, and ``--version`` or a logged
warning would then crash; point them at the null device instead.
"""

import multiprocessing
import os
import sys


def _ensure_std_streams() -> None:
    for name in ("stdout", "stderr"):
        if getattr(sys, name) is None:
            setattr(sys, name, open(os.devnull, "w", encoding="utf-8"))  # noqa: SIM115 - lives as long as the app


if __name__ == "__main__":
    multiprocessing.freeze_support()  # child processes of a frozen app re-enter here
    _ensure_std_streams()
    from reviewer_app.__main__ import main  # a hook goes straight to its light module, the rest to the CLI

    sys.exit(main())
