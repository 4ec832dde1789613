"""Which profile answers for which host; each host's module is imported only when its hook runs."""

from __future__ import annotations

from importlib import import_module

from reviewer_app.integrations.claude_code.events import Host
from reviewer_app.integrations.hosts.profile import HostProfile

_WHERE = {
    Host.CLAUDE_CODE: ("claude_format", "CLAUDE_CODE"),
    Host.CODEX: ("claude_format", "CODEX"),
    Host.QWEN: ("claude_format", "QWEN"),
    Host.FACTORY: ("claude_format", "FACTORY"),
    Host.GEMINI: ("gemini", "GEMINI"),
    Host.COPILOT: ("copilot", "COPILOT"),
    Host.CURSOR: ("cursor", "CURSOR"),
    Host.OPENCODE: ("opencode", "OPENCODE"),
}


def profile_for(host: Host) -> HostProfile:
    module, name = _WHERE[host]
    profile = getattr(import_module(f"reviewer_app.integrations.hosts.{module}"), name)
    assert isinstance(profile, HostProfile)
    return profile
