"""The table of sensitive targets (:mod:`.sensitive` matches it): files whose read or write is high risk.

Why a module of its own: the hook's lean path (:mod:`.lean_risk`) reads the table to tell a plain word that can
never name such a file, without ``pathspec``, ``typing`` or the config file's loader. Data, and the pure tests both
need (standard library only).
"""

from __future__ import annotations

import os

TYPE_CHECKING = False  # no ``typing`` at run time: the hook's lean path loads this module
if TYPE_CHECKING:
    from collections.abc import Iterable

CONFIG_ENV = "REVIEWER_CONFIG"
"""The environment variable naming Reviewer's config file (else ``config.toml`` in the user config directory)."""

# (pattern, what it protects): one row per target, gitignore syntax ("x/" a directory at any depth, "**/a/b" a
# path at any depth, "*.pem" a name anywhere).
SENSITIVE_TARGETS: tuple[tuple[str, str], ...] = (
    # private keys and certificates
    ("id_rsa*", "SSH private key"),
    ("id_dsa*", "SSH private key"),
    ("id_ecdsa*", "SSH private key"),
    ("id_ed25519*", "SSH private key"),
    ("*.pem", "key or certificate"),
    ("*.key", "private key"),
    ("*.p12", "key store"),
    ("*.pfx", "key store"),
    ("*.keystore", "key store"),
    ("*.jks", "key store"),
    (".ssh/", "SSH keys and configuration"),
    ("authorized_keys", "SSH access list"),
    # credential stores
    (".aws/", "AWS credentials"),
    ("**/.config/gcloud/", "Google Cloud credentials"),
    (".azure/", "Azure credentials"),
    (".kube/", "Kubernetes credentials"),
    ("**/.docker/config.json", "Docker registry credentials"),
    (".netrc", "login credentials"),
    (".pgpass", "PostgreSQL passwords"),
    (".npmrc", "npm token"),
    (".pypirc", "PyPI token"),
    (".git-credentials", "git credentials"),
    ("**/.config/gh/hosts.yml", "GitHub CLI token"),
    (".env", "environment secrets"),
    (".env.*", "environment secrets"),
    ("credentials", "credentials"),
    ("credentials.json", "credentials"),
    ("secrets.yaml", "secrets"),
    ("secrets.yml", "secrets"),
    (".gnupg/", "GnuPG keys"),
    ("**/.local/share/keyrings/", "desktop keyring"),
    ("**/Library/Keychains/", "macOS keychain"),
    (".password-store/", "pass password store"),
    (".vault-token", "HashiCorp Vault token"),
    ("credentials.toml", "credentials"),
    ("**/.terraform.d/credentials.tfrc.json", "Terraform Cloud token"),
    (".s3cfg", "S3 credentials"),
    (".boto", "Google Cloud Storage credentials"),
    ("**/.config/rclone/rclone.conf", "rclone remotes' credentials"),
    ("**/.config/containers/auth.json", "container registry credentials"),
    ("**/.m2/settings.xml", "Maven repository credentials"),
    ("**/.gradle/gradle.properties", "Gradle repository credentials"),
    (".databrickscfg", "Databricks token"),
    # what a shell or process keeps that often holds a pasted token
    (".bash_history", "shell history (tokens typed on the command line)"),
    (".zsh_history", "shell history (tokens typed on the command line)"),
    ("**/.local/share/fish/fish_history", "shell history (tokens typed on the command line)"),
    (".python_history", "interpreter history"),
    (".psql_history", "database client history"),
    (".mysql_history", "database client history"),
    (".node_repl_history", "interpreter history"),
    ("/proc/*/environ", "a process's environment (tokens, keys)"),
    ("/proc/*/task/*/environ", "a process's environment (tokens, keys)"),
    # browser profiles (cookies, saved passwords)
    (".mozilla/", "Firefox profile"),
    ("**/.config/google-chrome/", "Chrome profile"),
    ("**/.config/chromium/", "Chromium profile"),
    ("**/.config/BraveSoftware/", "Brave profile"),
    ("**/.config/microsoft-edge/", "Edge profile"),
    ("**/Library/Application Support/Google/Chrome/", "Chrome profile"),
    ("**/Library/Application Support/Firefox/", "Firefox profile"),
    ("**/Library/Safari/", "Safari profile"),
    # shell start-up files (a write runs code at the next shell)
    (".bashrc", "shell start-up file"),
    (".bash_profile", "shell start-up file"),
    (".bash_login", "shell start-up file"),
    (".bash_logout", "shell start-up file"),
    (".profile", "shell start-up file"),
    (".zshrc", "shell start-up file"),
    (".zshenv", "shell start-up file"),
    (".zprofile", "shell start-up file"),
    (".zlogin", "shell start-up file"),
    ("**/.config/fish/", "shell start-up files"),
    (".bashrc.d/", "shell start-up files"),
    # files other programs run code from when they start, or that put a program on the PATH
    ("**/.config/git/", "git configuration (can run commands)"),
    ("**/.config/autostart/", "programs run at login"),
    ("**/.config/systemd/user/", "user services (run at login)"),
    ("**/Library/LaunchAgents/", "programs run at login"),
    ("**/.local/bin/", "programs on the PATH (shadow commands)"),
    ("**/site-packages/*.pth", "Python start-up code"),
    ("**/dist-packages/*.pth", "Python start-up code"),
    ("usercustomize.py", "Python start-up code"),
    ("sitecustomize.py", "Python start-up code"),
    ("**/.ipython/*/startup/", "IPython start-up code"),
    (".vimrc", "editor start-up file (runs commands)"),
    ("**/.config/nvim/", "editor start-up files (run commands)"),
    (".Rprofile", "R start-up file"),
    (".curlrc", "curl's default options (files to send or write)"),
    (".wgetrc", "wget's default options (files to send or write)"),
    ("**/.config/gh/config.yml", "GitHub CLI aliases (run shell commands)"),
    (".yarnrc.yml", "Yarn configuration (yarnPath runs code)"),
    ("**/.cargo/config.toml", "Cargo configuration (runs a wrapper program)"),
    ("**/.cargo/config", "Cargo configuration (runs a wrapper program)"),
    # the agent hosts' own settings, hooks and MCP configuration (a write can switch Reviewer off)
    (".claude/", "Claude Code settings and hooks"),
    (".claude.json", "Claude Code settings"),
    (".claude.json.*", "Claude Code settings"),
    (".mcp.json", "MCP server configuration"),
    (".codex/", "Codex settings and hooks"),
    (".gemini/", "Gemini CLI settings"),
    (".cursor/", "Cursor settings and MCP configuration"),
    (".qwen/", "Qwen Code settings and hooks"),
    (".factory/", "Factory settings and hooks"),
    (".copilot/", "Copilot CLI settings and hooks"),
    ("**/.github/hooks/", "Copilot CLI project hooks"),
    (".opencode/", "OpenCode plugins"),
    ("**/.config/opencode/", "OpenCode settings and plugins"),
    ("opencode.json", "OpenCode settings"),
    ("opencode.jsonc", "OpenCode settings"),
    ("**/.vscode/settings.json", "VS Code settings"),
    ("**/.vscode/tasks.json", "VS Code tasks (run code)"),
    ("**/.vscode/mcp.json", "VS Code MCP configuration"),
    ("**/.config/Code/User/", "VS Code user settings"),
    # Reviewer's own configuration and database
    ("**/.config/reviewer-app/", "Reviewer's configuration"),
    ("**/.local/share/reviewer-app/", "Reviewer's database"),
    ("**/Library/Application Support/reviewer-app/", "Reviewer's database"),
    # git: configuration and hooks run code
    (".gitconfig", "git configuration"),
    ("**/.git/config", "git configuration (can run commands)"),
    ("**/.git/hooks/", "git hooks (run code)"),
    ("**/.husky/", "git hooks (run code, through core.hooksPath)"),
    ("**/.githooks/", "git hooks (run code, through core.hooksPath)"),
    (".pre-commit-config.yaml", "pre-commit hooks (run code at each commit)"),
)

