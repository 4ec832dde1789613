"""The database thread: jobs run in order, results and errors reach the caller's loop, cancelled jobs never run, a
closed thread refuses work, and the loop's bell is closed with the thread."""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Callable
from typing import Any

import pytest

from reviewer_app.hitl.db_thread import DatabaseThread


class _OtherLoop(asyncio.SelectorEventLoop):
    """Any loop that is not asyncio's own (qasync's, uvloop's): results come back with ``call_soon_threadsafe``."""


LOOPS: dict[str, Callable[[], asyncio.AbstractEventLoop]] = {
    "asyncio": asyncio.new_event_loop,
    "other": _OtherLoop,
}


def _run(make_loop: Callable[[], asyncio.AbstractEventLoop], main: Any) -> Any:
    loop = make_loop()
    try:
        return loop.run_until_complete(main)
    finally:
        loop.close()


def _open_fds() -> set[str]:
    return set(os.listdir("/proc/self/fd"))


@pytest.fixture(params=sorted(LOOPS))
def make_loop(request: pytest.FixtureRequest) -> Callable[[], asyncio.AbstractEventLoop]:
    return LOOPS[request.param]


@pytest.fixture
def db_thread() -> Any:
    thread = DatabaseThread("test-db")
    yield thread
    thread.shutdown()


def test_jobs_run_in_order_on_one_thread_and_results_come_back_in_order(
    db_thread: DatabaseThread, make_loop: Callable[[], asyncio.AbstractEventLoop]
) -> None:
    ran: list[tuple[int, str]] = []

    def job(i: int) -> int:
        ran.append((i, threading.current_thread().name))
        return i * i

    async def main() -> list[int]:
        futures = [db_thread.submit(lambda i=i: job(i)) for i in range(200)]  # type: ignore[misc]
        return list(await asyncio.gather(*futures))

    assert _run(make_loop, main()) == [i * i for i in range(200)]
    assert ran == [(i, "test-db") for i in range(200)]


def test_a_jobs_exception_reaches_its_caller_and_the_next_job_still_runs(
    db_thread: DatabaseThread, make_loop: Callable[[], asyncio.AbstractEventLoop]
) -> None:
    error = LookupError("no such request")

    def failing() -> None:
        raise error

    async def main() -> tuple[BaseException, str]:
        with pytest.raises(LookupError) as caught:
            await db_thread.submit(failing)
        return caught.value, await db_thread.submit(lambda: "after")

    raised, after = _run(make_loop, main())
    assert raised is error
    assert after == "after"


def test_a_job_cancelled_before_it_starts_never_runs(
    db_thread: DatabaseThread, make_loop: Callable[[], asyncio.AbstractEventLoop]
) -> None:
    release = threading.Event()
    ran: list[str] = []

    async def main() -> str:
        busy = db_thread.submit(lambda: release.wait(10))
        skipped = db_thread.submit(lambda: ran.append("skipped"))
        skipped.cancel()
        release.set()
        assert await busy is True
        return await db_thread.submit(lambda: "later")

    assert _run(make_loop, main()) == "later"
    assert ran == []


def test_a_caller_that_stops_waiting_while_its_job_runs_gets_nothing_and_breaks_nothing(
    db_thread: DatabaseThread, make_loop: Callable[[], asyncio.AbstractEventLoop]
) -> None:
    started, release = threading.Event(), threading.Event()

    def slow() -> str:
        started.set()
        release.wait(10)
        return "too late"

    async def main() -> str:
        running = db_thread.submit(slow)
        await asyncio.get_running_loop().run_in_executor(None, started.wait, 10)
        running.cancel()
        release.set()
        return await db_thread.submit(lambda: "next")

    assert _run(make_loop, main()) == "next"


def test_a_job_submitted_after_shutdown_fails_clearly(make_loop: Callable[[], asyncio.AbstractEventLoop]) -> None:
    thread = DatabaseThread("test-db")

    async def main() -> None:
        assert await thread.submit(lambda: 1) == 1
        thread.shutdown()
        with pytest.raises(RuntimeError, match="closed"):
            thread.submit(lambda: 2)

    _run(make_loop, main())
    thread.shutdown()  # twice: nothing happens


def test_shutdown_finishes_the_queued_jobs_and_their_callers_get_the_results(
    make_loop: Callable[[], asyncio.AbstractEventLoop],
) -> None:
    thread = DatabaseThread("test-db")

    async def main() -> list[int]:
        futures = [thread.submit(lambda i=i: i) for i in range(20)]  # type: ignore[misc]
        thread.shutdown()  # from the loop's own thread, as BackendCore.close may be called
        return list(await asyncio.gather(*futures))

    assert _run(make_loop, main()) == list(range(20))


def test_one_thread_serves_successive_loops_and_leaves_no_descriptor_open() -> None:
    before = _open_fds()
    thread = DatabaseThread("test-db")

    async def main(i: int) -> int:
        return await thread.submit(lambda: i)

    assert [_run(asyncio.new_event_loop, main(i)) for i in range(3)] == [0, 1, 2]  # each loop closed in turn

    async def last() -> None:
        assert await thread.submit(lambda: "last") == "last"
        await asyncio.get_running_loop().run_in_executor(None, thread.shutdown)
        await asyncio.sleep(0)  # the bell is closed on the loop's next turn

    _run(asyncio.new_event_loop, last())
    assert _open_fds() <= before


def test_a_loop_on_another_thread_gets_its_results_while_the_first_loop_runs(db_thread: DatabaseThread) -> None:
    async def main() -> tuple[str, str]:
        here = await db_thread.submit(lambda: "here")

        def elsewhere() -> str:
            async def ask() -> str:
                return await db_thread.submit(lambda: "elsewhere")

            return asyncio.run(ask())

        there = await asyncio.get_running_loop().run_in_executor(None, elsewhere)
        return here, there

    assert _run(asyncio.new_event_loop, main()) == ("here", "elsewhere")


def test_loops_on_two_threads_that_start_at_once_after_the_first_closed_both_get_their_results() -> None:
    before = _open_fds()
    thread = DatabaseThread("test-db")

    async def ask(value: str) -> str:
        return await thread.submit(lambda: value)

    assert _run(asyncio.new_event_loop, ask("first")) == "first"  # its loop is closed now
    for _ in range(20):
        start = threading.Barrier(2)
        answers: list[str] = []

        def side(name: str, start: threading.Barrier = start, answers: list[str] = answers) -> None:
            start.wait(5)
            answers.append(_run(asyncio.new_event_loop, ask(name)))

        sides = [threading.Thread(target=side, args=(name,)) for name in ("a", "b")]
        for each in sides:
            each.start()
        for each in sides:
            each.join(10)
        assert sorted(answers) == ["a", "b"]
    thread.shutdown()
    assert _open_fds() <= before
