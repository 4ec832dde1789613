"""Commands that change what later commands run: a tool's configuration set from the command line, a crontab
installed.

Why: ``npm config set script-shell /tmp/x`` makes every later ``npm run`` run ``/tmp/x``; ``pip config set
global.index-url …`` makes every later ``pip install`` fetch from elsewhere; ``gh alias set --shell`` defines a
command; ``crontab jobs.txt`` schedules whatever the file says. Writing those files directly is high risk (the
sensitive targets); doing it through the tool was not. Each is high here, so no wildcard allow settles it.
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


def config_change(program: str, args: tuple[str, ...]) -> str | None:
    """Why ``program args`` changes what later commands run, else None."""
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
