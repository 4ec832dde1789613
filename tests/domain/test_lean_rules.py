"""The lean rules (the hook's standard-library verdict on a plain shell command) held to the rules engine.

What must hold: a verdict the lean rules give is the engine's (``rules.evaluate`` through ``Settlement.by_rule``:
same effect, same rule, same words), "no rule applies" only where the engine finds none, and "unsure" everywhere
else (the hook then asks the engine). Plus what the lean reading of a plain command rests on: the parser reads it
as one simple command whose argv is its fields, and the shell-effects module finds nothing in it unless its
program is one the lean rules hand off.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reviewer_app.domain import shell, shell_effects, shell_tools
from reviewer_app.domain.lean_rules import UNSURE, rules_verdict
from reviewer_app.domain.lean_settlement import RULE_COLUMNS, may_concern
from reviewer_app.domain.plain_shell import SPECIAL_PROGRAMS, effect_is_argv, only_reading, plain_command, program_name
from reviewer_app.domain.rule_outcome import rule_from_row
from reviewer_app.domain.rules import ToolCall, evaluate
from reviewer_app.domain.settlement import Settlement
from reviewer_app.domain.shell import parse_command

NOW = 10_000.0
AGENT, SESSION = "claude-code", "S1"
WORDS = (
    "echo", "git", "push", "status", "npm", "run", "test", "rm", "-rf", "build", "/usr/bin/git", "/bin/rm", "sudo",
    "env", "command", "exec", "nice", "sh", "-c", "ls", "-la", "-C", ".", "origin", "main", "--force", "make",
    "deploy", "A=b", "PATH=/tmp", "x:y", "a,b", "@x", "%1", "+x", "-", "--", "kubectl", "-n", "delete", "find",
    "/tmp/x", "time", "if", "do", "xargs", "python3", "git-push", "rmdir", "echo.sh", "status", "log", "diff",
    "--ext-diff", "--textconv", "--output=x", "config", "rebase", "-i", "-s", "--no-pager", "-x", "--exec-path=/x",
)  # fmt: skip
HOSTILE = (
    "$(id)", "`id`", "'rm'", '"rm"', "\\rm", ";", "&&", "|", "&", "\n", "*", "?", "[a]", "~", "{a,b}", "#c", "!",
    "$HOME", "${X}", "<f", ">f", "2>&1", "(ls)", "ｅcho", "e\u0301cho", "\u00a0", "\t", "é", "rm\u200b",
)  # fmt: skip
GENERATED = settings(
    max_examples=1500,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)


def engine_verdict(rows: list[tuple[Any, ...]], arguments: dict[str, Any], agent: str, session: str) -> Any:
    """What the hook's full path decides from the same rows (``FastStore.policy_rules`` + ``hook_settlement``)."""
    rules = [rule for rule in (rule_from_row(dict(zip(RULE_COLUMNS, row, strict=True))) for row in rows) if rule]
    verdict = evaluate(rules, ToolCall("Bash", arguments, agent=agent, session_id=session, cwd="/tmp"), NOW)
    if verdict is None:
        return None
    settlement = Settlement.by_rule(verdict)
    return settlement.effect, verdict.rule.id, settlement.message


def lean_verdict(rows: list[tuple[Any, ...]], arguments: dict[str, Any], agent: str, session: str) -> Any:
    concerning = [row for row in rows if isinstance(row[2], str) and may_concern(row[2], "Bash")]
    if not concerning:
        return None  # the hook reads no rule then (the lean path's own test covers it)
    return rules_verdict("Bash", arguments, concerning, agent=agent, session_id=session)


def assert_agrees(rows: list[tuple[Any, ...]], arguments: dict[str, Any], agent: str = AGENT, session: str = SESSION):
    """The lean verdict is the engine's, or unsure; returns the lean verdict."""
    lean = lean_verdict(rows, arguments, agent, session)
    if lean != UNSURE:
        concerning = [row for row in rows if isinstance(row[2], str) and may_concern(row[2], "Bash")]
        assert lean == engine_verdict(concerning, arguments, agent, session), (rows, arguments, lean)
    return lean


def row(index: int, effect: str, pattern: str, scope: str = "global", note: str | None = None) -> tuple[Any, ...]:
    return (f"rule_{index}", effect, pattern, scope, None, note, 1_000.0 + index)


# -- what the lean reading rests on ---------------------------------------------------------------------------------
def test_special_programs_cover_every_program_the_shell_modules_judge() -> None:
    """A program the parser's modules know something about is handed to them; one added there fails here."""
    known = shell.EXEC_WRAPPERS | shell.INTERPRETERS | shell.SHELLS | shell_effects.WRAPPERS | shell_tools.TOOLS
    known |= shell_effects._SHELL_STATE | shell_effects._DECLARERS
    assert known <= SPECIAL_PROGRAMS, sorted(known - SPECIAL_PROGRAMS)


plain_word = st.sampled_from(WORDS) | st.text(alphabet="abcz09_./:@%+,=-", min_size=1, max_size=6)


