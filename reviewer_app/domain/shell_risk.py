"""The risk of a shell command: destructive programs, what its words and redirections open where the shell opens
them (after a ``cd``, wildcards and the command's own variables expanded), recursive reads, scripts it hands on,
and what it does beyond its text (:mod:`.shell_effects`). Read with :mod:`.shell` (bashlex).
"""

from __future__ import annotations

import functools
import os
import posixpath
import re

from reviewer_app.domain.config_changes import config_change
from reviewer_app.domain.containers import ContainerReach, container_reach
from reviewer_app.domain.file_reach import (
    absolute_path,
    glob_matches,
    has_wildcard,
    secret_a_filter_names,
    secrets_within,
)
from reviewer_app.domain.patches import patch_input, patch_paths, read_patch
from reviewer_app.domain.path_risk import DISK_DEVICE, HARMLESS_DEVICES, is_sensitive_path, outside_workspace
from reviewer_app.domain.recursive_reads import RecursiveRead, recursive_read
from reviewer_app.domain.risk_level import Findings, Risk, RiskLevel
from reviewer_app.domain.secret_reads import (
    credential_printed,
    environment_dumped,
    host_variables,
    reaches_instance_metadata,
)
from reviewer_app.domain.sensitive import is_sensitive_path as sensitive_target
from reviewer_app.domain.sensitive import operator_patterns
from reviewer_app.domain.sensitive_targets import SENSITIVE_TARGETS, place_may_be_sensitive
from reviewer_app.domain.shell import (
    MAX_SCRIPT_DEPTH,
    ParsedCommand,
    ShellFlag,
    SimpleCommand,
    effective_argv,
    find_exec_commands,
    inline_scripts,
    parse_command,
    runs_interpreter,
)
from reviewer_app.domain.shell_effects import command_effects, without_global_options
from reviewer_app.domain.shell_variables import CommandVariables, command_variables, substituted
from reviewer_app.domain.working_directory import Places, placed

NETWORK_PROGRAMS = frozenset(
    {
        "curl", "wget", "ssh", "scp", "sftp", "rsync", "nc", "ncat", "netcat", "telnet", "ftp", "socat",
        "http", "https", "xh", "aria2c", "lftp", "mosh", "ssh-copy-id",
    }
)  # fmt: skip
SQL_CLIENTS = frozenset({"psql", "mysql", "mariadb", "sqlite3", "sqlcmd", "clickhouse-client", "cockroach", "duckdb"})
_SQL_DESTRUCTIVE = re.compile(
    r"\b(drop\s+(table|database|schema|index|view)|truncate\b|delete\s+from\b(?!.*\bwhere\b))", re.I
)
_FORK_BOMB = re.compile(r"([\w:.]+)\s*\(\s*\)\s*\{[^}]*\1\s*\|\s*\1")
_FILE_WRITERS = frozenset(
    {"cp", "mv", "tee", "install", "ln", "rsync", "touch", "rm", "truncate", "chmod", "chown", "mkdir", "unlink",
     "shred", "rmdir", "scp"}
)  # fmt: skip
_INLINE_CODE_FLAGS = frozenset({"-c", "-e", "-E", "--eval", "-r", "--command", "-ec", "-xc", "-lc", "-ic", "-exc"})
# Options whose value is a file the program writes (`git diff --output=F`, `curl -o F`, `sort -o F`).
_OUTPUT_OPTIONS = frozenset({"-o", "--output", "--out", "--outfile", "--output-file", "--output-document", "-O",
                             "--log-file", "--logfile"})  # fmt: skip
# git options and settings that run arbitrary commands.
_GIT_EXEC_SETTINGS = ("core.", "alias.", "protocol.", "credential.", "diff.", "filter.", "merge.", "sequence.")
_GIT_EXEC_OPTIONS = ("--upload-pack", "--receive-pack", "--exec", "--config", "-u")


def _short_flags(argv: tuple[str, ...]) -> str:
    """All single-letter options in argv (``-rf -v`` gives ``rfv``)."""
    return "".join(word[1:] for word in argv if word.startswith("-") and not word.startswith("--") and len(word) > 1)


