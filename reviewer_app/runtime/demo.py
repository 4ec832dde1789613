"""The built-in demo agent's script: a short run that shows every kind of request without any configuration."""

from __future__ import annotations

from typing import Any

DEMO_SYSTEM_PROMPT = "You are a demo agent. You tidy up a small workspace and ask before doing anything risky."


def demo_script() -> list[dict[str, Any]]:
    """A fresh copy each call: look around, write a file, run a command, ask a question, finish."""
    return [
        {
            "thinking": "The operator wants the workspace tidied. First I look at what is there.",
            "text": "Let me look at the workspace first.",
            "tool_calls": [{"name": "list_dir", "args": {}}],
        },
        {
            "thinking": "Nothing important yet. A notes file will record what I do.",
            "text": "I'll write a notes file describing the plan.",
            "tool_calls": [
                {
                    "name": "write_file",
                    "args": {
                        "path": "NOTES.md",
                        "content": "# Notes\n\n- looked at the workspace\n- wrote this file\n",
                    },
                }
            ],
        },
        {
            "text": "Now I'll check the result from a shell.",
            "tool_calls": [{"name": "run_shell", "args": {"command": "ls -la && wc -l NOTES.md"}}],
        },
        {
            "text": "One question before I finish.",
            "tool_calls": [
                {
                    "name": "ask_user",
                    "args": {"question": "Should I also create a README?", "options": ["yes", "no"]},
                }
            ],
        },
    ]


def self_test_script() -> list[dict[str, Any]]:
    """The ``--self-test`` run: one gated write, then done."""
    return [
        {
            "text": "Writing the self-test file.",
            "tool_calls": [{"name": "write_file", "args": {"path": "self-test.txt", "content": "approved\n"}}],
        }
    ]
