"""``--demo``: scripted runs that at once raise one request of each kind, through the real runtime.

Each run gets its own session; two workspaces are seeded with files first so the
write_file requests show a real diff rather than a new file.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

DEMO_AGENT = "demo"

CONFIG_BEFORE = '''"""Service settings."""

DATABASE_URL = "sqlite:///service.db"
POOL_SIZE = 5
DEBUG = True
'''

CONFIG_AFTER = '''"""Service settings."""

import os

DATABASE_URL = os.environ.get("DATABASE_URL", "sqlite:///service.db")
POOL_SIZE = int(os.environ.get("POOL_SIZE", "10"))
DEBUG = False
'''

README_BEFORE = "# Notes\n\n- started tidying the workspace\n"


def demo_runs() -> list[dict[str, Any]]:
    """Prompt, seeded files and script of each demo run, oldest first."""
    return [
        {
            "prompt": "Keep a short notes file of what you change.",
            "files": {"NOTES.md": README_BEFORE},
            "script": [
                {
                    "thinking": "There is already a NOTES.md; I will extend it rather than replace what matters.",
                    "text": "I'll update the notes file with today's plan.",
                    "tool_calls": [
                        {
                            "name": "write_file",
                            "args": {
                                "path": "NOTES.md",
                                "content": "# Notes\n\n- tidied the workspace\n- moved settings to the environment\n"
                                "- next: run the tests\n",
                            },
                        }
                    ],
                }
            ],
        },
        {
            "prompt": "Check that the test suite passes.",
            "files": {},
            "script": [
                {
                    "text": "Running the tests before anything else.",
                    "tool_calls": [{"name": "run_shell", "args": {"command": "python -m pytest -q tests/"}}],
                }
            ],
        },
        {
            "prompt": "Set the service up for production.",
            "files": {},
            "script": [
                {
                    "thinking": "Production settings depend on which database they run; I should ask.",
                    "text": "One question before I change any settings.",
                    "tool_calls": [
                        {
                            "name": "ask_user",
                            "args": {
                                "question": "Which database should the service use in production?",
                                "options": ["PostgreSQL", "SQLite", "keep the current setting"],
                            },
                        }
                    ],
                }
            ],
        },
        {
            "prompt": "Read the settings from the environment and check the code still compiles.",
            "files": {"config.py": CONFIG_BEFORE},
            "script": [
                {
                    "thinking": "Two steps: rewrite config.py to read the environment, then byte-compile it.",
                    "text": "I'll update config.py and compile it in the same step.",
                    "tool_calls": [
                        {"name": "write_file", "args": {"path": "config.py", "content": CONFIG_AFTER}},
                        {"name": "run_shell", "args": {"command": "python -m py_compile config.py && echo ok"}},
                    ],
                }
            ],
        },
    ]


async def start_demo_runs(runtime: Any, workspaces_dir: Path) -> list[str]:
    """Start the demo runs (the runtime must be started); returns their invocation ids."""
    started = []
    for spec in demo_runs():
        session_id = f"ses_demo_{uuid.uuid4().hex[:10]}"
        workspace = Path(workspaces_dir) / session_id  # the runtime's default workspace for a new session
        workspace.mkdir(parents=True, exist_ok=True)
        for name, text in spec["files"].items():
            (workspace / name).write_text(text, encoding="utf-8")
        started.append(
            await runtime.start_run(DEMO_AGENT, spec["prompt"], session_id=session_id, script=spec["script"])
        )
    return started
