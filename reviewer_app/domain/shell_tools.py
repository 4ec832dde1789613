"""Options of common tools that run programs or write files, so "read-only" prefix rules stay read-only.

Why (issue 23): ``allow Bash(sed -n:*)`` reads as "print lines", but ``sed -n '1e cmd'`` runs ``cmd``;
``git grep --open-files-in-pager=cmd``, ``tar --to-command=cmd``, ``rsync -e cmd``, ``ssh -o ProxyCommand=cmd``
and ``awk 'BEGIN{system("cmd")}'`` do the same. ``tool_reasons`` names each such use; ``shell_effects`` turns
them into high risk. Hidden reasons (the effect comes from a file, stdin, config or a terminal) are never settled
by any rule; visible ones (the code is in the text) only by an exact rule.

Long options are matched as GNU getopt and git's parse-options read them: any unambiguous abbreviation counts
(``--to-com`` is ``--to-command``), so a prefix of at least four characters of a dangerous option is one.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from reviewer_app.domain.tar_words import read_tar

Reasons = tuple[list[str], list[str]]

PAGERS = frozenset({"less", "more", "most", "pg", "man"})
EDITORS = frozenset(
    {"vi", "vim", "nvim", "view", "vimdiff", "nano", "pico", "emacs", "ed", "ex", "joe", "micro", "kak", "hx"}
)
# Interpreters and the options whose value is code to run.
# Interpreters: (the letters of short options whose value is code, in any cluster such as `-Ic` or `-ne`;
# the short options that take a value; the long options or words whose value is code).
_INLINE_CODE: dict[str, tuple[str, str, tuple[str, ...]]] = {
    **dict.fromkeys(("python", "python2", "python3", "pypy", "pypy3"), ("c", "cmWXQ", ())),
    **dict.fromkeys(("ipython", "ipython3"), ("c", "cmip", ())),
    **dict.fromkeys(("node", "nodejs", "bun"), ("ep", "erpc", ("--eval", "--print"))),
    "deno": ("", "", ("eval",)),
    "perl": ("eEmM", "eEmMIlix0dD", ()), "ruby": ("e", "eIrCEFKTW", ()), "php": ("rBRE", "rBREFcdfzt", ()),
    "lua": ("e", "el", ()), "Rscript": ("e", "e", ("--expr",)), "julia": ("e", "eELJC", ("--eval", "--print")),
    "osascript": ("e", "el", ()), "groovy": ("e", "e", ()),
    **dict.fromkeys(("pwsh", "powershell"), ("c", "c", ("-Command", "-EncodedCommand", "-command"))),
}  # fmt: skip
_AWKS = frozenset({"awk", "gawk", "mawk", "nawk"})
_GIT_SAFE_SETTING = re.compile(
    r"^(color\.[\w.-]+|user\.(name|email)|advice\.\w+|i18n\.\w+|column\.\w+|log\.(date|decorate|abbrevcommit)"
    r"|init\.defaultbranch|core\.(quotepath|autocrlf|safecrlf|filemode|ignorecase|abbrev)|pull\.(rebase|ff)"
    r"|push\.default|merge\.conflictstyle|diff\.(noprefix|renames|algorithm|mnemonicprefix)|format\.pretty)$"
)
_GIT_GLOBAL_WITH_VALUE = frozenset({"-C", "-c", "--git-dir", "--work-tree", "--namespace", "--super-prefix",
                                    "--config-env", "--attr-source", "--list-cmds"})  # fmt: skip
_GIT_GLOBAL_FLAGS = frozenset(
    {"--no-pager", "-p", "--paginate", "-P", "--bare", "--no-replace-objects", "--literal-pathspecs",
     "--glob-pathspecs", "--noglob-pathspecs", "--icase-pathspecs", "--no-optional-locks", "--no-lazy-fetch",
     "--no-advice", "--html-path", "--man-path", "--info-path", "--version", "-v", "--help", "-h", "--exec-path"}
)  # fmt: skip


# Every program ``tool_reasons`` knows something about (its options can run programs or write files).
TOOLS = (
    frozenset(
        {"find", "sed", "gsed", "git", "tar", "gtar", "bsdtar", "rsync", "ssh", "scp", "sftp", "zip", "sort", "wget",
         "socat", "nc", "ncat", "netcat", "tcpdump", "at", "batch", "psql", "mysql", "mariadb", "sqlite3", "curl",
         "make", "gmake", "ssh-add", "ssh-keygen"}
    )
    | _AWKS
    | PAGERS
    | EDITORS
    | frozenset(_INLINE_CODE)
)  # fmt: skip


def interpreter_options_end(program: str, args: tuple[str, ...]) -> int:
    """Where an interpreter's own options end (its script or ``--``); the words after it belong to the script."""
    if program not in _INLINE_CODE:
        return len(args)
    with_value = _INLINE_CODE[program][1]
    index = 0
    while index < len(args):
        word = args[index]
        if word == "--" or not word.startswith("-") or word == "-":
            return index
        index += 1
        for position, letter in enumerate(word[1:], start=1):
            if not word.startswith("--") and letter in with_value:
                index += 0 if word[position + 1 :] else 1
                break
    return index