def _redirection_risk(simple: SimpleCommand, findings: Findings, cwd: str | None, here: str | None) -> None:
    for redirection in simple.redirections:
        # The target as the shell opens it: in the directory it runs in (``here``, after a ``cd``), symlinks
        # followed (``cat < notes`` with notes -> ~/.ssh/id_rsa).
        for target in expanded_words(placed(redirection.target, here), cwd, findings):
            if redirection.harmless or not redirection.writes:
                if not redirection.harmless and is_sensitive_path(target, cwd):
                    level: RiskLevel = "high" if sensitive_target(target, cwd) else "medium"
                    findings.add(level, f"reads a sensitive file ({redirection.target})")
                continue
            if DISK_DEVICE.match(target):
                findings.add("high", f"writes to a disk device ({target})")
            elif is_sensitive_path(target, cwd):
                findings.add("high", f"redirects into a credentials or start-up file ({target})")
            elif outside_workspace(target, cwd, follow_symlinks=True) and target not in HARMLESS_DEVICES:
                findings.add("medium", f"redirects into a file outside the workspace ({target})")


def expanded_words(word: str, cwd: str | None, findings: Findings) -> list[str]:
    """``word`` and, when it holds a wildcard or braces, the words the shell makes of it (each is judged:
    ``cat ~/.s*/id_*`` reads the key). A wildcard that matches more files than can be checked is high."""
    if not has_wildcard(word):
        return [word]
    matches = glob_matches(word, cwd)
    if matches is None:
        findings.add("high", f"a wildcard that matches more files than Reviewer checks ({word})")
        return [word]
    return [word, *matches]


def possible_subcommands(program: str, args: list[str] | tuple[str, ...]) -> set[str]:
    """Every word that may be ``program``'s subcommand: its first argument and, past leading global options that
    may or may not take the next word as their value, each word that could start it (``terraform -chdir=x
    destroy``, ``kubectl --context prod delete``, ``docker -H host run``): a check of the subcommand reads them all."""
    found = {args[0]} if args else set()
    found.update(form[1] for form in without_global_options((program, *args)) if len(form) > 1)
    return found


