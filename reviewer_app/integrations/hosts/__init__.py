"""Every coding agent's permission hook on one core: a small profile per host (:mod:`.profile`).

:mod:`.registry` maps a :class:`~reviewer_app.integrations.claude_code.events.Host` to its profile: the
Claude-format hosts (Claude Code, Codex, Qwen Code, Factory) in :mod:`.claude_format`, and :mod:`.gemini`,
:mod:`.copilot`, :mod:`.cursor`, :mod:`.opencode`. :mod:`.install` merges each into its host's settings.
Nothing is imported here, so the fast path loads only what it uses.
"""
