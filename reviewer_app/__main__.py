"""``python -m reviewer_app``: the same as the ``reviewer-app`` command."""

import sys

if __name__ == "__main__":
    if sys.argv[1:2] == ["hook"]:  # agent hooks answer every tool call: skip the CLI's imports
        from reviewer_app.integrations.claude_code.command import main as hook_main

        raise SystemExit(hook_main(sys.argv[2:]))
    from reviewer_app.cli import main

    raise SystemExit(main())