@GENERATED
@given(st.lists(plain_word, min_size=1, max_size=6), st.sampled_from([" ", "  ", "   "]))
def test_a_plain_command_is_one_simple_command_of_its_fields(words: list[str], separator: str) -> None:
    command = separator.join(words)
    argv = plain_command(command)
    if argv is None:
        return
    parsed = parse_command(command)
    assert parsed.understood and parsed.waivable and not parsed.connectors, (command, parsed.problems)
    [simple] = parsed.commands
    assert simple.argv == tuple(argv) and not simple.assignments and not simple.redirections
    assert all(word.literal for word in simple.words)
    if effect_is_argv(argv):
        assert shell_effects.command_effects(command).plain, (command, shell_effects.command_effects(command))
    if only_reading(argv):
        assert shell_effects.readings(command) == ((program_name(argv[0]), *argv[1:]),)


@pytest.mark.parametrize("word", HOSTILE)
def test_a_command_with_anything_a_shell_reads_specially_is_not_plain(word: str) -> None:
    for command in (f"echo {word}", f"{word} echo", f"echo a{word}b"):
        assert plain_command(command) is None, command


# -- parity with the engine -----------------------------------------------------------------------------------------
specifier = st.lists(st.sampled_from(WORDS), min_size=1, max_size=3).map(" ".join)
pattern = st.one_of(
    st.just("Bash"),
    specifier.map(lambda text: f"Bash({text})"),
    specifier.map(lambda text: f"Bash({text}:*)"),
    specifier.map(lambda text: f"Bash( {text} :*)"),
    st.sampled_from(["Bash(*)", "Bash(echo x", "Bash()", "Bash(git 'push':*)", "Bash(ls $HOME)", "Write(src/**)"]),
    st.sampled_from(["mcp__github", "Bash (ls)", "Bash(sh -c 'ls')", "Bash(A=b ls)", "Bash(echo a; rm x)"]),
)
SCOPES = ("global", "global", "agent:claude-code", "agent:codex", "session:S1", "session:S2", " session: S1 ")
scope = st.sampled_from((*SCOPES, "bogus", "workspace:/tmp", "agent:", None))
rule_row = st.tuples(
    st.sampled_from(["allow", "allow", "deny", "ask", "forbid"]), pattern, scope, st.sampled_from([None, "", "why"])
)
command_word = st.sampled_from(WORDS * 4 + HOSTILE)  # mostly plain words: the cases the lean rules decide
command_text = st.lists(command_word, min_size=1, max_size=5).map(" ".join)


@GENERATED
@given(st.lists(rule_row, max_size=6), command_text, st.booleans())
def test_the_lean_verdict_is_the_engines_or_unsure(
    rules: list[tuple[str, str, str, str | None]], command: str, flagged: bool
) -> None:
    rows = [row(index, effect, text, scope, note) for index, (effect, text, scope, note) in enumerate(rules)]
    arguments: dict[str, Any] = {"command": command, "description": "x"}
    if flagged:
        arguments["run_in_background"] = True
    assert_agrees(rows, arguments)


@GENERATED
@given(st.lists(st.tuples(st.sampled_from(["allow", "deny", "ask"]), pattern), max_size=5), command_text)
def test_parity_where_the_command_is_what_a_rule_names(rules: list[tuple[str, str]], command: str) -> None:
    """Rules written for the very command (and its prefixes) beside the others: the cases that match."""
    words = command.split(" ")
    named = [("allow", f"Bash({command})"), ("deny", f"Bash({' '.join(words[:2])}:*)"), ("ask", f"Bash({words[0]})")]
    rows = [row(index, effect, text) for index, (effect, text) in enumerate([*rules, *named[: len(rules) % 4]])]
    assert_agrees(rows, {"command": command})


# -- each rule form, decided -----------------------------------------------------------------------------------------
BENCH_RULES = [row(0, "allow", "Bash(echo rules)"), row(1, "allow", "Bash(npm run test:*)")]
BENCH_RULES += [row(2, "deny", "Bash(git push:*)", note="never"), row(3, "ask", "Bash(make deploy)")]
GIT_RULES = [row(0, "allow", "Bash(git status)"), row(1, "deny", "Bash(git push:*)")]
DENY_LS, ALLOW_LS = "denied by rule rule_1: Bash(ls)", "allowed by rule rule_0: Bash(ls)"


