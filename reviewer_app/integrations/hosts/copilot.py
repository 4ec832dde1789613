"""GitHub Copilot CLI's ``preToolUse`` hook (``~/.copilot/hooks/*.json``, ``$COPILOT_HOME``).

The event: ``{timestamp, cwd, toolName, toolArgs}`` (``toolArgs`` a JSON object, or its JSON text), with
``sessionId`` where the CLI sends one. The answer: ``permissionDecision`` allow / deny / ask with
``permissionDecisionReason``, and ``modifiedArgs`` (the arguments the tool runs with) on an allow, so edits work.
Copilot does not pass the reason of an "ask" the user then declines on to the model (github/copilot-cli#2647):
Reviewer answers allow or deny itself and uses ask only when it cannot decide.

Without a session id in the event, the session is the working directory (one run per project).
"""

from __future__ import annotations

from reviewer_app.integrations.claude_code.events import Host
from reviewer_app.integrations.hosts.profile import HostProfile, tables_of

COPILOT = HostProfile(Host.COPILOT, **tables_of(Host.COPILOT))
