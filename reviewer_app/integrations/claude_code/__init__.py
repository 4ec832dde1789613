"""Claude Code (and Codex) ask Reviewer through their permission hooks.

``reviewer-app hook claude-code`` is a command hook: one event on stdin, one answer on stdout. Modules:
:mod:`.events` reads the event and writes the answer (standard library only), :mod:`.fast` settles calls a rule
allows with ``sqlite3`` alone (PreToolUse fires on every call: no ORM on that path), :mod:`.hook` runs the whole
thing and waits for a reviewer on the full backend, :mod:`.watchdog` abandons a request whose hook was killed,
:mod:`.install` merges the hook into Claude Code's ``settings.json`` and Codex's ``hooks.json``, and
:mod:`.transcript` turns Claude's transcript into the run's timeline.

Nothing is imported here, so the fast path loads only what it uses.
"""
