"""What a shell command will touch: the paths it writes, deletes and reads, the hosts it reaches, the code it
runs from elsewhere. Read from the parsed command (``domain.shell``) and the program table of this module;
facts about each path come from ``preview.facts`` within the preview's time budget.

Nothing is executed. What a program does with paths it finds itself (a build writing ``target/``, a test suite
writing anywhere) is not modelled: the preview names the program that runs, not everything it may do.
"""

from __future__ import annotations

import json
import posixpath
from typing import Any
from urllib.parse import urlsplit

from reviewer_app.domain.file_reach import glob_matches, has_wildcard
from reviewer_app.domain.recursive_reads import recursive_read
from reviewer_app.domain.risk import NETWORK_PROGRAMS
from reviewer_app.domain.shell import (
    INTERPRETERS,
    MAX_SCRIPT_DEPTH,
    ParsedCommand,
    ShellFlag,
    SimpleCommand,
    effective_argv,
    find_exec_commands,
    inline_scripts,
    parse_command,
)
from reviewer_app.domain.tar_words import read_tar
from reviewer_app.domain.working_directory import Places, placed
from reviewer_app.preview.facts import Budget, count_tree, find_repository, path_facts, read_workspace_text, resolve
from reviewer_app.preview.git_push import push_effects, url_host
from reviewer_app.preview.remote_touches import bucket_touches, kubectl_does, terraform_touches

KINDS = ("writes", "deletes", "reads", "network", "executes")
_READERS = frozenset({"cat", "head", "tail", "less", "more", "wc", "sort", "uniq", "cut", "diff", "file", "stat",
                      "jq", "md5sum", "sha256sum", "base64", "xxd", "od", "strings", "nl", "tac", "bat"})  # fmt: skip
_SEARCHERS = frozenset({"grep", "egrep", "fgrep", "rg", "ag"})
_REGISTRIES = {
    "npm": "registry.npmjs.org", "pnpm": "registry.npmjs.org", "yarn": "registry.yarnpkg.com",
    "npx": "registry.npmjs.org", "pip": "pypi.org", "pip3": "pypi.org", "uv": "pypi.org", "cargo": "crates.io",
    "go": "proxy.golang.org", "gem": "rubygems.org",
}  # fmt: skip
_CLOUD_CLIENTS = {"gh": "api.github.com", "aws": "the AWS APIs", "gcloud": "the Google Cloud APIs",
                  "gsutil": "the Google Cloud APIs",
                  "az": "the Azure APIs", "heroku": "api.heroku.com", "vercel": "api.vercel.com"}  # fmt: skip
_INSTALLS = frozenset({"install", "i", "add", "ci", "update", "sync", "get", "build", "dlx", "exec", "run", "lock"})
_INLINE_CODE = {"python": "-c", "python3": "-c", "python2": "-c", "pypy3": "-c", "node": "-e", "nodejs": "-e",
                "perl": "-e", "ruby": "-e", "php": "-r", "deno": "eval", "bun": "-e"}  # fmt: skip
_VALUE_FLAGS = {
    "cp": {"-t", "-S"}, "mv": {"-t", "-S"}, "curl": {"-o", "--output",
    "-X", "-H", "-d", "--data", "--data-binary", "-F", "-T", "--upload-file", "-u", "-x", "-A", "-e"},
    "wget": {"-O", "--output-document", "-P"}, "ssh": {"-i", "-p", "-L", "-R", "-o", "-l", "-F", "-J"},
    "scp": {"-P", "-i", "-o"}, "rsync": {"-e", "--exclude", "--include"}, "sed": {"-e", "-f"},
    "grep": {"-e", "-f", "-A", "-B", "-C", "--include", "--exclude", "-m"}, "rg": {"-g", "-t", "-A", "-B", "-C",
    "-e"}, "find": set(), "head": {"-n", "-c"}, "tail": {"-n", "-c"}, "sort": {"-o", "-k", "-t"},
    "chmod": set(), "mkdir": {"-m"}, "unzip": {"-d"}, "zip": set(), "python": {"-m", "-W", "-X"},
    "node": {"-r", "--require"}, "docker": {"-v", "--volume", "-e", "--env", "-p", "--name", "-w", "-u", "--user",
    "--network", "--entrypoint", "-f", "-t"}, "make": {"-C", "-f", "-j"},
}  # fmt: skip