def _long(word: str, *names: str) -> bool:
    """``word`` is one of the long options ``names``, possibly abbreviated (4+ characters) or with ``=value``."""
    name = word.split("=", 1)[0]
    return len(name) >= 4 and name.startswith("--") and any(full.startswith(name) for full in names)


def _short_options(args: Iterable[str], with_value: str) -> list[tuple[str, str | None]]:
    """Single-letter options as (letter, attached value or None); a letter in ``with_value`` ends its cluster."""
    found: list[tuple[str, str | None]] = []
    for word in args:
        if word == "--":
            break
        if not word.startswith("-") or word.startswith("--") or len(word) < 2:
            continue
        for position, letter in enumerate(word[1:], start=1):
            if letter in with_value:
                found.append((letter, word[position + 1 :] or None))
                break
            found.append((letter, None))
    return found


def _option_values(args: tuple[str, ...], short: str, long_names: tuple[str, ...], with_value: str) -> list[str]:
    """The values given to ``-X value``/``-Xvalue``/``--long=value``/``--long value``."""
    values: list[str] = []
    for index, word in enumerate(args):
        following = args[index + 1] if index + 1 < len(args) else ""
        if long_names and _long(word, *long_names):
            values.append(word.split("=", 1)[1] if "=" in word else following)
            continue
        for letter, attached in _short_options((word,), with_value):
            if letter == short:
                values.append(attached if attached is not None else following)
    return values


