"""Issue 25 triage: the runtime's own workspaces lie inside Reviewer's data directory, which is sensitive as a whole;
an agent's ordinary file there (the demo's NOTES.md, a test folder) was high risk and needed a double key press.
The workspaces are the agents' ground: only the table's targets are sensitive there, and the rest of the data
directory (the database, the audit key) stays sensitive, also through a symlink planted in a workspace."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from reviewer_app.config import data_dir
from reviewer_app.domain.risk import assess_path, is_sensitive_path


@pytest.fixture
def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    place = data_dir() / "workspaces" / "ses_demo_1"
    place.mkdir(parents=True)
    return place


def test_an_agents_file_in_a_runtime_workspace_is_not_sensitive(workspace: Path) -> None:
    assert not is_sensitive_path("NOTES.md", str(workspace))
    assert not is_sensitive_path("tests/", str(workspace))
    assert not is_sensitive_path(str(workspace / "config.py"))
    assert not assess_path("NOTES.md", str(workspace), writes=True).high


def test_the_table_and_the_rest_of_the_data_directory_stay_sensitive(workspace: Path) -> None:
    assert is_sensitive_path(".env", str(workspace)) and is_sensitive_path("id_rsa", str(workspace))
    assert is_sensitive_path(str(data_dir() / "reviews.db"))
    assert is_sensitive_path("../../audit.key", str(workspace))
    os.symlink(data_dir() / "reviews.db", workspace / "innocent.txt")
    assert is_sensitive_path("innocent.txt", str(workspace))
