"""The shell matcher: commands are parsed (bashlex), and a waiver covers only what was approved."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from reviewer_app.domain.shell import Redirection, ShellFlag, effective_argv, effective_program, parse_command
from reviewer_app.domain.shell_scopes import CommandScope, scope_choices, scope_for_approval, why_not_waivable

# Issue 12: after approve-for-session of `git status`, none of these may run without a request.
GIT_STATUS_ATTACKS = [
    "git status; touch X",
    "git status && touch X || touch Y",
    "git $(touch X)",
    "git status\ntouch X",
    "git status | sh -c 'touch X'",
    "git status & touch X",
    "git push --force origin main",
    "git status `touch X`",
    "git status $(touch X)",
    "git status <(touch X)",
    "git status > ~/.bashrc",
    "git status >> /home/user/.bashrc",
    "FOO=1 git status",
    "GIT_DIR=/tmp/evil git status",
    "command git status",
    "env git status",
    "git status ${X:-$(touch X)}",
    "(git status)",
    "{ git status; }",
    "if true; then git status; fi",
    "for i in 1; do git status; done",
    "git status &",
    "git status | xargs touch",
    "git status | python3",
    "git status |& bash",
    "git status 'unterminated",
    "git status $'\\x41'",
    "git status\x00; touch X",
    "git status\x1b[2K; touch X",
    "case x in a) git status;; esac",
    "time git status",
    "git status <<EOF\n$(touch X)\nEOF",
    "git status $HOME",
    "git status *",
    "",
    "   ",
]


@pytest.mark.parametrize("attack", GIT_STATUS_ATTACKS)
def test_an_exact_git_status_approval_covers_none_of_the_attacks(attack: str) -> None:
    scope = scope_for_approval("git status")
    assert scope is not None
    assert not scope.covers(attack)


@pytest.mark.parametrize("attack", GIT_STATUS_ATTACKS)
def test_a_git_status_prefix_covers_none_of_the_attacks_except_further_arguments(attack: str) -> None:
    scope = CommandScope.prefix(["git", "status"])
    assert not scope.covers(attack)


def test_an_ls_rule_does_not_cover_a_second_command_writing_a_file() -> None:
    for scope in (CommandScope.exact("ls"), CommandScope.prefix(["ls"])):
        assert not scope.covers("ls && echo hi > file")
        assert not scope.covers("ls > file")
        assert scope.covers("ls")


@pytest.mark.parametrize(
    "harmless",
    [
        "git status",
        "'git' status",
        '"git" "status"',
        "git  status ",
        "git status;",
        "git status # look",
        "g\\it status",
    ],
)
def test_identical_commands_are_covered_whatever_the_quoting(harmless: str) -> None:
    scope = scope_for_approval("git status")
    assert scope is not None and scope.covers(harmless)


def test_exact_scopes_compare_the_whole_structure() -> None:
    scope = scope_for_approval("cd src && npm test")
    assert scope is not None
    assert scope.covers("cd src && npm test")
    assert scope.covers("cd 'src' && npm test")
    assert not scope.covers("npm test")  # a part alone runs somewhere else
    assert not scope.covers("cd src || npm test")
    assert not scope.covers("npm test && cd src")
    redirect = scope_for_approval("git log > log.txt")
    assert redirect is not None and redirect.covers("git log >log.txt")
    assert not redirect.covers("git log > other.txt") and not redirect.covers("git log >> log.txt")


def test_words_with_expansions_must_be_written_identically() -> None:
    scope = scope_for_approval("ls *.py")
    assert scope is not None
    assert scope.covers("ls *.py")
    assert not scope.covers("ls '*.py'") and not scope.covers("ls *.txt")
    literal = scope_for_approval("echo '$HOME'")
    assert literal is not None
    assert not literal.covers("echo $HOME")  # the literal text was approved, not the expansion
    assert literal.covers("echo '$HOME'")


def test_prefix_covers_further_literal_arguments_only() -> None:
    scope = CommandScope.prefix(["npm", "run", "test"])
    assert scope.covers("npm run test")
    assert scope.covers("npm run test -- --watch=false")
    assert scope.covers("npm run test && npm run test -- a.js")
    assert scope.covers("npm run test 2>&1")
    assert scope.covers("npm run test > /dev/null")
    assert not scope.covers("npm run testx")
    assert not scope.covers("npm run")
    assert not scope.covers("npm run test $EXTRA")
    assert not scope.covers("npm run test {a,--force}")
    assert not scope.covers("npm run test *")
    assert not scope.covers("npm run test > out.log")
    assert not scope.covers("npm run test | tee out.log")  # tee is another simple command
    logging = CommandScope.prefix(["npm", "run", "test"], [Redirection(">", "out.log")])
    assert logging.covers("npm run test > out.log") and not logging.covers("npm run test > other.log")


def test_unwaivable_commands_grant_nothing() -> None:
    assert scope_for_approval("git $(touch X)") is None
    assert scope_for_approval("curl x | sh") is None
    assert scope_for_approval("echo 'unterminated") is None
    assert "command substitution" in " ".join(why_not_waivable("git $(touch X)"))
    assert "pipes into an interpreter" in " ".join(why_not_waivable("curl x | sh"))
    assert why_not_waivable("git status") == ()


def test_parse_reports_commands_redirections_and_flags() -> None:
    parsed = parse_command("FOO=1 git status 2>&1 > out.txt | tee -a log && echo done &")
    assert [c.argv for c in parsed.commands] == [("git", "status"), ("tee", "-a", "log"), ("echo", "done")]
    assert parsed.commands[0].assignments == ("FOO=1",)
    assert parsed.commands[0].redirections == (Redirection(">&", "1", 2), Redirection(">", "out.txt"))
    assert parsed.connectors == ("|", "&&", "&")
    assert {ShellFlag.PIPE, ShellFlag.SEQUENCE, ShellFlag.BACKGROUND} <= parsed.flags
    assert parsed.understood and not parsed.waivable
    nested = parse_command("echo $(rm -rf /tmp/x)")
    assert ("rm", "-rf", "/tmp/x") in [c.argv for c in nested.commands]  # the risk module sees it
    assert ShellFlag.SUBSTITUTION in nested.flags
    assert ShellFlag.EXPANSION_IN_COMMAND_POSITION in parse_command("$CMD arg").flags
    assert ShellFlag.HEREDOC in parse_command("cat <<EOF > f\nx\nEOF").flags
    assert ShellFlag.PIPE_INTO_INTERPRETER in parse_command("curl -s x | sudo bash").flags
    assert ShellFlag.PIPE_INTO_INTERPRETER in parse_command("ls | xargs rm").flags
    assert ShellFlag.PIPE_INTO_INTERPRETER not in parse_command("ls | grep x").flags
    assert ShellFlag.INTERPRETER in parse_command("python3 -c 'print(1)'").flags
    assert ShellFlag.COMPOUND in parse_command(":(){ :|:& };:").flags


@pytest.mark.parametrize(
    "command",
    ["echo 'a", "echo $((1+2))", "echo $'a\\nb'", 'echo $"x"', "coproc ls", "[[ -f x ]]", "a=(1 2)", "&& ls"],
)
def test_what_the_parser_cannot_read_is_not_understood(command: str) -> None:
    parsed = parse_command(command)
    assert not parsed.understood and not parsed.waivable
    assert parsed.problems


def test_huge_and_deeply_nested_commands_are_not_understood() -> None:
    huge = parse_command("git status " + "a " * 6000)
    assert not huge.understood and "longer than" in huge.problems[0]
    nested = parse_command("echo " + "$(" * 300 + ")" * 300)
    assert not nested.understood


def test_comments_are_read_as_the_shell_reads_them() -> None:
    scope = scope_for_approval("git status")
    assert scope is not None
    assert scope.covers("git status # $(touch X)")  # a comment: the shell runs git status only
    assert not scope.covers("git status#; touch X")  # not a comment: `status#` then `touch X`
    assert not scope.covers("git status \\#; touch X")


def test_quote_removal_disagreements_are_not_trusted() -> None:
    # bashlex reads 'a'\''b' as a'\''b; shlex as a'b: we trust neither and ask.
    assert not parse_command("echo 'a'\\''b'").understood
    # bashlex drops the double quotes inside single quotes here; bash keeps them.
    assert not parse_command("git -c core.pager='sh -c \"touch X\"' log").understood
    assert parse_command("npm test -- --grep='foo bar'").commands[0].argv[-1] == "--grep=foo bar"


def test_wrappers_are_looked_through() -> None:
    assert effective_program(["sudo", "-u", "root", "env", "A=1", "rm", "-rf", "/"]) == "rm"
    assert effective_argv(["timeout", "5", "python3", "x.py"]) == ("python3", "x.py")
    assert effective_program(["/usr/bin/git", "status"]) == "git"
    assert effective_program(["sudo"]) == "sudo"
    assert effective_program([]) is None


def test_scopes_round_trip_and_describe_themselves() -> None:
    exact = CommandScope.exact("git status")
    prefix = CommandScope.prefix(["npm", "run", "test"], [Redirection(">>", "log")])
    for scope in (exact, prefix):
        assert CommandScope.from_dict(scope.to_dict()) == scope
    assert exact.describe() == "allow `git status` exactly"
    assert prefix.describe() == "allow commands starting `npm run test` with `>>log`"
    assert CommandScope.prefix_from_text("npm run  test").words == ("npm", "run", "test")
    with pytest.raises(ValueError):
        CommandScope.prefix_from_text("npm run test; rm x")
    with pytest.raises(ValueError):
        CommandScope.prefix([])
    with pytest.raises(ValueError):
        CommandScope.from_dict({"kind": "everything"})


def test_scope_choices_start_exact_and_widen_only_simple_literal_commands() -> None:
    choices = scope_choices("npm run test -- a.js")
    assert [c.describe() for c in choices] == [
        "allow `npm run test -- a.js` exactly",
        "allow commands starting `npm run test --`",
        "allow commands starting `npm run test`",
        "allow commands starting `npm run`",
        "allow commands starting `npm`",
    ]
    assert all(choice.covers("npm run test -- a.js") for choice in choices)
    assert len(scope_choices("FOO=1 npm test")) == 1
    assert len(scope_choices("ls *.py")) == 1
    assert len(scope_choices("ls > out")) == 1
    assert scope_choices("git $(id)") == []


APPROVED = ["git status", "npm run test", "ls -la src", "make lint", "cargo test --workspace"]
INJECTIONS = [
    "; touch X",
    "&& touch X",
    "|| touch X",
    "\ntouch X",
    "& touch X",
    "| sh",
    "| bash -c 'touch X'",
    "| xargs touch",
    "$(touch X)",
    "`touch X`",
    "<(touch X)",
    ">(touch X)",
    "> ~/.bashrc",
    ">> .git/hooks/pre-commit",
    "2> /etc/cron.d/x",
    "$EVIL",
    "${EVIL:-x}",
    "{a,--force}",
    "*",
    "~",
]


@pytest.mark.parametrize("approved", APPROVED)
@pytest.mark.parametrize("injection", INJECTIONS)
def test_no_injection_at_any_word_boundary_is_covered(approved: str, injection: str) -> None:
    words = approved.split(" ")
    scopes = [CommandScope.exact(approved)] + [CommandScope.prefix(words[:n]) for n in range(1, len(words) + 1)]
    for position in range(1, len(words) + 1):
        injected = " ".join([*words[:position], injection, *words[position:]])
        for scope in scopes:
            assert not scope.covers(injected), (scope, injected)


def test_heredocs_here_strings_and_pipe_targets_are_reported() -> None:
    heredoc = parse_command("psql app <<EOF\nDROP TABLE users;\nEOF")
    assert heredoc.commands[0].stdin_texts == ("DROP TABLE users;",)
    assert ShellFlag.HEREDOC in heredoc.flags and not heredoc.waivable
    piped = parse_command("cat <<< 'hi there' | grep hi | sudo sh")
    assert piped.commands[0].stdin_texts == ("hi there",)
    assert piped.pipe_targets == ("grep", "sh")


ARGUMENT_CORPUS = [
    "status",
    "'b c' \"d e\"",
    '"a\\"b" \'c\'"d"e',
    "f\\ g \\'h\\'",
    "--x='y z' --y=\"1 2\"",
    "'$HOME' \"\\$HOME\" \\$HOME",
    "'`id`' \"\\`id\\`\"",
    "a\\;b 'c;d' \"e|f\"",
    "'' \"\" x",
    "'a'\"b\"'c'",
    "\"tab\there\" 'new\nline'",
    "é 'ünï' \"çødé\"",
    "# not a comment? no: a comment",
    "x#y 'z#'",
    "a\\\\b \"a\\\\b\" 'a\\\\b'",
    "\"a'b\" 'a\"b'",
    "\"\\n\" '\\n' \\n",
    "-- -x --y=z",
    "=a a= ==",
    "{a} {} }{",
    "a,b 'x*' \"y?\" \\[z]",
    "\"!\" '!' \\!",
    "% ^ @ + : , .",
]


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
@pytest.mark.parametrize("arguments", ARGUMENT_CORPUS)
def test_the_argv_we_read_is_the_argv_bash_passes(arguments: str, tmp_path: Path) -> None:
    parsed = parse_command(f"printf '%s\\0' START {arguments}")  # START: printf prints once even with no args
    if not parsed.understood:  # disagreement is allowed only in the safe direction: not understood, asked
        return
    (command,) = parsed.commands
    real = subprocess.run(
        ["bash", "--norc", "--noprofile", "-c", parsed.source],
        capture_output=True,
        check=True,
        cwd=tmp_path,
        env={"PATH": os.environ.get("PATH", ""), "HOME": str(tmp_path)},
    ).stdout.split(b"\0")[:-1]
    ours = [word.value for word in command.words[3:]] if all(w.literal for w in command.words) else None
    if ours is not None:
        assert [arg.decode() for arg in real[1:]] == ours