def _operands(program: str, args: tuple[str, ...]) -> list[str]:
    """The non-option words of ``args`` (a flag's value in the next word skipped); ``--`` ends the options."""
    with_value = _VALUE_FLAGS.get(program, set())
    found: list[str] = []
    index = 0
    while index < len(args):
        word = args[index]
        if word == "--":
            found.extend(args[index + 1 :])
            break
        if word.startswith("-") and len(word) > 1:
            index += 2 if word in with_value else 1
            continue
        found.append(word)
        index += 1
    return found


def _option(args: tuple[str, ...], names: tuple[str, ...]) -> str | None:
    """The value of the first of ``names`` in ``args`` (``-o F``, ``--output=F``, ``-oF``)."""
    for index, word in enumerate(args):
        for name in names:
            if word == name and index + 1 < len(args):
                return args[index + 1]
            if name.startswith("--") and word.startswith(name + "="):
                return word.split("=", 1)[1]
            if not name.startswith("--") and word.startswith(name) and len(word) > len(name) and len(name) == 2:
                return word[len(name) :]
    return None


def _short(args: tuple[str, ...]) -> str:
    return "".join(w[1:] for w in args if w.startswith("-") and not w.startswith("--") and len(w) > 1)


class EffectCollector:
    """Gathers effect items for one call; ``paths`` remembers every path looked at (for staleness)."""

    def __init__(self, cwd: str | None, budget: Budget) -> None:
        self.cwd = cwd
        self.here: str | None = None
        """Where the simple command being read runs when a ``cd`` moved it (None: ``cwd``)."""
        self.unplaced: str | None = None
        """A change of directory before it that cannot be told (``cd "$D"``): its relative paths are unknown."""
        self.budget = budget
        self.items: dict[str, list[dict[str, Any]]] = {kind: [] for kind in KINDS}
        self.notes: list[str] = []
        self.paths: set[str] = set()

    def path(self, kind: str, written: str, by: str, *, recursive: bool = False, **extra: Any) -> dict[str, Any]:
        from reviewer_app.preview.facts import add_git_facts

        if self.unplaced is not None and not written.startswith(("/", "~")):
            item: dict[str, Any] = {
                "path": written,
                "note": f"runs after {self.unplaced}, a directory Reviewer cannot tell: where it leads is unknown",
            }
        else:  # relative to where the shell is then (``cd ~/.ssh && cat config`` reads ~/.ssh/config)
            item = path_facts(placed(written, self.here), self.cwd, self.budget, recursive=recursive)
            item["path"] = written
            if has_wildcard(written) and not item.get("note"):
                self._pattern(item, written)
        add_git_facts(item)
        item["by"] = by
        item.update(extra)
        if isinstance(item.get("resolved"), str):
            self.paths.add(item["resolved"])
        self.items[kind].append(item)
        return item

    def _pattern(self, item: dict[str, Any], written: str) -> None:
        """A wildcard is no path: say what it matches now (as the shell would expand it there), or that it matches
        nothing (the shell then passes it as written), instead of "does not exist"."""
        base = self.here or self.cwd
        found = glob_matches(placed(written, self.here), self.cwd)
        item.pop("exists", None)
        item["pattern"] = True
        if found is None:
            item["matches"] = None  # more than the check reads
            return
        relative = not written.startswith(("/", "~")) and base is not None
        item["matches"] = sorted(posixpath.relpath(path, base) if relative else path for path in found)
        resolved = item.get("resolved")
        if isinstance(resolved, str) and not has_wildcard(posixpath.dirname(resolved)):
            self.paths.add(posixpath.dirname(resolved))  # a new match changes its directory: the preview is stale
        self.paths.update(path for path in found if path.startswith("/"))

    def host(self, host: str | None, by: str, **extra: Any) -> None:
        if host:
            self.items["network"].append({"host": host, "by": by, **extra})

    def execute(self, what: str, by: str, **extra: Any) -> None:
        self.items["executes"].append({"what": what, "by": by, **extra})

    def note(self, text: str) -> None:
        if text not in self.notes:
            self.notes.append(text)

    # -- shell ---------------------------------------------------------------------------------------------

    def command(self, command: str, depth: int = 0) -> None:
        parsed = parse_command(command)
        if not parsed.understood:
            self.note("the command could not be parsed: its effects are not computed")
            return
        self._downloads_run(parsed)
        saved = self.here, self.unplaced
        chain = all(connector == "&&" for connector in parsed.connectors)  # ``cd x && a && b``: a and b run in x
        chain = chain and all(simple.context == "" for simple in parsed.commands)
        places = Places(self.here or self.cwd, sequential=chain)  # every directory the command may be in
        start = places.directories[0]
        for simple in parsed.commands:
            self.unplaced = places.unplaced or saved[1]
            for place in places.directories:
                self.here = saved[0] if place == start else place
                self.simple(simple, depth)
            places.follow(simple)
        self.here, self.unplaced = saved

    def _downloads_run(self, parsed: ParsedCommand) -> None:
        """``curl … | sh``, ``sh -c "$(curl …)"``, ``bash <(curl …)``: code from a host runs here."""
        piped = ShellFlag.PIPE_INTO_INTERPRETER in parsed.flags
        substituted = bool(parsed.flags & {ShellFlag.SUBSTITUTION, ShellFlag.PROCESS_SUBSTITUTION})
        if not (piped or substituted):
            return
        downloads = [c for c in parsed.commands if c.argv and posixpath.basename(c.argv[0]) in NETWORK_PROGRAMS]
        interpreters = [c.program for c in parsed.commands if c.program in INTERPRETERS]
        if not downloads or not interpreters:
            return
        for download in downloads:
            for url in (word for word in download.argv[1:] if "://" in word):
                self.execute(
                    f"code downloaded from {urlsplit(url).hostname} runs in {interpreters[-1]}",
                    parsed.source,
                    source=url,
                    host=urlsplit(url).hostname,
                )

    def simple(self, simple: SimpleCommand, depth: int) -> None:
        text = " ".join(simple.argv) or "(redirection)"
        for redirection in simple.redirections:
            if redirection.harmless or redirection.operator in ("<<", "<<-", "<<<"):
                continue
            kind = "writes" if redirection.writes else "reads"
            how = "appends to" if ">>" in redirection.operator else ("replaces" if kind == "writes" else "reads")
            written = (
                f"{redirection.fd if redirection.fd is not None else ''}{redirection.operator}{redirection.target}"
            )
            self.path(kind, redirection.target, f"{text} {written}".strip(), how=how)
        real = effective_argv(simple.argv)
        if not real:
            return
        wrappers = simple.argv[: len(simple.argv) - len(real)]
        if any(posixpath.basename(word) in ("sudo", "doas", "su", "pkexec") for word in wrappers):
            self.execute("runs as another user (root by default)", text)
        program, args = posixpath.basename(real[0]), real[1:]
        handler = getattr(self, "_" + program.replace("-", "_"), None)
        if handler is not None and program in _HANDLED:
            handler(program, args, text, depth)
        elif program in _READERS:
            for operand in _operands(program, args):
                self.path("reads", operand, text)
        elif program in _SEARCHERS:
            operands = _operands(program, args)
            pattern_given = _option(args, ("-e", "-f")) is not None
            recursive = "r" in _short(args) or "R" in _short(args) or program in ("rg", "ag")
            for operand in operands[0 if pattern_given else 1 :]:
                self.path("reads", operand, text, recursive=recursive)
        elif program in _INLINE_CODE and _INLINE_CODE[program] in args:
            position = args.index(_INLINE_CODE[program]) + 1
            code = args[position] if position < len(args) else ""
            self.execute(f"inline {program} code given on the command line", text, code=code)
        elif program in ("python", "python3", "node", "ruby", "perl", "php", "deno", "bun"):
            self._runs_script(program, args, text)
        if program == "npx" or (program in _REGISTRIES and args and args[0] in _INSTALLS):
            self._package_manager(program, args, text)
        self._judged_reads(program, args, text)
        if program in _CLOUD_CLIENTS:
            self.host(_CLOUD_CLIENTS[program], text, note="uses this machine's stored credentials for it")
        if program in ("aws", "gsutil"):
            bucket_touches(self, program, args, text)
        elif program == "terraform":
            terraform_touches(self, args, text)
        if program == "find":
            self._find(args, text)
        if depth < MAX_SCRIPT_DEPTH:
            for script in inline_scripts(program, args, simple.stdin_texts):
                self.execute(f"a shell script given to {program}", text, code=script)
                self.command(script, depth + 1)

    def _runs_script(self, program: str, args: tuple[str, ...], text: str) -> None:
        operands = _operands("python" if program.startswith("python") else program, args)
        module = _option(args, ("-m",))
        if module:
            self.execute(f"runs the module {module} with {program}", text)
        elif operands:
            self.path("reads", operands[0], text, role="script")
            self.execute(f"runs the local file {operands[0]} with {program}", text, source=operands[0])

    def _package_manager(self, program: str, args: tuple[str, ...], text: str) -> None:
        sub = args[0] if args else ""
        if program in ("npm", "pnpm", "yarn") and sub in ("run", "exec"):
            return  # the script's own command is shown by _npm_script
        index = _option(args, ("-i", "--index-url"))
        host = url_host(index) if index else _REGISTRIES[program]
        self.host(host, text, note="package registry")
        if program in ("npm", "pnpm", "yarn", "npx") and "--ignore-scripts" not in args:
            self.execute("the install scripts of the downloaded packages", text)
        elif program in ("pip", "pip3", "uv"):
            self.execute("the build code of source packages, if any are built", text)

    # -- programs that write, delete or reach out ----------------------------------------------------------

    def _rm(self, program: str, args: tuple[str, ...], text: str, depth: int) -> None:
        recursive = bool({"r", "R"} & set(_short(args))) or "--recursive" in args
        for operand in _operands(program, args):
            self.path("deletes", operand, text, recursive=recursive)

    def _rmdir(self, program: str, args: tuple[str, ...], text: str, depth: int) -> None:
        for operand in _operands(program, args):
            self.path("deletes", operand, text)

    _unlink = _rmdir

    def _shred(self, program: str, args: tuple[str, ...], text: str, depth: int) -> None:
        kind = "deletes" if "u" in _short(args) else "writes"
        for operand in _operands(program, args):
            self.path(kind, operand, text, how="overwritten with random data")

    def _cp(self, program: str, args: tuple[str, ...], text: str, depth: int) -> None:
        operands = _operands(program, args)
        target = _option(args, ("-t", "--target-directory"))
        sources = operands if target else operands[:-1]
        destination = target or (operands[-1] if len(operands) > 1 else None)
        recursive = bool({"r", "R", "a"} & set(_short(args)))
        for source in sources:
            self.path("deletes" if program == "mv" else "reads", source, text, recursive=recursive,
                      **({"how": f"moved to {destination}"} if program == "mv" else {}))  # fmt: skip
        if destination:
            self.path("writes", destination, text, how="replaced if it is a file")

    _mv = _cp

    def _ln(self, program: str, args: tuple[str, ...], text: str, depth: int) -> None:
        operands = _operands(program, args)
        if len(operands) >= 2:
            self.path("writes", operands[-1], text, how=f"a link to {operands[0]}")

    _install = _cp

    def _touch(self, program: str, args: tuple[str, ...], text: str, depth: int) -> None:
        for operand in _operands(program, args):
            self.path("writes", operand, text, how={"mkdir": "created", "tee": "replaced"}.get(program, program))

    _mkdir = _truncate = _tee = _touch

    def _chmod(self, program: str, args: tuple[str, ...], text: str, depth: int) -> None:
        recursive = "R" in _short(args) or "--recursive" in args
        operands = _operands(program, args)
        for operand in operands[1:]:
            self.path("writes", operand, text, recursive=recursive, how=f"{operands[0]} ({program})")

    _chown = _chgrp = _chmod

    def _sed(self, program: str, args: tuple[str, ...], text: str, depth: int) -> None:
        if "i" not in _short(args) and not any(a.startswith("--in-place") for a in args):
            operands = _operands(program, args)
            for operand in operands[0 if _option(args, ("-e", "-f")) else 1 :]:
                self.path("reads", operand, text)
            return
        operands = _operands(program, args)
        for operand in operands[0 if _option(args, ("-e", "-f")) else 1 :]:
            self.path("writes", operand, text, how="edited in place")

    def _dd(self, program: str, args: tuple[str, ...], text: str, depth: int) -> None:
        for word in args:
            if word.startswith("of="):
                self.path("writes", word[3:], text, how="raw bytes")
            elif word.startswith("if="):
                self.path("reads", word[3:], text)

    def _curl(self, program: str, args: tuple[str, ...], text: str, depth: int) -> None:
        urls = [word for word in args if "://" in word]
        for url in urls:
            self.host(urlsplit(url).hostname, text, url=url)
        output = _option(args, ("-o", "--output") if program == "curl" else ("-O", "--output-document"))
        named_by_url = "-O" in args or "--remote-name" in args or "O" in _short(args)
        if output and output != "-":
            self.path("writes", output, text, how="the download")
        elif urls and output is None and (program == "wget" or named_by_url):
            name = posixpath.basename(urlsplit(urls[0]).path) or "index.html"
            self.path("writes", name, text, how="the download")
        for option in ("-d", "--data", "--data-binary", "-T", "--upload-file", "-F"):
            value = _option(args, (option,))
            if value and ("@" in value or option in ("-T", "--upload-file")):
                self.path("reads", value.split("@", 1)[-1], text, how="uploaded")

    _wget = _curl

    def _ssh(self, program: str, args: tuple[str, ...], text: str, depth: int) -> None:
        operands = _operands(program, args)
        if program == "ssh":
            if operands:
                self.host(operands[0].rsplit("@", 1)[-1], text)
                if len(operands) > 1:
                    self.execute(f"a command on {operands[0]}", text, code=" ".join(operands[1:]))
            return
        for number, operand in enumerate(operands):
            host = url_host(operand) if ":" in operand and not operand.startswith("/") else None
            if host:
                self.host(host, text, path=operand.split(":", 1)[1])
            elif number == len(operands) - 1:
                self.path("writes", operand, text, recursive=False, how="copied into")
            else:
                self.path("reads", operand, text, recursive=True)
        if program == "rsync" and "--delete" in args and operands and not url_host(operands[-1] or ""):
            self.path("deletes", operands[-1], text, recursive=True, how="files the source does not have")

    _scp = _rsync = _ssh

    def _tar(self, program: str, args: tuple[str, ...], text: str, depth: int) -> None:
        words = read_tar(args, program)  # the reading the risk engine judges (``domain.tar_words``)
        for runs in words.programs:
            self.execute(f"tar runs {runs}", text)
        if not words.creates:
            for archive in _files(words.archive_names):
                self.path("reads", archive, text)
            for into in words.extracts_into if words.extracts else ():
                self.path("writes", into, text, how=f"files extracted from {_archives(words.archive_names)}")
            for compared in words.directories if "d" in words.modes else ():
                self.path("reads", compared, text, how="files compared with the archive")
            return
        for archive in _files(words.archive_names):
            self.path("writes", archive, text, how="the archive")
        for read in words.reads:  # each read where the `-C` before it leads
            saved = self.here
            self.here = placed(read.directory, self.here or self.cwd) if read.directory else saved
            try:
                self.path("reads", read.word, text, recursive=True)
            finally:
                self.here = saved
        for listed in words.lists:
            if listed.word == "-":
                self.note(f"{program} -T -: it also archives the files a list on its input names, not known in advance")
            else:
                self.path("reads", listed.word, text, how="the list of files to archive")

    _gtar = _bsdtar = _gnutar = _tar

    def _judged_reads(self, program: str, args: tuple[str, ...], text: str) -> None:
        """What the risk engine judged the program reads whole (``7z a``, ``rclone copy``, ``jar cf``), where the
        program's own reading above did not show it, and the files a list names (``cpio -o``, ``zip -@``)."""
        extracts = program.startswith("7z") and args[:1] in (("x",), ("e",))  # into -oDIR: a write, as unzip -d
        judged = recursive_read(program, args) if program != "ln" and not extracts else None  # ln: no read
        if judged is None:
            return
        items = (*self.items["reads"], *self.items["writes"])
        shown = {item.get("resolved") for item in items}
        for read in judged.operands:
            if self.unplaced is not None or resolve(placed(read, self.here), self.cwd) not in shown:
                self.path("reads", read, text, recursive=True, how="read whole")
        told = " ".join([*self.notes, *(str(item.get("how", "")) for item in items)])
        if judged.listed is not None and "list" not in told:
            self.note(f"{program} also reads the files a list names ({judged.listed}), not known in advance")

    def _unzip(self, program: str, args: tuple[str, ...], text: str, depth: int) -> None:
        operands = _operands(program, args)
        if operands:
            self.path("reads", operands[0], text)
        if "l" not in _short(args):
            self.path("writes", _option(args, ("-d",)) or ".", text, how="files extracted")

    def _zip(self, program: str, args: tuple[str, ...], text: str, depth: int) -> None:
        operands = _operands(program, args)
        if operands:
            self.path("writes", operands[0], text, how="the archive")
        for operand in operands[1:]:
            self.path("reads", operand, text, recursive="r" in _short(args))

    def _git(self, program: str, args: tuple[str, ...], text: str, depth: int) -> None:
        index = 0
        directory = self.here or self.cwd
        while index < len(args) and args[index].startswith("-"):
            if args[index] == "-C" and index + 1 < len(args):
                directory = resolve(args[index + 1], self.here or self.cwd)
            index += 2 if args[index] in ("-C", "-c") else 1
        if index >= len(args):
            return
        sub, rest = args[index], args[index + 1 :]
        output = _option(rest, ("--output",))
        if output:
            self.path("writes", output, text, how="git's output")
        if sub in ("push", "fetch", "pull", "clone", "ls-remote"):
            self._git_network(sub, rest, text, directory)
        elif sub == "clean" and ("f" in _short(rest) or "--force" in rest):
            self.note("git clean: which untracked files it deletes is not computed (it depends on .gitignore)")
        elif sub == "reset" and "--hard" in rest:
            self.note("git reset --hard: the local changes it discards are not computed")

    def _git_network(self, sub: str, rest: tuple[str, ...], text: str, directory: str | None) -> None:
        if sub == "clone":
            operands = _operands("git", rest)
            if operands:
                self.host(url_host(operands[0]) or operands[0], text, url=operands[0])
                name = operands[1] if len(operands) > 1 else posixpath.basename(operands[0]).removesuffix(".git")
                self.path("writes", name, text, how="the cloned repository")
            return
        repo = find_repository(directory) if directory else None
        if repo is None:
            self.note(f"git {sub}: no repository found here, so the remote is not known")
            return
        try:
            if sub == "push":
                self.items["network"].extend(push_effects(repo, rest, self.budget))
                return
            operands = [word for word in rest if not word.startswith("-")]
            remote = operands[0] if operands else "origin"
            url = repo.get_config().get((b"remote", remote.encode()), b"url").decode()
            self.host(url_host(url) or remote, text, remote=remote, url=url)
        except KeyError:
            self.note(f"git {sub}: the remote is not configured in this repository")
        finally:
            repo.close()

    def _docker(self, program: str, args: tuple[str, ...], text: str, depth: int) -> None:
        if not args:
            return
        if args[0] in ("run", "create", "pull", "build", "push"):
            operands = _operands("docker", args[1:])
            if args[0] != "build" and operands:
                image = operands[0]
                first = image.split("/", 1)[0]
                host = first if "/" in image and ("." in first or ":" in first) else "docker.io"
                self.host(host, text, image=image)
                if args[0] in ("run", "create"):
                    self.execute(f"the container image {image}", text)
        for index, word in enumerate(args):
            if word in ("-v", "--volume") and index + 1 < len(args) and ":" in args[index + 1]:
                host_path = args[index + 1].split(":", 1)[0]
                if host_path.startswith(("/", ".", "~", "$")):
                    self.path("writes", host_path, text, how="mounted into the container")

    _podman = _docker

    def _kubectl(self, program: str, args: tuple[str, ...], text: str, depth: int) -> None:
        context = _option(args, ("--context",))
        does = kubectl_does(args)
        note = (f"{does}; " if does else "") + "the kubeconfig is not read (it holds credentials)"
        self.host(f"the cluster of kube context {context}" if context else "the cluster of the current kube context",
                  text, note=note)  # fmt: skip
        manifest = _option(args, ("-f", "--filename"))
        if manifest and "://" not in manifest:
            self.path("reads", manifest, text, recursive=True)

    def _npm(self, program: str, args: tuple[str, ...], text: str, depth: int) -> None:
        operands = _operands(program, args)
        if not operands:
            return
        script = None
        if operands[0] in ("run", "run-script") and len(operands) > 1:
            script = operands[1]
        elif operands[0] in ("test", "t", "start"):
            script = {"t": "test"}.get(operands[0], operands[0])
        elif program == "yarn" and operands[0] not in _INSTALLS | {"remove", "install"}:
            script = operands[0]
        if script is not None:
            self._package_script(script, text)

    _pnpm = _yarn = _npm

    def _package_script(self, script: str, text: str) -> None:
        item = self.path("reads", "package.json", text, role="scripts")
        source = None
        if item.get("exists") and item.get("inside_workspace") and self.cwd is not None:
            content, _why = read_workspace_text(self.cwd, item["resolved"], 1_000_000)
            try:
                scripts = json.loads(content or "{}").get("scripts") or {}
            except (ValueError, AttributeError):
                scripts = {}
            source = scripts.get(script) if isinstance(scripts, dict) else None
        if isinstance(source, str):
            self.execute(f"package.json script {script}", text, code=source, source="package.json")
        else:
            self.execute(f"package.json script {script} (not found in the workspace's package.json)", text)

    def _make(self, program: str, args: tuple[str, ...], text: str, depth: int) -> None:
        makefile = _option(args, ("-f",)) or "Makefile"
        directory = _option(args, ("-C",))
        path = posixpath.join(directory, makefile) if directory else makefile
        self.path("reads", path, text, role="makefile")
        targets = [word for word in _operands(program, args) if "=" not in word] or ["(the first target)"]
        self.execute(f"the recipes of make target(s) {', '.join(targets)} from {path}", text, source=path)

    def _find(self, args: tuple[str, ...], text: str) -> None:
        roots = []
        for word in args:
            if word.startswith("-") or word in ("(", "!", ")"):
                break
            roots.append(word)
        roots = roots or ["."]
        deleting = "-delete" in args or any(
            command.program in ("rm", "unlink", "rmdir", "shred") for command in find_exec_commands(args)
        )
        name = _option(args, ("-name",))
        kind = _option(args, ("-type",))
        for root in roots:
            if not deleting:
                self.path("reads", root, text, recursive=True)
                continue
            item = self.path("deletes", root, text, how="what find matches under it")
            resolved = item.get("resolved")
            if item.get("kind") == "directory" and isinstance(resolved, str):
                count, cut = count_tree(resolved, self.budget, name_pattern=name, kind=kind)
                item["files"] = count
                item["at_least"] = cut
                item["how"] = "entries matching " + " ".join(
                    part for part in (f"-name {name}" if name else "", f"-type {kind}" if kind else "") if part
                ) if (name or kind) else "every entry under it"  # fmt: skip
        for command in find_exec_commands(args):
            if command.program not in ("rm", "unlink", "rmdir", "shred"):
                self.execute(f"{' '.join(command.argv)} on every match", text)

    def _xargs(self, program: str, args: tuple[str, ...], text: str, depth: int) -> None:
        self.note("xargs: the paths it acts on come from its input and are not known in advance")


_HANDLED = frozenset({
    "rm", "rmdir", "unlink", "shred", "cp", "mv", "ln", "install", "touch", "mkdir", "truncate", "tee", "chmod",
    "chown", "chgrp", "sed", "dd", "curl", "wget", "ssh", "scp", "rsync", "tar", "gtar", "bsdtar", "gnutar",
    "unzip", "zip", "git", "docker", "podman", "kubectl", "npm", "pnpm", "yarn", "make", "xargs",
})  # fmt: skip


def _files(names: tuple[str, ...]) -> list[str]:
    """The archives that are files ("-" is standard input or output)."""
    return [name for name in names if name != "-"]


def _archives(names: tuple[str, ...]) -> str:
    """The archives an extract reads, in words (none named: its input or tar's default device)."""
    return ", ".join(names) or "standard input"
