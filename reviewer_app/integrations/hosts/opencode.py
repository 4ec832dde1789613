"""OpenCode, through a small plugin (:mod:`.install` writes it) whose ``tool.execute.before`` runs the hook.

The plugin sends ``{hook_event_name: "tool.execute.before", session_id, call_id, tool, args, cwd}`` and reads
``{decision, reason, args?}``: allow runs the call (with ``args`` replacing its arguments after an edit), anything
else throws, and OpenCode hands the error's text (the reason) to the model. The plugin treats a failed or silent
hook as a deny: OpenCode has no prompt of its own to fall back to from this event.
"""

from __future__ import annotations

from reviewer_app.integrations.claude_code.events import Host
from reviewer_app.integrations.hosts.profile import HostProfile, tables_of

OPENCODE = HostProfile(Host.OPENCODE, **tables_of(Host.OPENCODE))
