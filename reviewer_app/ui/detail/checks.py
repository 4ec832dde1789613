"""The detail pane's second step: the checks that may take longer than showing a request.

The secret scan of the arguments and a write_file call's diff run on a worker thread once the request is on
screen (after Qt has handled the repaint posted for it, so the two do not compete for the GIL). A request's
stored arguments never change, so the kinds of secrets found are remembered per request id and argument hash: a
request selected again is shown checked at once (its diff is worked out again: the file on disk may have changed).
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import QTimer

from reviewer_app.ui.detail.prepared import PreparedRequest, RequestChecks, check_request

SECRETS_REMEMBERED = 512  # requests whose secret scan is kept (a few short tuples each)


async def after_posted_events() -> None:
    """Until Qt has handled the events posted so far, the repaint of what was just shown among them."""
    turn: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def handled() -> None:
        if not turn.done():  # cancelled with its task meanwhile
            turn.set_result(None)

    QTimer.singleShot(0, handled)
    await turn


class RequestChecker:
    """Runs ``check_request`` (replaceable: tests hold it) off the GUI thread and remembers the secrets found."""

    def __init__(self) -> None:
        self.check_request: Callable[..., RequestChecks] = check_request
        self._secrets: OrderedDict[tuple[str, str], tuple[str, ...]] = OrderedDict()

    def recall(self, prepared: PreparedRequest) -> None:
        """Give ``prepared`` the secrets found when the same arguments of the same request were last checked."""
        remembered = self._secrets.get((str(prepared.record["hitl_id"]), prepared.digest))
        if remembered is not None and not prepared.checked:
            prepared.set_secrets(remembered)

    async def run(self, prepared: PreparedRequest, workspace: Path | None) -> RequestChecks:
        await after_posted_events()
        checks = await asyncio.to_thread(self.check_request, prepared, workspace, secrets=prepared.secrets)
        key = (str(prepared.record["hitl_id"]), prepared.digest)
        self._secrets[key] = checks.secret_kinds
        self._secrets.move_to_end(key)
        while len(self._secrets) > SECRETS_REMEMBERED:
            self._secrets.popitem(last=False)
        return checks
