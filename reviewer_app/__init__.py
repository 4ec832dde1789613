"""Reviewer: review and decide the approval requests that AI agents raise before they act."""

from __future__ import annotations

TYPE_CHECKING = False  # ``typing`` costs a hook call milliseconds; mypy reads the block below
if TYPE_CHECKING:
    from typing import Any

__all__ = ["__version__"]


def __getattr__(name: str) -> Any:
    # Looked up on first use, not at import: importlib.metadata costs ~25 ms, and a permission hook
    # (``python -m reviewer_app hook …``) that answers every tool call by rule cannot spare it.
    if name == "__version__":
        from importlib.metadata import PackageNotFoundError, version

        try:
            value = version("reviewer-app")
        except PackageNotFoundError:  # running from a source tree that was never installed
            value = "0.0.0+unknown"
        globals()["__version__"] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
