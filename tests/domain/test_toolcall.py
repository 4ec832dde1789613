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


@pytest.mark.parametrize(
    ("tool", "arguments", "command"),
    [
        ("run_shell_command", {"command": "git status", "description": "status"}, "git status"),  # Gemini, Qwen
        ("Execute", {"command": "make", "riskLevel": "low"}, "make"),  # Factory
        ("Shell", {"command": "ls", "cwd": "/w"}, "ls"),  # Cursor's shell event
        ("bash", {"command": "npm test"}, "npm test"),  # Copilot, OpenCode
    ],
)
def test_other_hosts_shells(tool: str, arguments: dict[str, object], command: str) -> None:
    assert is_shell_tool(tool) and command_of(tool, arguments) == command


def test_other_hosts_file_tools_and_ambiguous_paths() -> None:
    from reviewer_app.domain.toolcall import NETWORK_TOOLS, WRITING_FILE_TOOLS

    assert path_of("write_file", {"file_path": "notes.txt", "content": "x"}) == "notes.txt"  # Gemini, Qwen
    assert path_of("replace", {"file_path": "a.py", "old_string": "a", "new_string": "b"}) == "a.py"
    assert path_of("edit", {"path": "a.py", "old_str": "a"}) == "a.py"  # Copilot
    assert path_of("edit", {"filePath": "a.py"}) == "a.py"  # OpenCode
    assert path_of("create", {"path": "n.txt", "file_text": ""}) == "n.txt"
    assert path_of("write", {"filePath": "n.txt"}) == "n.txt" and path_of("read", {"filePath": "r.txt"}) == "r.txt"
    # Two keys naming different files: the host reads one of them, which is not ours to guess.
    assert path_of("edit", {"file_path": "/w/safe.txt", "path": "/etc/passwd"}) is None
    assert path_of("edit", {"file_path": "/w/a.txt", "path": "/w/a.txt"}) == "/w/a.txt"
    assert {"replace", "edit", "create", "Create", "write"} <= WRITING_FILE_TOOLS
    assert {"webfetch", "FetchUrl", "web_fetch"} <= NETWORK_TOOLS
    assert "read_file" not in WRITING_FILE_TOOLS and "view" not in WRITING_FILE_TOOLS