def _shell_command_risk(
    simple: SimpleCommand, findings: Findings, cwd: str | None, depth: int = 0, here: str | None = None
) -> None:
    """Judge one simple command of a call in the workspace ``cwd``; ``here``: the directory it runs in when a
    ``cd`` moved it (None: ``cwd`` itself), where its relative paths are opened."""
    _redirection_risk(simple, findings, cwd, here)  # also for a bare `> file`, which has no argv
    argv = simple.argv
    if not argv:
        return
    names = {posixpath.basename(word) for word in argv[:1]}
    chain_start = posixpath.basename(argv[0])
    real = effective_argv(argv)
    wrappers = {posixpath.basename(word) for word in argv[: len(argv) - len(real)]} | {chain_start}
    for elevated in sorted(wrappers & {"sudo", "doas", "su", "pkexec", "runuser"}):
        findings.add("high", f"runs as another user ({elevated})")
    if environment_dumped(real or argv):
        findings.add("high", "prints the environment, the host's tokens and keys among it")
    if not real:
        return
    program = posixpath.basename(real[0])
    names.add(program)
    args = real[1:]
    first = args[0] if args else ""
    subcommands = possible_subcommands(program, args)
    printed = credential_printed(program, args)
    if printed is not None:
        findings.add("high", f"prints {printed} ({program} {' '.join(args[:3])})")
    short = _short_flags(args)
    long_flags = {word.split("=", 1)[0] for word in args if word.startswith("--")}
    text = " ".join(args)

    if program == "rm":
        if "r" in short or "R" in short or "--recursive" in long_flags:
            findings.add("high", "deletes recursively (rm -r)")
        else:
            findings.add("medium", "deletes files (rm)")
        if any(word in ("/", "/*", "~", "~/", ".", "..", "*") for word in args):
            findings.add("high", "deletes a whole tree (rm on /, ~, . or *)")
    elif program == "git" and args:
        _git_risk(args, findings)
    elif program == "dd":
        findings.add("high", "raw disk copy (dd)")
    elif program.startswith("mkfs") or program in ("fdisk", "sfdisk", "parted", "wipefs", "mkswap", "shred"):
        findings.add("high", f"formats or wipes storage ({program})")
    elif program in ("chmod", "chown", "chgrp"):
        if "R" in short or "--recursive" in long_flags:
            findings.add("high", f"changes permissions recursively ({program} -R)")
        elif program == "chmod" and any(re.fullmatch(r"[0-7]?777|a\+rwx|o\+w", word) for word in args):
            findings.add("medium", "makes files writable by everyone (chmod 777)")
    elif program in ("shutdown", "reboot", "halt", "poweroff") or (program == "init" and first in ("0", "6")):
        findings.add("high", f"stops the machine ({program})")
    elif program == "kubectl" and subcommands & {"delete", "drain", "replace"}:
        findings.add("high", "deletes Kubernetes resources (kubectl delete)")
    elif program == "terraform" and ("destroy" in subcommands or ("apply" in subcommands and "-destroy" in args)):
        findings.add("high", "destroys infrastructure (terraform destroy)")
    elif program == "terraform" and "apply" in subcommands:
        findings.add("high", "changes real infrastructure as its plan says, destroying included (terraform apply)")
    elif program == "helm" and subcommands & {"uninstall", "delete"}:
        findings.add("high", "uninstalls a Helm release")
    elif program in ("aws", "gcloud", "az") and re.search(r"\b(delete|rm|remove|destroy|terminate)[\w-]*\b", text):
        if program != "aws" or "--dryrun" not in args:
            findings.add("high", f"deletes cloud resources ({program})")
    elif program == "find" and any(word in ("-delete", "-exec", "-execdir", "-ok", "-okdir") for word in args):
        findings.add("high" if "-delete" in args else "medium", "find deletes or runs commands on what it finds")
        for nested in find_exec_commands(args):
            _shell_command_risk(nested, findings, cwd, depth, here)
            if runs_interpreter(nested):
                findings.add("high", "find runs an interpreter on what it finds (-exec sh …)")
    elif program in ("kill", "pkill", "killall") and ("9" in short or "-1" in args or program != "kill"):
        findings.add("medium", f"kills processes ({program})")
    elif (
        program in ("docker", "podman")
        and subcommands & {"run", "create", "exec"}
        and ("--privileged" in args or any(re.match(r"^(/|/etc|/root|/home)(:|$)", word) for word in args))
    ):
        started = "/".join(sorted(subcommands & {"run", "create", "exec"}))
        findings.add("high", f"{program} {started} with host root access (--privileged or a mount of /)")
    elif program in ("docker", "podman") and subcommands & {"rm", "rmi", "system", "volume"}:
        if "prune" in args or "rm" in args or "-f" in args:
            findings.add("medium", f"removes containers, images or volumes ({program})")
    elif program in ("crontab", "systemctl", "launchctl", "iptables", "ufw", "mount", "umount"):
        findings.add("medium", f"changes system services or configuration ({program})")
    elif program in ("npm", "pnpm", "yarn", "pip", "pip3", "uv", "cargo", "gem", "apt", "apt-get", "brew") and (
        subcommands & {"install", "add", "i", "publish"}
    ):
        fetched = "/".join(sorted(subcommands & {"install", "add", "i", "publish"}))
        findings.add("medium", f"{program} {fetched}: fetches packages and runs their install scripts")

    for script in inline_scripts(program, args, simple.stdin_texts):
        if depth >= MAX_SCRIPT_DEPTH:
            findings.add("medium", "shell scripts nested too deep to assess")
            break
        inner = _assess(parse_command(script), cwd, depth + 1, here)
        for reason in inner.reasons:
            findings.add(inner.level, f"{reason} (in a script run by {program})")
    sql_text = " ".join((*real, *simple.stdin_texts))
    if (program in SQL_CLIENTS or chain_start in SQL_CLIENTS) and _SQL_DESTRUCTIVE.search(sql_text):
        findings.add("high", f"destructive SQL (DROP/TRUNCATE/DELETE without WHERE) in {program}")
    if program in NETWORK_PROGRAMS or chain_start in NETWORK_PROGRAMS:
        findings.add("medium", f"network egress ({program})")
        for word in args:
            if reaches_instance_metadata(word):
                findings.add("high", f"asks the cloud's instance metadata service for credentials ({word})")
    applied = patch_input(program, args)
    if applied is not None:
        _patch_risk(program, applied, simple, findings, cwd, here)
    change = config_change(program, args)
    if change is not None:
        findings.add("high", change)
    if runs_interpreter(simple) and any(flag in _INLINE_CODE_FLAGS for flag in args):
        findings.add("medium", f"runs inline code ({program} {next(f for f in args if f in _INLINE_CODE_FLAGS)})")
    elif program in ("eval", "source", "."):
        findings.add("medium", f"evaluates shell code ({program})")

    writer = program in _FILE_WRITERS or (program == "sed" and ("i" in short or "--in-place" in long_flags))
    words = [word.value for word in simple.words[1:]]
    for position, value in enumerate(words):
        if not value or (value.startswith("-") and "=" not in value):
            continue
        option = value.split("=", 1)[0] if value.startswith("-") else (words[position - 1] if position else "")
        candidate = value.split("=", 1)[1] if value.startswith("-") else value
        if program == "dd" and candidate.startswith("of="):
            candidate = candidate[3:]
        writes = writer or option in _OUTPUT_OPTIONS or (program == "dd" and value.startswith("of="))
        for form in expanded_words(placed(candidate, here), cwd, findings):
            _operand_risk(program, form, writes, findings, cwd)
        within = _file_within(program, candidate)
        for form in expanded_words(placed(within, here), cwd, findings) if within else ():
            _operand_risk(program, form, False, findings, cwd)  # ``curl -d @notes``, ``git show HEAD:.env``
    reach = container_reach(program, args)
    if reach is not None:
        _container_risk(program, reach, findings, cwd, here)
    recursion = recursive_read(program, args) or (reach.read if reach is not None else None)
    if recursion is not None:
        _recursion_risk(program, recursion, findings, cwd, here)


