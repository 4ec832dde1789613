"""Sensitive targets: the one table of files whose read or write is high risk, and how the operator extends it.

Why: a private key read leaks it to the model; a write to a shell start-up file, a git hook or an agent host's
own settings runs code later or switches Reviewer off. Such a call is never settled by a default or by a
wildcard, prefix or glob rule (``domain.rules.evaluate`` sees it as high risk), only by an exact rule naming that
very path, or by a person.

The table is :data:`SENSITIVE_TARGETS` (gitignore-style patterns, matched with ``pathspec`` against the path as
given, the absolute path and the path with symlinks followed). The operator adds patterns in Reviewer's config
file (``$REVIEWER_CONFIG``, else ``config.toml`` in the user config directory)::

    [sensitive]
    paths = ["vault/", "*.sqlite", "/srv/prod/**"]

Reviewer's own configuration directory, data directory and database (``$REVIEWER_DB``) are always sensitive.

Public API: ``SENSITIVE_TARGETS``, ``is_sensitive_path(path, cwd=None)``, ``operator_patterns()``,
``config_file()``, ``real_path(path)``.
"""

from __future__ import annotations

import functools
import os
import posixpath
import tomllib
from pathlib import Path
from typing import Any

CONFIG_ENV = "REVIEWER_CONFIG"

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
    ("**/.config/fish/config.fish", "shell start-up file"),
    # the agent hosts' own settings, hooks and MCP configuration (a write can switch Reviewer off)
    (".claude/", "Claude Code settings and hooks"),
    (".claude.json", "Claude Code settings"),
    (".claude.json.*", "Claude Code settings"),
    (".mcp.json", "MCP server configuration"),
    (".codex/", "Codex settings and hooks"),
    (".gemini/", "Gemini CLI settings"),
    (".cursor/", "Cursor settings and MCP configuration"),
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
)


def config_file() -> Path:
    """Reviewer's config file: ``$REVIEWER_CONFIG``, else ``config.toml`` in the user config directory."""
    configured = os.environ.get(CONFIG_ENV)
    if configured:
        return Path(configured)
    from reviewer_app.config import config_dir

    return config_dir() / "config.toml"


def operator_patterns() -> tuple[str, ...]:
    """The operator's ``[sensitive] paths`` plus Reviewer's own directories and database (absolute, anchored)."""
    path = config_file()
    try:
        stamp = path.stat().st_mtime_ns
    except OSError:
        stamp = None
    return _operator_patterns(str(path), stamp, os.environ.get("REVIEWER_DB", ""))


@functools.lru_cache(maxsize=8)
def _operator_patterns(path: str, stamp: int | None, database: str) -> tuple[str, ...]:
    from reviewer_app.config import config_dir, data_dir

    patterns = [_anchored(str(config_dir())) + "/", _anchored(str(data_dir())) + "/"]
    if database and "://" not in database:
        patterns.append(_anchored(os.path.abspath(os.path.expanduser(database))))
        patterns.append(_anchored(os.path.abspath(os.path.expanduser(database))) + "-*")  # -wal, -shm, backups
    if stamp is not None:
        patterns.extend(_read_config(Path(path)))
    return tuple(patterns)


def _anchored(absolute: str) -> str:
    escaped = "".join("\\" + c if c in "*?[]\\!#" else c for c in absolute.replace(os.sep, "/"))
    return "/" + escaped.lstrip("/")


def _read_config(path: Path) -> list[str]:
    """``[sensitive] paths`` from the config file; an unreadable file adds nothing (the table still applies)."""
    try:
        document: dict[str, Any] = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return []
    section = document.get("sensitive")
    paths = section.get("paths") if isinstance(section, dict) else None
    if not isinstance(paths, list):
        return []
    return [entry for entry in paths if isinstance(entry, str) and entry.strip()]


@functools.lru_cache(maxsize=8)
def _spec(extra: tuple[str, ...]) -> Any:
    import pathspec  # imported on first use, to keep the engine's import cheap for short-lived hook processes

    return pathspec.GitIgnoreSpec.from_lines([pattern for pattern, _ in SENSITIVE_TARGETS] + list(extra))


def real_path(path: str, _hops: int = 0) -> str | None:
    """``path`` (absolute) with every symlink followed, as the kernel would open it; a missing tail is kept as
    written, a dangling link is followed to where it points. None when it cannot be resolved (a loop, a
    component that is not a directory, ``..`` after a missing directory, a NUL byte)."""
    if _hops > 40:
        return None
    try:
        return os.path.realpath(path, strict=True)
    except FileNotFoundError:
        pass
    except (OSError, ValueError):
        return None
    parent, name = os.path.split(path)
    if not name or name in (".", "..") or parent == path:
        return None
    if os.path.islink(path):  # a dangling symlink: the file is created where it points
        try:
            target = os.readlink(path)
        except OSError:
            return None
        return real_path(os.path.normpath(os.path.join(parent, target)), _hops + 1)
    real_parent = real_path(parent, _hops + 1)
    return None if real_parent is None else os.path.join(real_parent, name)


def _forms(path: str, cwd: str | None) -> list[str]:
    """The path as given, absolute (against ``cwd``, ``~`` expanded) and with symlinks followed."""
    path = path.replace("\\", "/")
    forms = [posixpath.normpath(path)]
    if path.startswith("~"):
        path = os.path.expanduser(path)
    absolute: str | None = None
    if path.startswith("/"):
        absolute = posixpath.normpath(path)
    elif cwd and cwd.replace("\\", "/").startswith("/"):
        absolute = posixpath.normpath(posixpath.join(cwd.replace("\\", "/"), path))
    if absolute is not None:
        forms.append(absolute)
        real = real_path(absolute)
        if real is not None:
            forms.append(real)
    return forms


def is_sensitive_path(path: str, cwd: str | None = None) -> bool:
    """A key, credential store, browser profile, start-up file, agent host setting, Reviewer's own file or git
    hook/config, or a pattern the operator added: by the path as given, its absolute form or its real target."""
    spec = _spec(operator_patterns())
    for form in _forms(path, cwd):
        relative = form.lstrip("~").lstrip("/")
        while relative.startswith("../"):
            relative = relative[3:]
        if relative not in ("", ".", "..") and spec.match_file(relative):
            return True
    return False
