"""Differential test of the shell engine against a real ``bash``.

The engine claims, for every command it lets a rule or waiver settle, "this runs only these programs with these
arguments" (``shell.invocations``). Here bash itself is the reference: each command runs under ``bash -c`` in a
sandbox directory whose PATH holds only recording stubs (each appends its argv to a log and does nothing else;
the wrappers among them record, then run the real wrapper, which finds the next stub on PATH). Whenever bash
ran a program, or arguments, the engine did not claim, no allow rule (bare, prefix or exact) and no session
waiver may have settled the command.

A fixed table (the issue's attacks and their spellings) and hypothesis-generated commands (quoting, variables,
wrappers, options, separators, substitutions) both run; CI runs the table plus ``GENERATED_CASES`` examples.

The deny side is checked the same way: ``GENERATED_CASES // 2`` spellings of ``git push`` (quoting, variables,
global options, wrappers, separators, subshells, substitutions, ``xargs``, ``eval``, ``bash -c``); whenever bash
really ran ``git … push``, ``deny Bash(git push:*)`` must deny the command.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reviewer_app.domain.rules import Rule, RuleError, ToolCall, evaluate
from reviewer_app.domain.shell import invocations, parse_command
from reviewer_app.domain.shell_effects import command_effects, deny_forms
from reviewer_app.domain.shell_scopes import CommandScope
from reviewer_app.domain.waivers import SessionRule

GENERATED_CASES = 500
# Derandomized (the same examples on every run, no example database): each runs bash, so no per-example deadline.
BASH_RUNS: dict[str, Any] = {
    "deadline": None,
    "derandomize": True,
    "database": None,
    "suppress_health_check": [HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
}
BASH = shutil.which("bash") or "/bin/bash"
STUBS = ("rm", "git", "touch", "id", "ls", "cat", "grep", "head", "npm", "kubectl", "find", "sed")
PASS_THROUGH = ("env", "nice", "timeout", "nohup", "xargs", "sh", "bash", "stdbuf", "flock")
FIELD, RECORD = "\x1f", "\x1e"

pytestmark = pytest.mark.skipif(not all(shutil.which(p) for p in (BASH, *PASS_THROUGH)), reason="needs bash tools")


@dataclass
class Sandbox:
    root: Path
    log: Path

    def run(self, command: str) -> list[tuple[str, ...]]:
        """The argv of every program bash started for ``command`` (stubs record theirs)."""
        self.log.write_text("")
        env = {"PATH": str(self.root / "bin"), "STUB_LOG": str(self.log), "HOME": str(self.root / "home")}
        subprocess.run(
            [BASH, "--norc", "--noprofile", "-c", command],
            cwd=self.root / "work",
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            timeout=20,
            check=False,
        )
        records = self.log.read_text(errors="replace").split(RECORD)
        return [tuple(record.split(FIELD)) for record in records if record]


def _stub(path: Path, real: str | None) -> None:
    # One write per record (O_APPEND), so programs of a pipeline running at once never interleave theirs.
    record = 'r="${0##*/}"; for a in "$@"; do r+=$\'\\x1f\'"$a"; done; printf "%s\\x1e" "$r" >> "$STUB_LOG"'
    tail = f'exec {real} "$@"' if real else "exit 0"
    path.write_text(f"#!{BASH}\n{record}\n{tail}\n")
    path.chmod(0o755)


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory: pytest.TempPathFactory) -> Sandbox:
    root = tmp_path_factory.mktemp("shell-sandbox")
    for folder in ("bin", "work", "home"):
        (root / folder).mkdir()
    for name in STUBS:
        _stub(root / "bin" / name, None)
    for name in PASS_THROUGH:
        _stub(root / "bin" / name, shutil.which(name))
    (root / "work" / "a.txt").write_text("x\n")
    return Sandbox(root, root / "log")


def _claims(command: str) -> set[tuple[str, ...]]:
    """What the engine says may run: each invocation, and each reading a deny rule compares (wrappers peeled)."""
    return {form for argv in invocations(parse_command(command)) for form in deny_forms(argv)}


def _rule(pattern: str) -> Rule | None:
    try:
        return Rule.create("allow", pattern, now=0)
    except RuleError:
        return None  # a pattern the engine refuses settles nothing


def _settled_by(command: str) -> list[tuple[str, tuple[str, ...] | None]]:
    """The automatic decisions that would settle ``command``: (what, the prefix words it names or None)."""
    call = ToolCall("Bash", {"command": command}, cwd="/sandbox/work")
    parsed = parse_command(command)
    first = parsed.commands[0].argv[:1] if parsed.commands and parsed.commands[0].argv else ()
    candidates: list[tuple[Rule | None, tuple[str, ...] | None]] = [(_rule("Bash"), None)]
    if first and first[0] and not any(char in first[0] for char in "():"):
        candidates.append((_rule(f"Bash({first[0]}:*)"), first))
    if "\n" not in command and ")" not in command:
        candidates.append((_rule(f"Bash({command})"), None))
    settled = [(rule.pattern, words) for rule, words in candidates if rule and evaluate([rule], call, 1)]
    waiver = SessionRule("Bash", CommandScope.exact(command)) if parsed.waivable and parsed.commands else None
    if waiver is not None and waiver.matches("Bash", {"command": command}):
        settled.append(("session waiver", None))
    return settled


def check(sandbox: Sandbox, command: str) -> None:
    settled = _settled_by(command)
    if not settled:
        return  # asked: a human reads it
    ran = sandbox.run(command)
    claims = _claims(command)
    literal = command_effects(command).literal
    programs = {claim[0] for claim in claims}
    for argv in ran:
        assert argv[0] in programs, f"{command!r}: bash ran {argv} unclaimed, yet settled by {settled}"
        if literal:
            assert argv in claims, f"{command!r}: bash ran {argv}, engine claimed {claims}; settled by {settled}"
        for what, prefix in settled:
            if prefix is not None:
                assert argv[: len(prefix)] == prefix, f"{command!r}: {what} settled it but bash ran {argv}"


TABLE = [
    "$'\\x72m' -rf x",
    '$"rm" x',
    "X=rm; $X -rf x",
    "X=rm; ${X} x",
    "{rm,x}",
    "r''m x",
    "r\\m x",
    "'rm' x",
    "env -S 'rm x'",
    "env A=B rm x",
    "flock l rm x",
    "nice -n 5 rm x",
    "timeout 5 rm x",
    "nohup rm x",
    "stdbuf -o0 rm x",
    "xargs rm <<< x",
    "sh -c 'rm x'",
    "bash -c 'rm x'",
    "eval 'rm x'",
    "command rm x",
    "builtin eval rm x",
    "exec rm x",
    "ls; rm x",
    "ls && rm x",
    "ls || rm x",
    "ls | rm x",
    "ls & rm x",
    "(rm x)",
    "{ rm x; }",
    "echo $(rm x)",
    "echo `rm x`",
    "cat <(rm x)",
    "f(){ rm x; }; f",
    "for p in rm; do $p x; done",
    "ls $(printf rm) x",
    "git -C . push",
    "git -c k=v push",
    "git status",
    "ls -la",
    "cat a.txt | grep x | head -1",
    "ls *.txt",
    "ls ~",
    "ls {a,b}.txt",
    "touch 'a b' \"c d\"",
    "ls -- -x",
    "ls 2>/dev/null",
    "id",
    "find . -name '*.txt' -exec rm {} +",
    "sed -n '1e rm x' a.txt",
    "npm --prefix x publish",
    "kubectl -n ns delete pod x",
    "PATH=/tmp rm x",
    "HOME=/tmp git status",
    "alias ls=rm; ls x",
    "cat <<EOF\n$(rm x)\nEOF",
    "rm x\nls",
]


@pytest.mark.parametrize("command", TABLE)
def test_the_table_against_bash(sandbox: Sandbox, command: str) -> None:
    check(sandbox, command)


def test_the_sandbox_really_records(sandbox: Sandbox) -> None:
    assert sandbox.run("X=rm; $X -rf x") == [("rm", "-rf", "x")]
    assert sandbox.run("env -S 'rm x'") == [("env", "-S", "rm x"), ("rm", "x")]
    assert sandbox.run("$'\\x72m' -rf x") == [("rm", "-rf", "x")]


# -- generated commands --------------------------------------------------------------------------------------

PROGRAM_SPELLINGS = st.sampled_from(
    [
        "rm", "ls", "git", "cat", "id", "touch", "'rm'", '"ls"', "r''m", "\\rm", "$'\\x72m'", "$'ls'", '$"id"',
        "$P", "${P}", "{rm,x}", "r?", "command rm", "env rm", "env A=1 ls", "nice rm", "nice -n 3 ls",
        "timeout 5 rm", "nohup id", "stdbuf -o0 rm", "flock l rm", "exec rm", "eval rm", "builtin eval ls",
        "sh -c rm", "bash -c 'rm x'", "xargs rm <<< y", "echo", "true",
    ]
)  # fmt: skip
ARGUMENTS = st.sampled_from(
    [
        "x", "-f", "-rf", "'a b'", '"c d"', "$HOME", '"$P"', "*", "*.txt", "~", "{a,b}", "$(id)", "`id`",
        "--", "push", "-C .", "-c k=v", "status", "a.txt", "$'\\x2dr'", "\\$P", "2>/dev/null", "<a.txt",
    ]
)  # fmt: skip
SEPARATORS = st.sampled_from(["; ", " && ", " || ", " | ", " & ", "\n"])
PRELUDES = st.sampled_from(["", "P=rm; ", "P=ls; ", "export P=id; ", "A=1 "])
WRAPS = st.sampled_from(["{}", "({})", "{{ {}; }}", "echo $({})", "{} 2>&1"])


@st.composite
def commands(draw: st.DrawFn) -> str:
    parts = []
    for _ in range(draw(st.integers(1, 3))):
        words = [draw(PROGRAM_SPELLINGS), *draw(st.lists(ARGUMENTS, max_size=3))]
        parts.append(" ".join(words))
    text = parts[0]
    for part in parts[1:]:
        text += draw(SEPARATORS) + part
    return draw(PRELUDES) + draw(WRAPS).format(text)


@settings(max_examples=GENERATED_CASES, **BASH_RUNS)
@given(command=commands())
def test_generated_commands_against_bash(sandbox: Sandbox, command: str) -> None:
    check(sandbox, command)


def test_stubs_are_not_real_programs(sandbox: Sandbox) -> None:
    assert os.access(sandbox.root / "bin" / "rm", os.X_OK)
    assert (sandbox.root / "bin" / "rm").read_text().rstrip().endswith("exit 0")


# -- deny rules against bash ---------------------------------------------------------------------------------

_GIT_OPTIONS_WITH_VALUE = ("-C", "-c", "--git-dir", "--work-tree", "--namespace", "--config-env", "--super-prefix")


def ran_git_push(ran: list[tuple[str, ...]]) -> bool:
    """Did bash run ``git … push`` (git's own reading of its global options)?"""
    for argv in ran:
        if argv[0] != "git":
            continue
        index = 1
        while index < len(argv) and argv[index].startswith("-"):
            index += 2 if argv[index] in _GIT_OPTIONS_WITH_VALUE else 1
        if index < len(argv) and argv[index] == "push":
            return True
    return False


GIT_SPELLINGS = st.sampled_from(["git", "'git'", "g\\it", "$'git'", '"g"it', "$G", "${G}"])
GIT_GLOBALS = st.sampled_from(["", "-C .", "-c k=v", "--git-dir=.git", "--no-pager", "-C . -c a=b", "--work-tree=."])
PUSH_SPELLINGS = st.sampled_from(["push", "'push'", "p\\ush", "$S", "pu''sh"])
DENY_WRAPPERS = st.sampled_from(
    ["", "env A=B ", "nice -n 5 ", "timeout 5 ", "nohup ", "command ", "stdbuf -o0 ", "flock l ", "exec "]
)
DENY_CONTEXTS = st.sampled_from(
    ["{}", "ls; {}", "ls && {}", "ls || {}", "({})", "{{ {}; }}", "echo $({})", "{} | cat", "cat a.txt | {}",
     "echo | xargs {}", "eval '{}'", "bash -c '{}'"]
)  # fmt: skip


@st.composite
def git_push_spellings(draw: st.DrawFn) -> str:
    words = [draw(GIT_SPELLINGS), draw(GIT_GLOBALS), draw(PUSH_SPELLINGS), draw(st.sampled_from(["", "origin"]))]
    inner = draw(DENY_WRAPPERS) + " ".join(word for word in words if word)
    if "'" in inner:
        context = draw(st.sampled_from(["{}", "ls; {}", "({})", "echo $({})", "{} | cat"]))
    else:
        context = draw(DENY_CONTEXTS)
    return "G=git; S=push; " + context.format(inner)


@settings(max_examples=GENERATED_CASES // 2, **BASH_RUNS)
@given(command=git_push_spellings())
def test_a_deny_rule_catches_every_spelling_bash_runs(sandbox: Sandbox, command: str) -> None:
    if not ran_git_push(sandbox.run(command)):
        return
    call = ToolCall("Bash", {"command": command}, cwd="/sandbox/work")
    found = evaluate([Rule.create("deny", "Bash(git push:*)", now=0)], call, 1)
    assert found is not None and found.effect == "deny", f"bash ran git push for {command!r}, the rule did not deny"
