"""Reviewer: review and decide the approval requests that AI agents raise before they act."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("reviewer-app")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0.0.0+unknown"

__all__ = ["__version__"]