def _patch_risk(
    program: str,
    applied: tuple[list[str], bool],
    simple: SimpleCommand,
    findings: Findings,
    cwd: str | None,
    here: str | None,
) -> None:
    """``patch``/``git apply`` write the files their patch names: read from the patch file (or the file given on
    its input, or a heredoc) and judged as writes; a patch from a pipe cannot be read, so it is high."""
    files, from_input = applied
    texts = list(simple.stdin_texts)
    if from_input:
        files = files + [r.target for r in simple.redirections if r.operator == "<" and not r.harmless]
        if not files and not texts:
            findings.add("high", f"{program} applies a patch from its input, which Reviewer cannot read")
    for name in files:
        absolute = absolute_path(placed(name, here), cwd)
        text = read_patch(absolute) if absolute is not None else None
        if text is None:
            findings.add("high", f"{program} applies a patch Reviewer cannot read ({name})")
        else:
            texts.append(text)
    for path in (path for text in texts for path in patch_paths(text)):
        _operand_risk(program, placed(path, here), True, findings, cwd)


def _container_risk(program: str, reach: ContainerReach, findings: Findings, cwd: str | None, here: str | None) -> None:
    """A container command whose effect comes from a file (``docker compose up``) is high; one that writes an
    image's files (which, only the image says) into the workspace itself, a sensitive place or outside it is too."""
    if reach.unknowable is not None:
        findings.add("high", f"{reach.unknowable}: Reviewer cannot check it")
    for destination in reach.writes_into:
        for place in expanded_words(placed(destination, here), cwd, findings):
            absolute = absolute_path(place, cwd)
            if absolute is None or _is_workspace(absolute, cwd) or is_sensitive_path(absolute, cwd):
                findings.add("high", f"{program} writes the image's files into {destination}, whatever they are")
            elif outside_workspace(absolute, cwd, follow_symlinks=True):
                findings.add("high", f"{program} writes the image's files outside the workspace ({destination})")


