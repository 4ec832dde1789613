"""Where things live, and the application context passed to every part (no import-time state)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

import platformdirs

APP_NAME = "reviewer-app"
APP_AUTHOR = "Reviewer"
DB_ENV = "REVIEWER_DB"


def data_dir() -> Path:
    return Path(platformdirs.user_data_dir(APP_NAME, APP_AUTHOR))


def config_dir() -> Path:
    return Path(platformdirs.user_config_dir(APP_NAME, APP_AUTHOR))


def default_database_path() -> Path:
    """The user's database: ``~/.local/share/reviewer-app/reviewer.db`` on Linux."""
    return data_dir() / "reviewer.db"


def resolve_database(cli_value: str | None = None) -> str:
    """``--db`` beats ``REVIEWER_DB`` beats the default path. Returns a path or URL."""
    if cli_value:
        return cli_value
    env = os.environ.get(DB_ENV)
    if env:
        return env
    return str(default_database_path())


def default_agents_file() -> Path:
    return config_dir() / "agents.toml"


def default_workspaces_dir() -> Path:
    return data_dir() / "workspaces"


@dataclass
class AppContext:
    """What every part of the app is given instead of reaching for globals."""

    database: str
    reviewer: str | None = None
    agents_file: Path | None = None
    workspaces_dir: Path = field(default_factory=default_workspaces_dir)
