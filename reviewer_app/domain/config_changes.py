"""Commands that change which program a tool runs, now or later: a configuration set from the command line, an
option that names the program or a configuration file, a crontab installed.

Why: ``npm config set script-shell /tmp/x`` makes every later ``npm run`` run ``/tmp/x``; ``pip config set
global.index-url …`` makes every later ``pip install`` fetch from elsewhere; ``gh alias set --shell`` defines a
command; ``crontab jobs.txt`` schedules whatever the file says. Writing those files directly is high risk (the
sensitive targets); doing it through the tool was not. ``npm run test --script-shell=/tmp/x``, ``go build
-toolexec=/tmp/x`` and ``cargo build --config build.rustc-wrapper=…`` run another program than the one a prefix
rule (``npm run test:*``) reads. Each is high here, so no wildcard or prefix allow settles it.
"""

from __future__ import annotations

# program: the words that set its configuration (its first non-option words)
_SETTERS: dict[str, tuple[tuple[str, ...], ...]] = {
    "npm": (("config", "set"), ("set",), ("config", "edit")),
    "pnpm": (("config", "set"), ("set",)),
    "yarn": (("config", "set"),),
    "pip": (("config", "set"), ("config", "edit")),
    "pip3": (("config", "set"), ("config", "edit")),
    "gh": (("alias", "set"), ("alias", "import"), ("config", "set")),
    "poetry": (("config",),),
    "bundle": (("config", "set"),),
    "cargo": (("config", "set"),),
    "uv": (("config", "set"),),
}
_LOOKS = frozenset({"--list", "--unset", "-l", "--show", "--get", "--describe", "--show-sources"})


# program: options (also written ``--name=value``) whose value names the program it runs or a configuration file
_PROGRAM_OPTIONS: dict[str, tuple[str, ...]] = {
    **dict.fromkeys(
        ("npm", "pnpm", "yarn", "npx"),
        ("--script-shell", "--userconfig", "--globalconfig", "--node-options", "--shell", "--call", "-c"),
    ),
    "go": ("-toolexec", "--toolexec", "-exec", "--exec", "-overlay", "--overlay"),
    "cargo": ("--config",),
}


def config_change(program: str, args: tuple[str, ...]) -> str | None:
    """Why ``program args`` changes which program it or a later command runs, else None."""
    options = _PROGRAM_OPTIONS.get(program, ())
    for word in args:
        name = word.split("=", 1)[0]
        if (
            name in options
            or (program == "pnpm" and name.startswith("--config."))
            or (program == "go" and "-extld" in word)
        ):
            return f"{program} {name} names the program it runs or a configuration file, which a rule cannot show"
    words = [word for word in args if not word.startswith("-")]
    for setter in _SETTERS.get(program, ()):
        if tuple(words[: len(setter)]) == setter and not (
            program == "poetry" and (len(words) < 3 or _LOOKS & set(args))
        ):
            return f"{program} {' '.join(setter)} changes what later {program} commands run or fetch"
    if program == "conda" and words[:1] == ["config"] and {"--set", "--add", "--append", "--prepend"} & set(args):
        return "conda config changes what later conda commands fetch"
    if program == "crontab" and not {"-l", "-r", "-e"} & set(args):
        return "crontab installs scheduled commands from a file or its input, which Reviewer cannot check"
    return None


__all__ = ["config_change"]
