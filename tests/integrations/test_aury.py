"""aury-agent (the real package, in a Python 3.13 venv of its own) under review: every decision kind it can
carry, decided by ``reviewer-app decide`` in another process while the example agent waits (issue 24)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from tests.integrations.framework_venv import framework_python
from tests.integrations.support import (
    NOTE_DECISIONS,
    NOTES_READ,
    NOTES_WRITTEN,
    assert_one_waiver_on_record,
    decide_elsewhere,
    decide_in_turn,
)

REPO_ROOT = Path(__file__).resolve().parents[2]
RELEASES = ["0.0.23", "0.0.13"]  # the newest, and the release the reference design is from


@pytest.fixture(scope="session", params=RELEASES)
def aury_python(request: pytest.FixtureRequest) -> str:
    return framework_python(
        "aury", [f"aury-agent=={request.param}"], minor="3.13", example=REPO_ROOT / "examples" / "aury_agent.py"
    )


@pytest.mark.slow
@pytest.mark.timeout(300)
@pytest.mark.asyncio
async def test_every_decision_reaches_aury_and_the_tool_runs_as_decided(
    aury_python: str, db_path: Path, tmp_path: Path, subprocess_env: dict[str, str]
) -> None:
    work = tmp_path / "work"
    agent = await asyncio.create_subprocess_exec(
        aury_python, str(REPO_ROOT / "examples" / "aury_agent.py"), "--db", str(db_path), "--workdir", str(work),
        env=subprocess_env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    steps = [
        *NOTE_DECISIONS,
        ("ask_user", {"question": "Which folder should the notes go to?"}, ["respond", "--message", "notes"]),
        ("confirm", {"action": "delete the cache"}, ["reject", "--message", "keep the cache"]),
    ]
    await decide_in_turn(db_path, steps, env=subprocess_env)
    out, err = await asyncio.wait_for(agent.communicate(), 60)
    assert agent.returncode == 0, err.decode()
    report = json.loads(out.decode().strip().splitlines()[-1])
    # side effects: approve ran once, edit ran with the edit, reject and steer never ran, the waived repeat ran
    assert report["written"] == NOTES_WRITTEN
    assert sorted(p.name for p in work.iterdir()) == ["a.txt", "b.txt", "s.txt"]
    assert report["model_read"] == [*NOTES_READ, "notes", "rejected by reviewer: keep the cache"]
    await assert_one_waiver_on_record(db_path, 8)


def test_an_unknown_aury_release_is_refused_with_a_clear_message(
    aury_python: str, subprocess_env: dict[str, str]
) -> None:
    import subprocess

    script = (
        "import importlib.metadata as m\n"
        "m.version = lambda name: '0.9.0'\n"
        "import reviewer_app.integrations.versions as v\n"
        "v.version = m.version\n"
        "from reviewer_app.integrations.aury import reviewer_middleware\n"
        "try:\n    reviewer_middleware(db='x.db')\nexcept v.UnsupportedFrameworkVersion as exc:\n    print(exc)\n"
    )
    done = subprocess.run([aury_python, "-c", script], env=subprocess_env, capture_output=True, text=True, check=True)
    assert "supports aury-agent >=0.0.13,<0.0.24; 0.9.0 is installed" in done.stdout


@pytest.mark.asyncio
async def test_the_backend_fills_aurys_hitl_slot_and_a_decision_from_elsewhere_reads_back(
    aury_python: str, db_path: Path, subprocess_env: dict[str, str]
) -> None:
    script = (
        "import asyncio, dataclasses, json, sys\n"
        "from aury.agents.backends import Backends\n"
        "from aury.agents.backends.hitl import HITLBackend\n"
        "from reviewer_app.hitl import SQLHITLBackend\n"
        "async def main():\n"
        "    backend = SQLHITLBackend(sys.argv[1])\n"
        "    assert isinstance(backend, HITLBackend)\n"
        "    slots = dataclasses.replace(Backends.create_default(), hitl=backend)\n"
        "    await slots.hitl.create(hitl_id='h-aury', hitl_type='ask_user', session_id='s', invocation_id='i',\n"
        "                            data={'question': 'Which folder?'}, tool_name='ask_user')\n"
        "    print('created', flush=True)\n"
        "    record = await slots.hitl.wait_for_response('h-aury', timeout=60)\n"
        "    print(json.dumps(record['user_response']))\n"
        "    await backend.aclose()\n"
        "asyncio.run(main())\n"
    )
    aury = await asyncio.create_subprocess_exec(
        aury_python, "-c", script, str(db_path),
        env=subprocess_env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    assert aury.stdout is not None
    assert (await asyncio.wait_for(aury.stdout.readline(), 60)).strip() == b"created"
    await decide_elsewhere(db_path, "h-aury", "respond", "--message", "notes", env=subprocess_env)
    out, err = await asyncio.wait_for(aury.communicate(), 60)
    assert aury.returncode == 0, err.decode()
    assert json.loads(out)["message"] == "notes"
