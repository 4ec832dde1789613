"""Where each tool keeps its command or path, decided on the operator's side."""

from __future__ import annotations

import pytest

from reviewer_app.domain.toolcall import (
    ToolCall,
    command_of,
    is_file_tool,
    is_mcp_tool,
    is_shell_tool,
    mcp_parts,
    path_of,
)


@pytest.mark.parametrize(
    ("tool", "arguments", "command"),
    [
        ("run_shell", {"command": "git status"}, "git status"),
        ("Bash", {"command": "ls", "description": "list"}, "ls"),
        ("shell", {"command": ["bash", "-lc", "git status; ls"]}, "git status; ls"),
        ("shell", {"command": ["git", "commit", "-m", "a message"]}, "git commit -m 'a message'"),
        ("exec_command", {"cmd": "npm test"}, "npm test"),
        ("exec_command", {"command": "npm test"}, "npm test"),
        ("exec_command", {"cmd": "rm -rf /", "command": "ls"}, None),  # which one runs is not ours to guess
        ("shell", {"command": ["bash", 3]}, None),
        ("shell", {"command": []}, None),
        ("Bash", {"command": 42}, None),
        ("Bash", {}, None),
        ("Bash", "ls", None),
        ("write_file", {"command": "ls"}, None),
        ("mcp__term__shell", {"command": "ls"}, None),
    ],
)
def test_command_of(tool: str, arguments: object, command: str | None) -> None:
    assert command_of(tool, arguments) == command


def test_paths_and_families() -> None:
    assert path_of("write_file", {"path": "a.txt"}) == "a.txt"
    assert path_of("Write", {"file_path": "/w/a.txt", "path": "ignored"}) == "/w/a.txt"
    assert path_of("NotebookEdit", {"notebook_path": "n.ipynb"}) == "n.ipynb"
    assert path_of("Write", {"file_path": 3}) is None
    assert path_of("Bash", {"file_path": "x"}) is None
    assert is_shell_tool("Bash") and not is_shell_tool("mcp__x__bash") and not is_shell_tool("BASH")
    assert is_file_tool("Edit") and not is_file_tool("Bash")
    assert mcp_parts("mcp__github__create_issue") == ("github", "create_issue")
    assert mcp_parts("mcp__github") is None and mcp_parts("mcp____x") is None and not is_mcp_tool("github")
    call = ToolCall("Bash", {"command": "ls"}, cwd="/w")
    assert call.command == "ls" and call.path is None