def tool_reasons(program: str, args: tuple[str, ...], stdin_texts: tuple[str, ...] = ()) -> Reasons:
    """(hidden, visible) reasons why ``program args`` runs or writes more than its words show."""
    hidden: list[str] = []
    visible: list[str] = []
    if program == "find":
        _find(args, visible)
    elif program in ("sed", "gsed"):
        _sed(args, hidden, visible)
    elif program in _AWKS:
        _awk(program, args, hidden, visible)
    elif program == "git":
        _git(args, hidden, visible)
    elif program in ("tar", "gtar", "bsdtar", "gnutar"):
        _tar(program, args, visible)
    elif program == "rsync":
        if _option_values(args, "e", ("--rsh", "--rsync-path"), "eBfMT") or any(_long(w, "--rsync-path") for w in args):
            visible.append("rsync -e/--rsh/--rsync-path runs a program of the command's choosing")
    elif program in ("ssh", "scp", "sftp"):
        _ssh(program, args, hidden, visible)
    elif program in ("ssh-add", "ssh-keygen") and any(
        letter in ("sS" if program == "ssh-add" else "D") for letter, _ in _short_options(args, _SSH_TOOLS[program])
    ):
        visible.append(f"{program} loads a PKCS#11 or security-key library (runs its code)")
    elif program == "zip":
        if any(word == "-TT" or word.startswith("-TT") or _long(word, "--unzip-command") for word in args):
            visible.append("zip -TT/--unzip-command runs a program of the command's choosing")
    elif program in PAGERS:
        hidden.append(f"{program} is a pager: it can run commands (!cmd, LESSOPEN) the rule cannot show")
    elif program in EDITORS:
        hidden.append(f"{program} is an editor: it can run commands and write any file")
    elif program in _INLINE_CODE:
        letters, with_value, words = _INLINE_CODE[program]
        subcommand = args[:1] if args[:1] and args[0] in words else ()  # ``deno eval CODE``
        args = args[: interpreter_options_end(program, args)]  # what follows the script is the script's
        if (
            subcommand
            or any(word in words or _long(word, *(w for w in words if w.startswith("--"))) for word in args)
            or any(letter in letters for letter, _ in _short_options(args, with_value))
        ):
            visible.append(f"{program} runs inline code")
        elif stdin_texts and not args:
            visible.append(f"{program} runs code fed on its standard input")
    elif program == "sort" and any(_long(word, "--compress-program") for word in args):
        visible.append("sort --compress-program runs a program of the command's choosing")
    elif program == "wget" and any(_long(word, "--use-askpass") for word in args):
        visible.append("wget --use-askpass runs a program of the command's choosing")
    elif program == "wget" and (
        any(_long(word, "--execute") for word in args)
        or any(letter == "e" for letter, _ in _short_options(args, _WGET))
    ):
        visible.append("wget -e/--execute runs wgetrc commands (they can write or send any file)")
    elif program == "curl" and _given(args, "--config", "K", _CURL):
        hidden.append("curl -K/--config reads options from a file (files to send or write) the rule cannot show")
    elif program in ("make", "gmake"):
        _make(args, visible)
    elif program == "socat" and any(re.match(r"^(exec|system):", word, re.I) for word in args):
        visible.append("socat EXEC:/SYSTEM: runs a command")
    elif program in ("nc", "ncat", "netcat") and (
        any(_long(word, "--exec", "--sh-exec", "--lua-exec") for word in args)
        or any(letter in "ec" for letter, _ in _short_options(args, "ecipswxdgGmoqOPT"))
    ):
        visible.append(f"{program} -e/-c runs a command for each connection")
    elif program == "tcpdump" and any(letter == "z" for letter, _ in _short_options(args, "zZwrWCGEFiBcsTyjJM")):
        visible.append("tcpdump -z runs a command on each saved file")
    elif program in ("at", "batch"):
        hidden.append(f"{program} schedules commands read from its input or a file")
    elif program in ("psql", "mysql", "mariadb", "sqlite3"):
        text = " ".join((*args, *stdin_texts))
        if re.search(r"\\!|\bsystem\b|^\s*\.(shell|system|load)\b|\s\.(shell|system|load)\b", text):
            visible.append(f"{program} runs a shell command (\\! or .shell)")
    return hidden, visible


_SSH_TOOLS = {"ssh-add": "EeSst", "ssh-keygen": "abCDEFfGIJjKMmNnOPrSstVwYZz"}
# The short options of wget and curl that take a value (so a letter inside a value is not read as an option).
_WGET = "eoaODtTwQPiBUlAIXRY"
_CURL = "KdFHToxXuUeErbcAwYyzCmhDQtVP"


def _given(args: tuple[str, ...], long_name: str, letter: str, with_value: str) -> bool:
    """Whether the option ``long_name`` (abbreviated or not) or its short form ``-letter`` is given."""
    return any(_long(word, long_name) for word in args) or any(
        found == letter for found, _ in _short_options(args, with_value)
    )


def _make(args: tuple[str, ...], visible: list[str]) -> None:
    """``make --eval=TEXT`` runs a makefile given as text; ``SHELL=``/``.SHELLFLAGS=`` decide what runs each
    recipe line."""
    if any(_long(word, "--eval") for word in args) or any(
        letter == "E" for letter, _ in _short_options(args, "CEfIjlWo")
    ):
        visible.append("make --eval runs a makefile given as text")
    if any(word.startswith(("SHELL=", ".SHELLFLAGS=", "MAKESHELL=")) for word in args):
        visible.append("make SHELL= runs every recipe line through a program of the command's choosing")


def _find(args: tuple[str, ...], visible: list[str]) -> None:
    for word in args:
        if word in ("-exec", "-execdir", "-ok", "-okdir"):
            visible.append(f"find {word} runs a command on what it finds")
        elif word == "-delete":
            visible.append("find -delete deletes what it finds")
        elif word in ("-fprint", "-fprint0", "-fprintf", "-fls"):
            visible.append(f"find {word} writes a file")