def _is_workspace(path: str, cwd: str | None) -> bool:
    """Whether ``path`` is the working directory itself (where ``.git/hooks`` and the agents' settings live)."""
    try:
        return cwd is None or os.path.realpath(path) == os.path.realpath(cwd)
    except (OSError, ValueError):
        return True


def _recursion_risk(
    program: str, recursion: RecursiveRead, findings: Findings, cwd: str | None, here: str | None
) -> None:
    """A program that reads directories whole (``grep -r``, ``tar c``, ``cp -r``) is judged by the secrets in them;
    one that reads the files a list names (``tar -T -``, ``cpio -o``) cannot be judged."""
    if recursion.listed is not None:
        findings.add(
            "high", f"{program} reads the files a list names ({recursion.listed}), which Reviewer cannot check"
        )
    for pattern in recursion.filters:
        named = secret_a_filter_names(pattern)
        if named is not None:
            findings.add("high", f"{program} reads only the files {pattern} names, secrets among them ({named})")
    for operand in recursion.operands:
        for directory in expanded_words(placed(operand, here), cwd, findings):
            # An operand taken out of a longer word (``docker run -v KEY:/k``) may be a file: judged as one too.
            _operand_risk(program, directory, False, findings, cwd)
            found = secrets_within(
                directory,
                cwd,
                hidden=recursion.hidden,
                honours_gitignore=recursion.honours_gitignore,
                follows_links=recursion.follows_links,
            )
            if found is not None:
                findings.add("high", f"{program} reads {operand} recursively, secrets included: {found}")


def _operand_risk(program: str, candidate: str, writes: bool, findings: Findings, cwd: str | None) -> None:
    """Judge one file a program's word names (``writes``: the program changes it)."""
    pathish = "/" in candidate or candidate.startswith((".", "~"))
    # A bare word is a file in the working directory too (``cat config`` in ~/.ssh; ``cat notes`` with notes
    # a symlink to a key).
    if not (pathish or is_sensitive_path(candidate) or _names_a_link(candidate, cwd) or _in_place(candidate, cwd)):
        return
    if writes:
        if is_sensitive_path(candidate, cwd):  # its real target too: ``tee log`` with log -> ~/.bashrc
            findings.add("high", f"{program} changes a credentials or start-up file ({candidate})")
        elif outside_workspace(candidate, cwd, follow_symlinks=True) and candidate not in HARMLESS_DEVICES:
            findings.add("medium", f"{program} changes files outside the workspace ({candidate})")
    elif sensitive_target(candidate, cwd):
        findings.add("high", f"reads a sensitive file: key, credentials, start-up or agent settings ({candidate})")
    elif is_sensitive_path(candidate):
        findings.add("medium", f"touches system configuration ({candidate})")


_SOCAT_FILE_ADDRESSES = frozenset({"FILE", "OPEN", "GOPEN", "CREATE", "CREAT", "PIPE", "UNIX-CONNECT", "UNIX"})


def _file_within(program: str, word: str) -> str | None:
    """The file a word names inside it: after ``@`` (``curl -d @f``, ``-F x=@f``, httpie's ``field@f``; an argument
    file ``@list`` of many programs), after git's ``REV:`` (``git show HEAD:.env`` prints the committed file) or in a
    socat address (``FILE:.env``), else None."""
    if program == "git" and ":" in word and "://" not in word:
        return word.split(":", 1)[1]
    kind, colon, address = word.partition(":")
    if program == "socat" and colon and kind.upper() in _SOCAT_FILE_ADDRESSES:
        return address.split(",", 1)[0]  # ``FILE:.env,rdonly``, ``CREATE:~/.bashrc``
    if word.startswith("@"):
        return word[1:]
    if "=@" in word:
        return word.split("=@", 1)[1]
    if program in ("http", "https", "xh", "xhs") and "@" in word and "://" not in word:
        return word.split("@", 1)[1]
    return None


