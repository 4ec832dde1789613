"""``reviewer-app --self-test``: the whole loop on a throw-away database, for installers and smoke checks."""

from __future__ import annotations

import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from reviewer_app.domain.decisions import Decision, DecisionKind, args_digest
from reviewer_app.domain.hitl import HITLRecord
from reviewer_app.domain.runs import RunState
from reviewer_app.hitl import SQLHITLBackend, shown_arguments
from reviewer_app.runtime.agents import AgentCatalog
from reviewer_app.runtime.demo import self_test_script
from reviewer_app.runtime.runner import Runtime


@dataclass(frozen=True)
class SelfTestResult:
    ok: bool
    summary: str


async def self_test(timeout: float = 30.0) -> SelfTestResult:
    """Run a scripted agent to its approval request, approve it, check the tool ran and the run finished."""
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="reviewer-self-test-") as tmp:
        root = Path(tmp)
        backend = SQLHITLBackend(root / "self-test.db", reviewer="self-test")
        runtime = Runtime(backend, AgentCatalog(), workspaces_dir=root / "workspaces")
        try:
            await runtime.start(recover=False)
            invocation_id = await runtime.start_run("demo", "self-test", script=self_test_script())
            deadline = time.monotonic() + timeout
            pending: list[HITLRecord] = []
            while not pending:
                if time.monotonic() > deadline:
                    return SelfTestResult(False, "self-test FAILED: no approval request appeared")
                token = backend.feed.token()
                pending = await backend.get_pending_by_invocation(invocation_id)
                if not pending:
                    await backend.feed.wait(token, 0.5)
            request = pending[0]
            digest = args_digest(shown_arguments(request))
            await runtime.decide_and_resume(request["hitl_id"], Decision(DecisionKind.APPROVE, args_sha256=digest))
            record = await runtime.wait_for_run(invocation_id, timeout=max(deadline - time.monotonic(), 1.0))
            if record.state != RunState.DONE.value:
                return SelfTestResult(False, f"self-test FAILED: run ended {record.state} ({record.error})")
            written = Path(record.workspace or "") / "self-test.txt"
            if not written.is_file() or written.read_text() != "approved\n":
                return SelfTestResult(False, f"self-test FAILED: the approved tool did not write {written.name}")
            report = await backend.verify_audit()
            if not report.ok or report.rows_checked != 1:
                return SelfTestResult(False, f"self-test FAILED: audit log {report}")
        except Exception as exc:
            return SelfTestResult(False, f"self-test FAILED: {type(exc).__name__}: {exc}")
        finally:
            await runtime.stop()
            await backend.aclose()
    elapsed = time.perf_counter() - started
    return SelfTestResult(
        True, f"self-test ok: run -> approval request -> approve -> tool ran -> done, audit verified ({elapsed:.2f} s)"
    )