def _sed(args: tuple[str, ...], hidden: list[str], visible: list[str]) -> None:
    scripts: list[str] = []
    positional: list[str] = []
    index = 0
    long_names = ("--expression", "--file", "--in-place", "--line-length", "--quiet", "--silent", "--debug",
                  "--follow-symlinks", "--null-data", "--zero-terminated", "--posix", "--regexp-extended",
                  "--separate", "--sandbox", "--unbuffered", "--help", "--version")  # fmt: skip
    while index < len(args):
        word = args[index]
        following = args[index + 1] if index + 1 < len(args) else ""
        index += 1
        if word == "--":
            positional += args[index:]
            break
        if word.startswith("--"):
            name = word.split("=", 1)[0]
            matches = [full for full in long_names if full.startswith(name)]
            if len(matches) != 1 and name not in long_names:
                hidden.append(f"sed option {word} is not understood")
                continue
            full = name if name in long_names else matches[0]
            if full == "--expression":
                scripts.append(word.split("=", 1)[1] if "=" in word else following)
                index += 0 if "=" in word else 1
            elif full == "--file":
                hidden.append("sed -f reads its script from a file the rule cannot show")
            elif full == "--in-place":
                visible.append("sed -i edits files in place")
            elif full == "--line-length" and "=" not in word:
                index += 1
            continue
        if word.startswith("-") and len(word) > 1:
            for position, letter in enumerate(word[1:], start=1):
                rest = word[position + 1 :]
                if letter == "e":
                    scripts.append(rest or following)
                    index += 0 if rest else 1
                    break
                if letter == "f":
                    hidden.append("sed -f reads its script from a file the rule cannot show")
                    index += 0 if rest else 1
                    break
                if letter == "l":
                    index += 0 if rest else 1
                    break
                if letter == "i":
                    visible.append("sed -i edits files in place")
                    break
                if letter not in "nrsuzE":
                    hidden.append(f"sed option -{letter} is not understood")
            continue
        positional.append(word)
    if not scripts and positional:
        scripts.append(positional[0])
    for script in scripts:
        problem = sed_script_problem(script)
        if problem == "exec":
            hidden.append("the sed script runs commands (e, or s///e)")
        elif problem == "write":
            visible.append("the sed script writes files (w, W, or s///w)")
        elif problem:
            hidden.append(f"the sed script is not understood ({problem})")


_SED_SIMPLE = frozenset("=dDgGhHnNpPxzF")


def sed_script_problem(script: str) -> str | None:
    """``"exec"`` when a sed script runs commands, ``"write"`` when it writes files, another text when it cannot
    be read, None when it only edits the stream."""
    reader = _SedReader(script)
    try:
        return reader.run()
    except IndexError:
        return "it ends in the middle of a command"