def _in_place(word: str, cwd: str | None) -> bool:
    """Whether a bare word is a sensitive file for the directory it is in (``cat config`` in ~/.ssh)."""
    if cwd is None or not cwd.replace("\\", "/").startswith("/"):
        return False
    try:
        places = {posixpath.normpath(cwd.replace("\\", "/")), os.path.realpath(cwd)}
    except (OSError, ValueError):
        return True
    return any(_place_may_be_sensitive(place, operator_patterns()) for place in places) and sensitive_target(word, cwd)


@functools.lru_cache(maxsize=256)
def _place_may_be_sensitive(place: str, extra: tuple[str, ...]) -> bool:
    return place_may_be_sensitive(place, [*(pattern for pattern, _ in SENSITIVE_TARGETS), *extra])


def _names_a_link(word: str, cwd: str | None) -> bool:
    """Whether a bare word (no slash) names a symlink in the workspace: then it is a path whose target counts
    (``cat notes`` with notes -> ~/.ssh/id_rsa reads the key)."""
    if cwd is None or not word:
        return False
    try:
        return os.path.islink(posixpath.join(cwd.replace("\\", "/"), word))
    except (OSError, ValueError):  # a NUL byte, a name too long: not a file the program could open either
        return False


def _git_risk(args: tuple[str, ...], findings: Findings) -> None:
    # Skip git's global options (-C dir, -c key=value, --git-dir=…) to find the subcommand.
    index = 0
    while index < len(args) and args[index].startswith("-"):
        index += 2 if args[index] in ("-C", "-c") else 1
    if index >= len(args):
        return
    sub, rest = args[index], args[index + 1 :]
    short = _short_flags(rest)
    if sub == "push":
        if (
            "f" in short
            or any(word.startswith(("--force", "--mirror", "--delete", "--prune")) for word in rest)
            or any(word.startswith("+") or word.startswith(":") for word in rest)
        ):
            findings.add("high", "rewrites or deletes remote history (git push --force)")
        else:
            findings.add("medium", "network egress (git push)")
    elif sub == "reset" and "--hard" in rest:
        findings.add("high", "discards local changes (git reset --hard)")
    elif sub == "clean" and ("f" in short or "--force" in rest):
        findings.add("high", "deletes untracked files (git clean -f)")
    elif sub in ("filter-branch", "filter-repo"):
        findings.add("high", f"rewrites history (git {sub})")
    elif sub == "branch" and ("D" in short or ("--delete" in rest and "--force" in rest)):
        findings.add("medium", "deletes a branch (git branch -D)")
    elif sub in ("checkout", "restore") and "." in rest:
        findings.add("medium", f"discards local changes (git {sub} .)")
    elif sub == "stash" and rest[:1] in (("drop",), ("clear",)):
        findings.add("medium", "drops stashed changes")
    settings = [args[i + 1] for i in range(index) if args[i] == "-c" and i + 1 < len(args)]
    settings += [word.split("=", 1)[1] for word in args[:index] if word.startswith("--config-env=")]
    exec_options = _GIT_EXEC_OPTIONS if sub in ("clone", "ls-remote") else _GIT_EXEC_OPTIONS[:-1]  # `push -u`
    if any(setting.startswith(_GIT_EXEC_SETTINGS) for setting in settings) or any(
        word.split("=", 1)[0] in exec_options for word in rest if word.startswith("-")
    ):
        findings.add("high", "git runs with an option or setting that can execute commands (-c core.*, --upload-pack)")


def assess_command(command: str, cwd: str | None = None) -> Risk:
    """The risk of running ``command`` in a shell in the workspace ``cwd``.

    Never cached: the verdict depends on the file system as it is now (a word that became a symlink to a key, a
    directory that moved), so only the parse, which depends on the text alone, is reused."""
    return _assess(parse_command(command), cwd, 0)


