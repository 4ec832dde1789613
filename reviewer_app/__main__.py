"""``python -m reviewer_app``, the ``reviewer-app`` console script and the frozen launcher: one entry.

An agent's hook (``… hook <host>``) answers every tool call in a new process, so it goes straight to the hook's
lean path (``integrations/claude_code/lean.py``: a call the session's exact waiver settles, a session event, a
waiting request and its wait (``lean_wait.py``), with the standard library alone), then to the hook's own command
with the stdin bytes the lean path read;
a waiting hook's watchdog (``… hook _watch``) goes straight to its own module (``watchdog.main``);
everything else is the CLI.
"""

import sys


def main() -> int:
    if sys.argv[1:3] == ["hook", "_watch"]:  # a waiting hook's watchdog: its own reading of its own command line
        from reviewer_app.integrations.claude_code.watchdog import main as watch_main

        code = watch_main(sys.argv[3:])
        if code is not None:
            return code
    if sys.argv[1:2] == ["hook"]:  # agent hooks answer every tool call: skip the CLI's imports
        payload = handover = None
        try:
            from reviewer_app.integrations.claude_code.lean import run as run_lean

            payload, handover = run_lean(sys.argv[2:])  # returns only when the lean path did not answer
        except Exception as exc:  # the full command decides (stdin read and lost: it answers its fallback)
            sys.stderr.write(f"reviewer-app hook: lean path: {type(exc).__name__}: {exc}\n")
        try:
            from reviewer_app.integrations.claude_code.command import main as hook_main
        except BaseException as exc:  # a broken install must not crash into "proceed": deny (exit 2) or ask
            sys.stderr.write(f"reviewer-app hook: cannot start: {type(exc).__name__}: {exc}\n")
            return 2 if on_error_answer(sys.argv) == "deny" else 0
        return hook_main(sys.argv[2:], payload=payload, handover=handover)
    from reviewer_app.cli import main as cli_main

    return cli_main()


def on_error_answer(argv: list[str]) -> str:
    """The hook's ``--on-error`` answer read without argparse (which may be what failed to load)."""
    for index, word in enumerate(argv):
        if word.startswith("--on-error="):
            return word.partition("=")[2]
        if word == "--on-error" and index + 1 < len(argv):
            return argv[index + 1]
    return "ask"


if __name__ == "__main__":
    raise SystemExit(main())
