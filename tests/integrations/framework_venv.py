"""A cached virtualenv per outside framework, for frameworks the test interpreter cannot host.

aury-agent needs Python >= 3.13 while the suite runs on 3.11 too: its tests run the example in a venv of its
own (found or installed with uv), with the framework and Reviewer's headless dependencies, built once under
``~/.cache/reviewer-app-tests/`` and reused while the requirements stay the same. Reviewer itself comes from
``PYTHONPATH`` (this tree), never installed there.

The venv is made and filled by uv when the dev environment has it (as a user on uv would), else by pip. On a new
machine (a CI runner) pip took 276 s of wall and ~100 s of CPU for aury-agent's venv (~200 packages) and
compiled every module; uv takes ~17 s and ~5 s, and only what the example imports is compiled, by running the
example's ``--help`` once with bytecode writing on, so its processes do not compile it again each time even where
``PYTHONDONTWRITEBYTECODE`` is set.
"""

from __future__ import annotations

import glob
import hashlib
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from tests.helpers.shared_cache import installing

CACHE = Path(os.environ.get("REVIEWER_TEST_CACHE", Path.home() / ".cache" / "reviewer-app-tests"))
REPO_ROOT = Path(__file__).resolve().parents[2]
_GUI_ONLY = ("pyside6", "desktop-notifier", "qasync")


def headless_requirements() -> list[str]:
    """Reviewer's runtime dependencies minus the window's (Qt, notifications)."""
    project = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]
    return [req for req in project["dependencies"] if not req.lower().startswith(_GUI_ONLY)]


def find_python(minor: str) -> str | None:
    """An interpreter of Python ``minor`` (e.g. ``"3.13"``): this one, one on PATH, pyenv's, or uv's."""
    if f"{sys.version_info.major}.{sys.version_info.minor}" == minor:
        return sys.executable
    candidates = [
        shutil.which(f"python{minor}"),
        *sorted(glob.glob(os.path.expanduser(f"~/.pyenv/versions/{minor}*/bin/python"))),
    ]
    for candidate in candidates:
        if candidate and _runs(candidate, minor):
            return candidate
    uv = _uv()
    if uv is not None:
        for args in (["python", "find", minor], ["python", "install", minor], ["python", "find", minor]):
            done = subprocess.run([uv, *args], check=False, capture_output=True, text=True, timeout=600)
            found = done.stdout.strip().splitlines()
            if args[1] == "find" and done.returncode == 0 and found and _runs(found[-1], minor):
                return found[-1]
    return None


def _runs(python: str, minor: str) -> bool:
    try:
        done = subprocess.run(
            [python, "-c", "import sys; print(sys.version_info[:2])"],
            check=False,
            capture_output=True,
            text=True,
            timeout=60,
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0 and done.stdout.strip() == str(tuple(int(p) for p in minor.split(".")))


def framework_python(name: str, requirements: list[str], *, minor: str, example: Path | None = None) -> str:
    """The ``python`` of a cached venv with ``requirements`` and Reviewer's headless dependencies (skips the
    test, naming why, when no Python ``minor`` can be found or the packages cannot be installed); ``example``, a
    script whose module-level imports are compiled once the venv is filled (it must answer ``--help``)."""
    wanted = sorted([*requirements, *headless_requirements()])
    key = hashlib.sha256("\n".join([minor, *wanted]).encode()).hexdigest()[:12]
    venv = CACHE / f"venv-{name}-py{minor}-{key}"
    python = venv / "bin" / "python"
    if (venv / ".ready").exists() and python.exists():
        return str(python)
    with installing(venv):
        return _create(name, minor, wanted, venv, python, example)


def _uv() -> str | None:
    uv = shutil.which("uv") or str(Path(sys.executable).with_name("uv"))
    return uv if Path(uv).exists() else None


def _create(name: str, minor: str, wanted: list[str], venv: Path, python: Path, example: Path | None) -> str:
    if (venv / ".ready").exists() and python.exists():  # another test worker made it while this one waited
        return str(python)
    base = find_python(minor)
    if base is None:
        pytest.skip(f"{name} needs Python {minor}: none found on PATH, in pyenv or through uv")
    shutil.rmtree(venv, ignore_errors=True)
    CACHE.mkdir(parents=True, exist_ok=True)
    uv = _uv()
    if uv is not None:
        subprocess.run([uv, "venv", "-q", "--python", base, str(venv)], check=True, timeout=300)
        install = [uv, "pip", "install", "-q", "--python", str(python), *wanted]
    else:
        subprocess.run([base, "-m", "venv", str(venv)], check=True, timeout=300)
        install = [str(python), "-m", "pip", "install", "-q", *wanted]
    done = subprocess.run(install, check=False, capture_output=True, text=True, timeout=1800)
    if done.returncode != 0:
        pytest.skip(f"{name} does not install on Python {minor}: {done.stderr.strip().splitlines()[-1:]}")
    if example is not None:
        _compile_imports(python, example)
    (venv / ".ready").write_text("\n".join(wanted) + "\n")
    return str(python)


def _compile_imports(python: Path, example: Path) -> None:
    """Run ``example --help`` once with bytecode writing on: what it imports at module level is compiled into the
    venv (a failure here is the test's to meet, with its own message, when it runs the example)."""
    env = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), env.get("PYTHONPATH")]))
    subprocess.run(
        [str(python), str(example), "--help"], check=False, capture_output=True, env=env, cwd=REPO_ROOT, timeout=300
    )
