"""``python -m reviewer_app``: the same as the ``reviewer-app`` command."""

import sys

if __name__ == "__main__":
    if sys.argv[1:2] == ["hook"]:  # agent hooks answer every tool call: skip the CLI's imports
        try:
            from reviewer_app.integrations.claude_code.command import main as hook_main
        except BaseException as exc:  # a broken install must not crash into "proceed": deny (exit 2) or ask
            sys.stderr.write(f"reviewer-app hook: cannot start: {type(exc).__name__}: {exc}\n")
            raise SystemExit(2 if "deny" in sys.argv[sys.argv.index("--on-error") + 1 :][:1] else 0) from None
        raise SystemExit(hook_main(sys.argv[2:]))
    from reviewer_app.cli import main

    raise SystemExit(main())