@pytest.mark.parametrize(
    ("rows", "command", "wanted"),
    [
        (BENCH_RULES, "echo rules", ("allow", "rule_0", "allowed by rule rule_0: Bash(echo rules)")),
        (BENCH_RULES, "echo   rules", ("allow", "rule_0", "allowed by rule rule_0: Bash(echo rules)")),
        (BENCH_RULES, "git push origin", ("deny", "rule_2", "denied by rule rule_2: Bash(git push:*) (never)")),
        (BENCH_RULES, "make deploy", ("ask", "rule_3", "asked by rule rule_3: Bash(make deploy)")),
        (BENCH_RULES, "ls -la", None),  # no rule mentions it
        (BENCH_RULES, "echo other", None),
        (BENCH_RULES, "echo rules now", None),  # an exact rule is that command only (echo is an ordinary program)
        ([row(0, "deny", "Bash")], "ls", ("deny", "rule_0", "denied by rule rule_0: Bash")),
        ([row(0, "allow", "Bash(ls)"), row(1, "deny", "Bash(ls)")], "ls", ("deny", "rule_1", DENY_LS)),
        ([row(0, "deny", "Bash"), row(1, "deny", "Bash(ls)")], "ls", ("deny", "rule_1", DENY_LS)),  # exact first
        ([row(0, "allow", "Bash(ls)", scope="session:S2")], "ls", None),
        ([row(0, "allow", "Bash(ls)", scope="agent:claude-code")], "ls", ("allow", "rule_0", ALLOW_LS)),
        ([row(0, "deny", "Bash(rm:*)")], "npm run rm", None),  # mentions rm, but npm's only reading is its argv
        (GIT_RULES, "git status", ("allow", "rule_0", "allowed by rule rule_0: Bash(git status)")),
        (GIT_RULES, "git push -f", ("deny", "rule_1", "denied by rule rule_1: Bash(git push:*)")),
        (GIT_RULES, "git log", None),
        (GIT_RULES, "/usr/bin/git push", ("deny", "rule_1", "denied by rule rule_1: Bash(git push:*)")),
    ],
)  # fmt: skip
def test_each_rule_form_is_decided_as_the_engine_decides(rows: list[Any], command: str, wanted: Any) -> None:
    assert lean_verdict(rows, {"command": command}, AGENT, SESSION) == wanted
    assert engine_verdict(rows, {"command": command}, AGENT, SESSION) == wanted


@pytest.mark.parametrize(
    ("rows", "command"),
    [
        (BENCH_RULES, "npm run test"),  # only a prefix allow: the risk module decides
        ([row(0, "allow", "Bash")], "ls"),  # a whole-tool allow: the same
        ([row(0, "allow", "Bash(git config x y)")], "git config x y"),  # git's options can run programs
        ([row(0, "allow", "Bash(git diff --ext-diff)")], "git diff --ext-diff"),
        ([row(0, "allow", "Bash(git --no-pager log)")], "git --no-pager log"),
        ([row(0, "allow", "Bash(git rebase -i)")], "git rebase -i"),
        ([row(0, "allow", "Bash(find . -delete)")], "find . -delete"),
        ([row(0, "allow", "Bash(env ls)")], "env ls"),
        ([row(0, "deny", "Bash(rm:*)")], "sudo rm -rf x"),  # a wrapper's inner command
        ([row(0, "deny", "Bash(rm:*)")], "command rm x"),
        ([row(0, "deny", "Bash(rm:*)")], "exec rm x"),
        ([row(0, "deny", "Bash(rm:*)")], "/usr/bin/env rm x"),
        ([row(0, "deny", "Bash(git push:*)")], "git -C . push"),  # global options dropped by the engine
        ([row(0, "deny", "Bash(kubectl delete:*)")], "kubectl -n x delete pod"),
        ([row(0, "allow", "Bash(ls)", scope="workspace:/tmp")], "ls"),
        ([row(0, "allow", "Bash(ls)", note=5)], "ls"),  # type: ignore[arg-type]
        ([row(0, "allow", "Bash(ls)")], "A=b ls"),
        ([row(0, "allow", "Bash(ls)")], "PATH=/tmp ls"),
    ],
)
def test_what_the_lean_rules_cannot_be_certain_of_is_handed_off(rows: list[Any], command: str) -> None:
    assert lean_verdict(rows, {"command": command}, AGENT, SESSION) == UNSURE


HOSTILE_COMMANDS = (
    "echo $(rm -rf x)", "echo `rm -rf x`", "ec'h'o rules", 'echo "rules"', "echo rules; rm -rf x", "echo rules && rm x",
    "echo rules | sh", "echo rules\nrm -rf x", "echo rules\rrm", "ｅcho rules", "echo\u00a0rules", "echo\trules",
    "e\u0301cho rules", "echo rules\u200b", "echo ~", "echo *", "echo {a,b}", "echo rules #x", "echo !!",
    "echo r\\ules",
    "echo rules > /etc/passwd", "echo rules 2>&1", "echo $HOME", "(echo rules)", "{ echo rules; }", "time echo rules",
    "if echo rules", "echo rules &", "echo " + "rules " * 1000, "echo " + "r" * 5000, "", "   ",
)  # fmt: skip


@pytest.mark.parametrize("command", HOSTILE_COMMANDS)
def test_hostile_commands_go_to_the_full_path(command: str) -> None:
    """Substitutions, quoting, operators, other lines, look-alike and invisible characters, very long commands."""
    rows = [row(0, "allow", "Bash(echo rules)"), row(1, "deny", "Bash(rm:*)")]
    assert lean_verdict(rows, {"command": command}, AGENT, SESSION) == UNSURE
    assert_agrees(rows, {"command": command})
