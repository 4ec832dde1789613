"""One async read in flight at a time: a refresh asked while one runs makes it run once more, never twice at once."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Coroutine
from typing import Any


class CoalescedRead:
    """Call it to (re)read; ``read`` runs on the loop via ``spawn``, ``failed`` gets what it raised, ``done`` runs
    after each burst whatever happened (buttons follow the new state)."""

    def __init__(
        self,
        spawn: Callable[[Coroutine[Any, Any, None]], Any],
        read: Callable[[], Awaitable[None]],
        failed: Callable[[Exception], None],
        done: Callable[[], None] = lambda: None,
    ) -> None:
        self._spawn = spawn
        self._read = read
        self._failed = failed
        self._done = done
        self._running = False
        self._again = False

    def __call__(self) -> None:
        if self._running:
            self._again = True
            return
        self._running = True
        self._spawn(self._run())

    async def _run(self) -> None:
        try:
            while True:
                self._again = False
                await self._read()
                if not self._again:
                    break
        except Exception as exc:
            self._failed(exc)
        finally:
            self._running = False
            self._done()
