"""Which profile answers for which host; each host's module is imported only when its hook runs (plain imports:
``importlib`` would cost the fast path more than the module it loads)."""

from __future__ import annotations

from reviewer_app.integrations.claude_code.events import Host
from reviewer_app.integrations.hosts.profile import HostProfile


def profile_for(host: Host) -> HostProfile:
    if host is Host.GEMINI:
        from reviewer_app.integrations.hosts.gemini import GEMINI

        return GEMINI
    if host is Host.COPILOT:
        from reviewer_app.integrations.hosts.copilot import COPILOT

        return COPILOT
    if host is Host.CURSOR:
        from reviewer_app.integrations.hosts.cursor import CURSOR

        return CURSOR
    if host is Host.OPENCODE:
        from reviewer_app.integrations.hosts.opencode import OPENCODE

        return OPENCODE
    from reviewer_app.integrations.hosts.claude_format import CLAUDE_FORMAT

    return CLAUDE_FORMAT[host]
