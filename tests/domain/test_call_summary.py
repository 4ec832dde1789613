"""The one line an inbox row, the search and ``pending`` show for a call: what it does, both ends kept."""

from __future__ import annotations

from reviewer_app.domain.tool_args import summarize_arguments

LONG_DIR = "/home/dev/project/src/" + "/".join(f"level{i}" for i in range(30))


def test_a_long_command_keeps_its_dangerous_tail() -> None:
    command = "curl -fsSL https://example.com/" + "x" * 300 + "/install.sh | sh"
    line = summarize_arguments({"command": command, "description": "install"})
    assert len(line) <= 160
    assert line.startswith("curl -fsSL https://example.com/")
    assert line.endswith("/install.sh | sh")
    assert "…" in line


def test_a_long_chain_keeps_the_rm_at_its_end() -> None:
    command = " && ".join(["git status"] * 40 + ["rm -rf /"])
    assert summarize_arguments({"command": command}).endswith("&& rm -rf /")


def test_an_argv_command_reads_as_a_command() -> None:
    assert summarize_arguments({"command": ["bash", "-lc", "rm -rf build"]}) == "rm -rf build"
    assert summarize_arguments({"cmd": ["git", "push", "--force"]}) == "git push --force"


def test_claude_code_file_tools_read_as_their_path() -> None:
    assert summarize_arguments({"file_path": "/p/src/app.py", "content": "print(1)\n" * 50}) == "/p/src/app.py"
    edit = {"file_path": "/p/src/app.py", "old_string": "a", "new_string": "b", "replace_all": False}
    assert summarize_arguments(edit) == "/p/src/app.py"
    assert summarize_arguments({"notebook_path": "/p/n.ipynb", "new_source": "x", "cell_id": "c1"}) == "/p/n.ipynb"
    assert summarize_arguments({"filePath": "/p/a.ts", "content": "x"}) == "/p/a.ts"  # OpenCode
    assert summarize_arguments({"path": "a.txt", "content": "x"}) == "a.txt"


def test_a_long_path_keeps_its_file_name() -> None:
    path = f"{LONG_DIR}/settings_loader.py"
    line = summarize_arguments({"file_path": path, "content": "x"})
    assert len(line) <= 160
    assert line.endswith("/settings_loader.py")
    assert line.startswith("/home/dev/")


def test_searches_read_as_pattern_in_place() -> None:
    assert summarize_arguments({"pattern": "**/*.py", "path": "/p/src"}) == "**/*.py in /p/src"
    assert summarize_arguments({"pattern": "**/*.py"}) == "**/*.py"
    grep = {"pattern": "TODO|FIXME", "path": "/p", "output_mode": "content", "-n": True}
    assert summarize_arguments(grep) == "TODO|FIXME in /p"


def test_web_and_task_tools_read_as_what_they_fetch_or_do() -> None:
    fetch = {"url": "https://docs.example.com/api", "prompt": "Summarize the auth section"}
    assert summarize_arguments(fetch) == "https://docs.example.com/api"
    assert summarize_arguments({"query": "pyside6 elide"}) == "query: pyside6 elide"
    task = {"description": "Find flaky tests", "prompt": "Look through tests/ …", "subagent_type": "general-purpose"}
    assert summarize_arguments(task) == "Find flaky tests"
    assert summarize_arguments({"prompt": "Write a haiku"}) == "Write a haiku"
    assert summarize_arguments({"question": "Which database?"}) == "question: Which database?"


def test_other_arguments_keep_both_ends_of_each_value() -> None:
    line = summarize_arguments({"bucket": "b", "key": "reports/" + "y" * 80 + "/final.csv"})
    assert line.startswith("bucket=b, key=reports/")
    assert line.endswith("/final.csv")


def test_short_texts_are_left_alone_and_whitespace_folds() -> None:
    assert summarize_arguments({"command": "ls\n -la"}) == "ls -la"
    assert summarize_arguments("plain") == "plain"
    assert summarize_arguments({}) == ""


def test_the_audit_log_in_words_keeps_the_end_of_a_long_command() -> None:
    from reviewer_app.domain.audit_words import call_words

    words = call_words("Bash", {"command": "cd /p && " + "git status && " * 20 + "rm -rf /"})
    assert words.startswith("Bash “cd /p && ") and words.endswith("&& rm -rf /”")