def _assess(parsed: ParsedCommand, cwd: str | None, depth: int, here: str | None = None) -> Risk:
    """``here``: where a script handed on by a command (``sh -c``) starts, when a ``cd`` moved that command."""
    findings = Findings()
    if not parsed.understood:
        findings.add("medium", "the command could not be fully parsed: " + "; ".join(parsed.problems))
    if _FORK_BOMB.search(parsed.source):
        findings.add("high", "fork bomb")
    if ShellFlag.PIPE_INTO_INTERPRETER in parsed.flags:
        downloads = any(posixpath.basename(c.argv[0]) in NETWORK_PROGRAMS for c in parsed.commands if c.argv)
        findings.add("high", "downloads and runs code (curl … | sh)" if downloads else "pipes into an interpreter")
    if parsed.flags & {ShellFlag.SUBSTITUTION, ShellFlag.PROCESS_SUBSTITUTION}:
        findings.add("medium", "contains a command substitution")
        downloads = any(c.argv and posixpath.basename(c.argv[0]) in NETWORK_PROGRAMS for c in parsed.commands)
        if downloads and any(runs_interpreter(c) for c in parsed.commands):
            findings.add("high", 'downloads and runs code (sh -c "$(curl …)", bash <(curl …))')
    if ShellFlag.EXPANSION_IN_COMMAND_POSITION in parsed.flags:
        findings.add("medium", "the program name comes from a variable")
    places = Places(here or cwd)
    variables = command_variables(parsed)
    own = set(variables.values) | variables.filled_at_run_time
    for simple in parsed.commands:
        texts = [*(word.raw for word in simple.words), *simple.assignments, *simple.stdin_texts]
        for name in host_variables([*texts, *(redirection.target for redirection in simple.redirections)], own):
            findings.add(
                "high", f"uses ${name}, a secret or credential place of the host's, which Reviewer cannot check"
            )
        if places.unplaced is not None:
            findings.add("high", f"runs after a change to a directory Reviewer cannot tell ({places.unplaced})")
        for index, place in enumerate(places.directories):
            for variant in _with_own_variables(simple, variables, findings):
                _shell_command_risk(variant, findings, cwd, depth, place if index or here else None)
        places.follow(simple)
    if not parsed.understood:
        _raw_scan(parsed.source, findings)
    for reason in command_effects(parsed).reasons:  # what a rule's text cannot show: never settled wholesale
        findings.add("high", reason)
    return findings.risk()


def _with_own_variables(simple: SimpleCommand, variables: CommandVariables, findings: Findings) -> list[SimpleCommand]:
    """``simple`` and its forms with the variables the command itself sets substituted (``f=~/.ssh/k; cat $f``); a
    variable filled at run time (``read f``) cannot be judged, so a command using it is high."""
    texts = [*(word.value for word in simple.words), *(redirection.target for redirection in simple.redirections)]
    late = sorted({name for text in texts for name in variables.unknowable(text)})
    if late:
        findings.add("high", f"uses ${{{late[0]}}}, a value set while it runs, which Reviewer cannot check")
    forms = substituted(simple, variables)
    if forms is None:
        findings.add("high", "uses its own variables in more combinations than Reviewer checks")
        return [simple]
    return [simple, *forms]


_RAW_DANGER = (
    (re.compile(r"\brm\s+-\w*[rR]"), "deletes recursively (rm -r)"),
    (re.compile(r"\bgit\s+push\b.*(\s-f\b|--force)"), "rewrites remote history (git push --force)"),
    (re.compile(r"\b(curl|wget)\b[^|]*\|\s*(sudo\s+)?(ba|z|da)?sh\b"), "downloads and runs code (curl … | sh)"),
    (re.compile(r"\bmkfs|\bdd\s+if=|\bsudo\b"), "raw disk, format or root access"),
    (re.compile(r"\b(drop\s+table|truncate\s+table)\b", re.I), "destructive SQL"),
)


def _raw_scan(source: str, findings: Findings) -> None:
    """For commands the parser cannot read: a coarse text scan, so an unparseable `rm -rf` is still high."""
    for pattern, reason in _RAW_DANGER:
        if pattern.search(source):
            findings.add("high", reason + " (in a command that could not be parsed)")