class _SedReader:
    def __init__(self, script: str) -> None:
        self.s = script
        self.i = 0

    def peek(self) -> str:
        return self.s[self.i] if self.i < len(self.s) else ""

    def skip_to_line_end(self) -> None:
        while self.i < len(self.s) and self.s[self.i] != "\n":
            self.i += 2 if self.s[self.i] == "\\" else 1

    def regex(self, delimiter: str) -> None:
        """Skip a regex up to ``delimiter`` (escapes and bracket expressions protect it)."""
        while True:
            char = self.s[self.i]
            self.i += 1
            if char == "\\":
                self.i += 1
            elif char == "[":
                if self.peek() == "^":
                    self.i += 1
                if self.peek() == "]":
                    self.i += 1
                while self.s[self.i] != "]":
                    self.i += 1
                self.i += 1
            elif char == delimiter:
                return

    def text(self, delimiter: str) -> None:
        while True:
            char = self.s[self.i]
            self.i += 1
            if char == "\\":
                self.i += 1
            elif char == delimiter:
                return

    def address(self) -> None:
        for _ in range(2):
            char = self.peek()
            if char.isdigit():
                while self.peek().isdigit() or self.peek() == "~":
                    self.i += 1
            elif char == "$":
                self.i += 1
            elif char in ("/", "\\"):
                if char == "\\":
                    self.i += 1
                delimiter = self.s[self.i]
                self.i += 1
                self.regex(delimiter)
                while self.peek() in ("I", "M"):
                    self.i += 1
            elif char in ("+", "~") and _ > 0:
                self.i += 1
                while self.peek().isdigit():
                    self.i += 1
            else:
                return
            if self.peek() != ",":
                return
            self.i += 1

    def run(self) -> str | None:
        worst: str | None = None
        while self.i < len(self.s):
            char = self.peek()
            if char in " \t\n;}":
                self.i += 1
                continue
            if char == "#":
                self.skip_to_line_end()
                continue
            self.address()
            while self.peek() in (" ", "\t", "!"):
                self.i += 1
            command = self.peek()
            self.i += 1
            if command in ("e",):
                return "exec"
            if command in ("w", "W"):
                worst = "write"
                self.skip_to_line_end()
            elif command == "s":
                delimiter = self.s[self.i]
                if delimiter in "\n\\":
                    return "an s command with an unusual delimiter"
                self.i += 1
                self.regex(delimiter)
                self.text(delimiter)
                flags = ""
                while self.peek() and self.peek() not in ";\n}":
                    flags += self.peek()
                    self.i += 1
                if "e" in flags:
                    return "exec"
                if "w" in flags:
                    worst = "write"
                elif re.sub(r"[gpiImM0-9 \t]", "", flags):
                    return f"s command flags {flags!r}"
            elif command == "y":
                delimiter = self.s[self.i]
                self.i += 1
                self.text(delimiter)
                self.text(delimiter)
            elif command in ("a", "i", "c", "r", "R", "b", "t", "T", ":", "v"):
                if command in "btT:v":
                    while self.peek() and self.peek() not in ";\n":
                        self.i += 1
                else:
                    self.skip_to_line_end()
            elif command in ("q", "Q", "l", "L"):
                while self.peek().isdigit() or self.peek() == " ":
                    self.i += 1
            elif command == "{" or command in _SED_SIMPLE:
                continue
            else:
                return f"command {command!r}"
        return worst


def _awk(program: str, args: tuple[str, ...], hidden: list[str], visible: list[str]) -> None:
    code: list[str] = []
    index = 0
    while index < len(args):
        word = args[index]
        index += 1
        if word == "--":
            if index < len(args) and not code:
                code.append(args[index])
            break
        if word in ("-f", "--file", "-i", "--include", "-l", "--load", "-E", "--exec") or word.startswith(
            ("-f", "--file=", "-i", "--include=", "-l", "--load=", "-E")
        ):
            hidden.append(f"{program} {word.split('=', 1)[0]} loads a program or extension from a file")
            index += 0 if ("=" in word or (len(word) > 2 and not word.startswith("--"))) else 1
        elif word in ("-e", "--source"):
            code.append(args[index] if index < len(args) else "")
            index += 1
        elif word.startswith("--source="):
            code.append(word.split("=", 1)[1])
        elif word in ("-v", "-F", "--assign", "--field-separator"):
            index += 1
        elif word.startswith("-"):
            continue
        elif not code:
            code.append(word)
            break
        else:
            break
    for text in code:
        if re.search(r"\bsystem\s*\(|(?<!\|)\|(?!\|)|@load|@include", text):
            hidden.append(f"the {program} program runs commands (system(), pipes)")
        if re.search(r"\bprintf?\b[^;{}\n]*>", text):
            visible.append(f"the {program} program writes files (print > file)")
        if re.search(r"\bgetline\b[^;{}\n]*<", text):
            visible.append(f"the {program} program reads files it names (getline < file)")


