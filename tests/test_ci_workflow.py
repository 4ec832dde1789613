"""The CI workflow runs what the README promises: `make test` and `make lint` everywhere, the installers on Linux.

``make lint`` validates the workflow files themselves (GitHub's schema, and actionlint when installed); this
checks that what they run matches the documented commands, so the two cannot drift apart silently.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

REPO = Path(__file__).resolve().parent.parent
WORKFLOWS = REPO / ".github" / "workflows"


def load(name: str) -> dict[str, Any]:
    document: dict[Any, Any] = yaml.safe_load((WORKFLOWS / name).read_text(encoding="utf-8"))
    document["on"] = document.pop(True, document.get("on"))  # YAML 1.1 reads the key `on` as True
    return document


def commands(job: dict[str, Any]) -> list[str]:
    return [line.strip() for step in job["steps"] for line in str(step.get("run", "")).splitlines()]


def test_ci_runs_on_every_push_and_pull_request() -> None:
    triggers = load("ci.yml")["on"]
    assert "push" in triggers and "pull_request" in triggers
    assert not (triggers["push"] or {}).get("branches"), "every branch"


def test_tests_and_lint_run_on_three_systems_and_three_pythons() -> None:
    job = load("ci.yml")["jobs"]["test"]
    matrix = job["strategy"]["matrix"]
    assert {system.split("-")[0] for system in matrix["os"]} == {"ubuntu", "windows", "macos"}
    assert matrix["python"] == ["3.11", "3.12", "3.13"]
    assert job["strategy"]["fail-fast"] is False
    run = commands(job)
    assert any(line.startswith("xvfb-run") and line.endswith("make test") for line in run), "Linux: under Xvfb"
    assert "make test" in run and "make lint" in run
    assert any("-m reviewer_app.ui.startup.platform_deps --install" in line for line in run), "make run's own check"


def test_linux_also_smoke_tests_the_installers_and_a_fresh_machine() -> None:
    jobs = load("ci.yml")["jobs"]
    assert jobs["package"]["runs-on"].startswith("ubuntu")
    assert {"make package", "make package-test"} <= set(commands(jobs["package"]))
    fresh = commands(jobs["fresh-machine"])
    assert any(line.startswith("packaging/fresh_machine_check.sh") for line in fresh)
    assert (REPO / "packaging" / "fresh_machine_check.sh").stat().st_mode & 0o111, "the script is executable"


def test_the_readme_documents_the_commands_ci_runs() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    for command in ("make test", "make lint", "make package-test", "fresh_machine_check.sh", "ci.yml"):
        assert command in readme, command


def test_make_lint_checks_both_workflow_files() -> None:
    makefile = (REPO / "Makefile").read_text(encoding="utf-8")
    listed = next(line for line in makefile.splitlines() if line.startswith("WORKFLOWS :="))
    assert sorted(listed.split(":=", 1)[1].split()) == sorted(
        f".github/workflows/{path.name}" for path in WORKFLOWS.glob("*.yml")
    )


@pytest.mark.skipif(shutil.which("check-jsonschema", path=str(Path(sys.executable).parent)) is None, reason="dev extra")
def test_the_workflows_match_githubs_schema() -> None:
    tool = shutil.which("check-jsonschema", path=str(Path(sys.executable).parent))
    assert tool is not None
    files = sorted(str(path) for path in WORKFLOWS.glob("*.yml"))
    result = subprocess.run(
        [tool, "--builtin-schema", "vendor.github-workflows", *files], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_fresh_machine_check_sees_a_window_listed_before_a_long_tree(tmp_path: Path) -> None:
    """The check's window probe, run as the script runs it (``set -euo pipefail``), against an X server whose
    window tree is long: ``xwininfo … | grep -q`` failed there whenever grep stopped reading at the first match
    and the writer died of SIGPIPE, so a window that was open was reported missing (a flaky CI stage)."""
    script = (REPO / "packaging" / "fresh_machine_check.sh").read_text(encoding="utf-8")
    (probe,) = [line.strip() for line in script.splitlines() if "opened=yes" in line]
    fake = tmp_path / "xwininfo"
    fake.write_text(
        "#!/bin/sh\necho '     0x400009 \"Reviewer\": ()  1x1+0+0  +0+0'\n"
        'i=0; while [ $i -lt 4000 ]; do echo "     0x2002$i (has no name): ()  1x1+0+0  +0+0"; i=$((i+1)); done\n',
        encoding="utf-8",
    )
    fake.chmod(0o755)
    shell = f'set -euo pipefail\nopened=""\n{probe.replace("; break", "")}\necho "opened=$opened"\n'
    env = {"PATH": f"{tmp_path}:/usr/bin:/bin"}
    for _ in range(5):
        result = subprocess.run(["bash", "-c", shell], env=env, capture_output=True, text=True, check=True)
        assert result.stdout.strip() == "opened=yes"
