"""``python -m reviewer_app``: the same as the ``reviewer-app`` command."""

from reviewer_app.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