def _git(args: tuple[str, ...], hidden: list[str], visible: list[str]) -> None:
    index = 0
    while index < len(args) and args[index].startswith("-"):
        word = args[index]
        name, has_value, _ = word.partition("=")
        if name in ("-c",):
            setting = args[index + 1] if index + 1 < len(args) else ""
            _git_setting(setting, visible)
            index += 2
            continue
        if name == "--config-env":
            visible.append("git --config-env sets configuration from the environment, which can run commands")
        elif name == "--exec-path" and has_value:
            hidden.append("git --exec-path= runs git's subcommands from a directory of the command's choosing")
        elif name not in _GIT_GLOBAL_WITH_VALUE and name not in _GIT_GLOBAL_FLAGS:
            hidden.append(f"git option {name} is not understood")
        index += 2 if name in _GIT_GLOBAL_WITH_VALUE and not has_value else 1
    if index >= len(args):
        return
    sub, rest = args[index], args[index + 1 :]
    if sub == "grep" and (
        any(_long(w, "--open-files-in-pager") for w in rest)
        or any(letter == "O" for letter, _ in _short_options(rest, "eABCfm"))
    ):
        visible.append("git grep -O/--open-files-in-pager runs a program of the command's choosing")
    if any(_long(w, "--output") for w in rest):
        visible.append(f"git {sub} --output writes a file")
    if any(_long(w, "--ext-diff", "--textconv") for w in rest):
        hidden.append("git --ext-diff/--textconv runs diff programs from configuration")
    if any(_long(w, "--upload-pack", "--receive-pack", "--exec") for w in rest) or (
        sub == "clone" and any(letter == "u" for letter, _ in _short_options(rest, "obujc"))
    ):
        visible.append("git runs a program of the command's choosing (--upload-pack, --receive-pack, --exec)")
    if sub == "clone":
        for setting in _option_values(rest, "c", ("--config",), "obujc"):
            _git_setting(setting, visible)
    if sub in ("clone", "init") and any(_long(w, "--template") for w in rest):
        visible.append(f"git {sub} --template copies hooks from a directory of the command's choosing (they run)")
    if sub == "rebase" and (
        any(_long(w, "--exec", "--interactive") for w in rest)
        or any(letter in "xi" for letter, _ in _short_options(rest, "xsX"))
    ):
        hidden.append("git rebase --exec/-i runs commands or an editor")
    if (sub == "bisect" and rest[:1] == ("run",)) or (sub == "submodule" and "foreach" in rest):
        visible.append(f"git {sub} runs a command line given as text")
    if sub in ("difftool", "mergetool", "instaweb", "send-email", "filter-branch", "daemon", "web--browse"):
        hidden.append(f"git {sub} runs programs from its options or configuration")
    if sub == "config" and not any(
        w in ("--get", "--get-all", "--get-regexp", "--list", "-l", "get", "list") or w.startswith("--show")
        for w in rest
    ):
        visible.append("git config may change settings that make later git commands run programs")


def _git_setting(setting: str, visible: list[str]) -> None:
    key = setting.split("=", 1)[0].lower()
    if not _GIT_SAFE_SETTING.match(key):
        visible.append(f"git -c {key} can make git run commands")


def _tar(program: str, args: tuple[str, ...], visible: list[str]) -> None:
    """The programs tar runs and an extract to absolute paths, as :mod:`.tar_words` reads the line (``-I`` runs one
    for GNU tar; plain ``tar`` may be GNU's)."""
    words = read_tar(args, program)
    if words.programs:
        visible.append("tar runs a program of the command's choosing (--to-command, -I, --checkpoint-action)")
    if words.extracts and words.absolute_names:
        visible.append("tar -P extracts to the absolute paths the archive names (anywhere, start-up files included)")


_SSH_HIDDEN_SETTINGS = re.compile(
    r"^\s*(proxycommand|localcommand|permitlocalcommand|knownhostscommand|match|include|pkcs11provider"
    r"|securitykeyprovider)",
    re.I,
)


def _ssh(program: str, args: tuple[str, ...], hidden: list[str], visible: list[str]) -> None:
    with_value = "bcDEeFIiJLlmOoPpQRSWw" if program == "ssh" else "cDFiJloPSsBRX"
    for letter, _ in _short_options(args, with_value):
        if letter == "F":
            hidden.append(f"{program} -F reads a configuration file that can run commands")
        elif letter == "I" and program == "ssh":
            visible.append("ssh -I loads a PKCS#11 library (runs its code)")
        elif letter == "S" and program != "ssh":
            visible.append(f"{program} -S runs a program of the command's choosing")
    for value in _option_values(args, "o", (), with_value):
        if _SSH_HIDDEN_SETTINGS.match(value):
            visible.append(f"{program} -o {value.split('=', 1)[0].split()[0]} runs a command")
