"""The backend, loaded by a hook process that needs it (a call waiting for a reviewer, a recorded tool result).

Each such event is a new process, and importing the backend (SQLAlchemy, the store, the domain) is most of its CPU.
Those imports make ~150,000 objects and no garbage, so the cycle collector is paused while they run: the
collections they would set off cost ~7 % of the process's CPU (hook storms start 50-200 processes at once).
"""

from __future__ import annotations

import gc
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from reviewer_app.hitl import SQLHITLBackend


def load_hook_backend() -> type[SQLHITLBackend]:
    """The backend's class, with the adapter core and the timeline writer it is used with."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        from reviewer_app.hitl import SQLHITLBackend
        from reviewer_app.integrations.claude_code import host_watch, timeline  # noqa: F401 - loaded with it
        from reviewer_app.integrations.core import ReviewClient  # noqa: F401 - loaded with it

        return SQLHITLBackend
    finally:
        if enabled:
            gc.enable()