READ_SECRETS: tuple[str, ...] = tuple(
    pattern for pattern, _ in SENSITIVE_TARGETS[: [pattern for pattern, _ in SENSITIVE_TARGETS].index(".bashrc")]
)
"""The rows above the shell start-up files: keys, credential stores and browser profiles, whose mere reading leaks
a secret. A directory read recursively is judged by these (a start-up file or a git hook is sensitive to write)."""


def read_config_patterns(path: str) -> list[str]:
    """``[sensitive] paths`` from the config file; an unreadable file adds nothing (the table still applies)."""
    import tomllib  # only when the file exists

    try:
        with open(path, encoding="utf-8") as handle:
            document = tomllib.loads(handle.read())
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return []
    section = document.get("sensitive")
    paths = section.get("paths") if isinstance(section, dict) else None
    if not isinstance(paths, list):
        return []
    return [entry for entry in paths if isinstance(entry, str) and entry.strip()]


def place_may_be_sensitive(place: str, patterns: Iterable[str]) -> bool:
    """Whether some gitignore ``pattern`` could match a path under the directory ``place`` (absolute, normalised)
    because of a directory on the way (``~/.ssh``, ``repo/.git``): then a bare file name there may be sensitive
    although the name alone is not (``cat config`` in ~/.ssh). True when unsure (an escape, ``**`` between
    directories); a pattern that only names files is the name's own test, not this one. Pure: no file system."""
    parts = [part.casefold() for part in place.split("/") if part]
    for pattern in patterns:
        if "\\" in pattern:
            return True
        pieces = [piece.casefold() for piece in pattern.strip().lstrip("!").split("/") if piece]
        if "**" in pieces[1:-1]:
            return True
        core = [piece for piece in pieces if piece != "**"]
        if core and any(_run_matches(core, parts[start:]) for start in range(len(parts))):
            return True
    return False


def _run_matches(pieces: list[str], parts: list[str]) -> bool:
    """Whether ``parts`` begin with ``pieces``, or with their start when the parts run out first (the rest could
    be the file named there)."""
    for piece, part in zip(pieces, parts, strict=False):
        if piece == part:
            continue
        if not any(mark in piece for mark in "*?["):
            return False
        from fnmatch import fnmatchcase  # rare: a glob in a directory's place (``id_rsa*``)

        if not fnmatchcase(part, piece):
            return False
    return True


HOME_ROOTS = ("/home", "/Users", "/root")
"""Where home directories live: a directory on the way to one is read with every user's keys."""


def holds_a_home(real: str) -> bool:
    """Whether the directory ``real`` (symlinks resolved) is the root, a home directory (``$HOME`` or under
    :data:`HOME_ROOTS`) or a directory on the way to one: a recursive read of it takes in the keys there."""
    homes = [*HOME_ROOTS]
    home = os.environ.get("HOME", "")
    if home.startswith("/"):
        try:
            homes.append(os.path.realpath(home))
        except (OSError, ValueError):
            homes.append(home)
    prefix = real.rstrip("/") + "/"
    return real == "/" or any(place == real or place.startswith(prefix) for place in homes)
