"""The proxy itself: two JSON-RPC pumps between the host and the upstream server, with ``tools/call`` gated.

What the upstream sends reaches the host as the very bytes it sent (tool lists, schemas, annotations, results,
notifications, its own requests), except a form ``elicitation/create``, which Reviewer answers. What the host
sends is parsed and re-encoded before it goes upstream, so the upstream runs exactly the message the gate
checked (no duplicate-key or encoding tricks between two JSON parsers). Two host messages change: ``initialize``
also announces form elicitation (the proxy answers it), and a gated ``tools/call`` waits for its decision.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import logging
import os
import time
import uuid
from collections.abc import Coroutine, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from reviewer_app.domain.decisions import DecisionKind
from reviewer_app.domain.hitl import HITLNotFound, HITLStatus, HITLType
from reviewer_app.domain.risk import assess
from reviewer_app.domain.runs import RunState
from reviewer_app.domain.timeline import BlockKind, BlockOp, ToolStatus
from reviewer_app.domain.toolcall import ToolCall as PolicyCall
from reviewer_app.integrations.core import ANSWERED_ELSEWHERE, ExternalCall, Outcome, ReviewClient, stable_id
from reviewer_app.integrations.mcp_proxy import elicitation, framing
from reviewer_app.integrations.mcp_proxy.framing import LineWriter, id_key
from reviewer_app.integrations.mcp_proxy.gating import GatePolicy, annotations_of, qualified_name, risk_of
from reviewer_app.integrations.mcp_proxy.timeline import ProxyTimeline
from reviewer_app.integrations.mcp_proxy.tools import UpstreamTools
from reviewer_app.integrations.mcp_proxy.upstream import SHUTDOWN_GRACE_S, start_upstream, stop_upstream
from reviewer_app.integrations.rules import rule_effect

log = logging.getLogger("reviewer_app.mcp_proxy")

UPSTREAM_EXITED = "upstream MCP server exited"
WAITING_MESSAGE = "waiting for a reviewer's decision in Reviewer"
CLIENT_INFO_META_KEY = "io.modelcontextprotocol/clientInfo"
"""Where a stateless (2026-07-28) request names its client, there being no ``initialize``."""


@dataclass(slots=True)
class _Waiting:
    """A host request the proxy holds: a gated call under review, or an upstream question being asked."""

    task: asyncio.Task[None]
    hitl_id: str | None = None
    reason: str = ANSWERED_ELSEWHERE


@dataclass(slots=True)
class _InFlight:
    """A host request forwarded upstream and not yet answered."""

    method: str
    block_id: str | None = None
    started: float = field(default_factory=time.monotonic)


class McpProxy:
    """One host connection to one upstream server, for the life of the process."""

    def __init__(
        self,
        *,
        name: str,
        command: Sequence[str],
        client: ReviewClient | None,
        policy: GatePolicy | None = None,
        progress_interval: float = 5.0,
        env: Mapping[str, str] | None = None,
        watch_parent: bool = True,
    ) -> None:
        if not command:
            raise ValueError("mcp-proxy needs the upstream server's command")
        self.name = name
        self.command = list(command)
        self.client = client
        self.policy = policy or GatePolicy(server=name)
        self.progress_interval = progress_interval
        self.env = dict(env) if env is not None else None
        self.watch_parent = watch_parent
        self.host_name = "mcp-host"
        self.session_id = stable_id("mcp-proxy", name, str(os.getpid()), uuid.uuid4().hex)
        self.invocation_id = self.session_id.replace("ext_", "mcp_", 1)
        self._own_prefix = f"reviewer-proxy-{uuid.uuid4().hex}-"
        self._own_counter = 0
        self._own: dict[str, asyncio.Future[Any]] = {}
        self._tools = UpstreamTools()
        self._in_flight: dict[str, _InFlight] = {}
        self._waiting: dict[str, _Waiting] = {}
        self._upstream_asks: dict[str, _Waiting] = {}
        self._session_allowed: set[str] = set()
        self._call_counter = 0
        self._registered = asyncio.Event()
        self._timeline = ProxyTimeline(
            client, session_id=self.session_id, invocation_id=self.invocation_id, registered=self._registered_or_now
        )
        self._background: set[asyncio.Task[None]] = set()
        self._host_pump: asyncio.Task[None] | None = None
        self._upstream: asyncio.subprocess.Process | None = None
        self._to_upstream: LineWriter | None = None
        self._to_host: LineWriter | None = None

    # -- life cycle --------------------------------------------------------------------------------------------

    async def run(self, host_in: asyncio.StreamReader, host_out: LineWriter) -> int:
        """Serve until the host disconnects (exit 0) or the upstream exits (its exit code, at least 1)."""
        self._to_host = host_out
        self._upstream = await start_upstream(self.command, self.env)
        assert self._upstream.stdin is not None and self._upstream.stdout is not None
        self._to_upstream = LineWriter(self._upstream.stdin)
        host_pump = self._host_pump = asyncio.create_task(self._pump_host(host_in), name="mcp-proxy host")
        upstream_pump = asyncio.create_task(self._pump_upstream(self._upstream.stdout), name="mcp-proxy upstream")
        helpers = [asyncio.create_task(self._timeline.write(), name="mcp-proxy timeline")]
        if self.watch_parent:
            helpers.append(asyncio.create_task(self._watch_parent(host_pump), name="mcp-proxy parent"))
        ended: tuple[RunState, str | None] = (RunState.DONE, None)
        try:
            done, _ = await asyncio.wait({host_pump, upstream_pump}, return_when=asyncio.FIRST_COMPLETED)
            if upstream_pump in done:
                code = await self._upstream_exit_code()
                ended = (RunState.FAILED, f"{UPSTREAM_EXITED} (exit code {code})")
                await self._upstream_died(code)
                host_pump.cancel()
                return code or 1
            await self._host_gone()
            if self._to_upstream is not None:  # the MCP way to stop a stdio server; let it answer what it has
                self._to_upstream.close()
            await asyncio.wait({upstream_pump}, timeout=SHUTDOWN_GRACE_S)
            return 0
        finally:
            for task in (host_pump, upstream_pump):
                task.cancel()
            await asyncio.gather(host_pump, upstream_pump, return_exceptions=True)
            await stop_upstream(self._upstream, self._to_upstream)
            await self._timeline.flush()
            for task in helpers:
                task.cancel()
            await asyncio.gather(*helpers, return_exceptions=True)
            await self._end_run(*ended)

    async def _end_run(self, state: RunState, error: str | None) -> None:
        """The host hung up (done) or the upstream died (failed): the proxy session's run ends on the record,
        instead of looking "running" forever. Best effort: the proxy exits whatever the database says."""
        if self.client is None or not self._registered.is_set():
            return
        with contextlib.suppress(Exception):
            await self.client.finish_run(self.session_id, self.invocation_id, state, error=error)

    def stop(self) -> None:
        """End the session as if the host had hung up (SIGTERM, SIGINT): held requests leave the inbox."""
        if self._host_pump is not None:
            self._host_pump.cancel()

    async def _upstream_exit_code(self) -> int:
        """The upstream closed its stdout: its exit code, once it has exited (made to, if it lingers)."""
        await stop_upstream(self._upstream, self._to_upstream)
        assert self._upstream is not None
        return self._upstream.returncode if self._upstream.returncode is not None else 1

    async def _watch_parent(self, host_pump: asyncio.Task[None]) -> None:
        """A host killed outright may leave our stdin open (a grandchild holds it): notice it is gone."""
        parent = os.getppid()
        while not host_pump.done():
            await asyncio.sleep(1.0)
            if os.getppid() != parent:
                host_pump.cancel()
                return

    async def _host_gone(self) -> None:
        """The host hung up: every held call is answered elsewhere (or nowhere); take them out of the inbox."""
        await self._cancel_waiting(ANSWERED_ELSEWHERE)

    async def _upstream_died(self, code: int) -> None:
        message = f"{UPSTREAM_EXITED} (exit code {code}) before answering"
        if self._to_host is None:
            return
        for key, held in list(self._waiting.items()):
            held.reason = UPSTREAM_EXITED
            await self._to_host.send(framing.error(json.loads(key), framing.UPSTREAM_GONE, message))
        await self._cancel_waiting(UPSTREAM_EXITED)
        for key, flight in list(self._in_flight.items()):
            await self._to_host.send(framing.error(json.loads(key), framing.UPSTREAM_GONE, message))
            if flight.block_id:
                self._timeline.block(
                    flight.block_id, BlockKind.TOOL_USE, BlockOp.PATCH, {"status": "error", "result": message}
                )
        self._in_flight.clear()
        for future in self._own.values():
            if not future.done():
                future.set_exception(ConnectionError(message))
        self._timeline.block(
            f"{self.invocation_id}:upstream-exit", BlockKind.ERROR, BlockOp.APPLY, {"message": message}
        )

    async def _cancel_waiting(self, reason: str) -> None:
        held = [*self._waiting.values(), *self._upstream_asks.values()]
        for item in held:
            item.reason = reason
            item.task.cancel()
        await asyncio.gather(*(item.task for item in held), return_exceptions=True)
        self._waiting.clear()
        self._upstream_asks.clear()

    # -- host → upstream ---------------------------------------------------------------------------------------

    async def _pump_host(self, reader: asyncio.StreamReader) -> None:
        while (line := await framing.read_line(reader)) is not None:
            try:
                message = json.loads(line)
            except (json.JSONDecodeError, UnicodeDecodeError) as exc:
                await self._send_host(framing.error(None, framing.PARSE_ERROR, f"parse error: {exc}"))
                continue
            for item in message if isinstance(message, list) else [message]:
                try:
                    await self._from_host(item)
                except Exception as exc:  # a bug or a hostile message must not end the session; nothing forwarded
                    log.exception("mcp-proxy: could not handle a host message")
                    if isinstance(item, dict) and "id" in item and "method" in item:
                        await self._send_host(framing.error(item["id"], framing.INTERNAL_ERROR, f"proxy error: {exc}"))

    async def _from_host(self, message: Any) -> None:
        if not isinstance(message, dict):
            await self._send_host(framing.error(None, framing.INVALID_REQUEST, "not a JSON-RPC message"))
            return
        method = message.get("method")
        has_id = "id" in message
        if method is None:  # a response to one of the upstream's own requests (sampling, roots, a URL form)
            await self._forward(message)
            return
        if not isinstance(method, str):
            await self._send_host(framing.error(message.get("id"), framing.INVALID_REQUEST, "bad method"))
            return
        if method == "tools/call":
            if has_id:
                await self._tools_call(message)
            return  # a tools/call without an id would run unseen and unanswered: never forwarded
        if method == "notifications/cancelled":
            params = message.get("params")
            key = id_key(params.get("requestId")) if isinstance(params, dict) else None
            held = self._waiting.pop(key, None) if key is not None else None
            if held is not None:  # the upstream never saw this call: settle it here
                held.reason = ANSWERED_ELSEWHERE
                held.task.cancel()
                return
            flight = self._in_flight.pop(key, None) if key is not None else None
            if flight is not None and flight.block_id is not None:  # the upstream will not answer it now
                patch = {"status": ToolStatus.ERROR.value, "result": "cancelled by the host"}
                self._timeline.block(flight.block_id, BlockKind.TOOL_USE, BlockOp.PATCH, patch)
        if method == "initialize" and has_id:
            message = self._initialize(message)
        if has_id:
            self._in_flight[id_key(message["id"])] = _InFlight(method)
        await self._forward(message)

    def _initialize(self, message: dict[str, Any]) -> dict[str, Any]:
        """Note the host's name; announce form elicitation upstream, since the proxy answers it from Reviewer."""
        params = message.get("params")
        if not isinstance(params, dict):
            return message
        self._learn_host_name(params.get("clientInfo"))
        capabilities = params.get("capabilities")
        capabilities = dict(capabilities) if isinstance(capabilities, dict) else {}
        announced = capabilities.get("elicitation")
        announced = dict(announced) if isinstance(announced, dict) else {}
        if announced and "form" not in announced:
            announced["form"] = {}
        capabilities["elicitation"] = announced or {"form": {}}
        self._spawn(self._register())
        return {**message, "params": {**params, "capabilities": capabilities}}

    def _learn_host_name(self, info: Any) -> None:
        if isinstance(info, dict) and isinstance(info.get("name"), str) and info["name"].strip():
            self.host_name = info["name"].strip()[:100]
            if self.client is not None:  # the run and its requests belong to the host that sent them
                self.client.agent = self.host_name

    def _spawn(self, coro: Coroutine[Any, Any, None]) -> asyncio.Task[None]:
        """A background task kept referenced until it ends."""
        task = asyncio.get_running_loop().create_task(coro)
        self._background.add(task)
        task.add_done_callback(self._background.discard)
        return task

    async def _register(self) -> None:
        if self.client is not None and not self._registered.is_set():
            try:
                await self.client.register_run(
                    session_id=self.session_id,
                    invocation_id=self.invocation_id,
                    title=f"{self.host_name} · {self.name}",
                )
            finally:
                self._registered.set()

    async def _forward(self, message: Any) -> None:
        if self._to_upstream is not None:
            await self._to_upstream.send(framing.encode(message))

    async def _send_host(self, line: bytes) -> None:
        if self._to_host is not None:
            await self._to_host.send(line)

    # -- tools/call --------------------------------------------------------------------------------------------

    async def _tools_call(self, message: dict[str, Any]) -> None:
        request_id = message["id"]
        params = message.get("params")
        if not isinstance(params, dict) or not isinstance(params.get("name"), str):
            await self._send_host(framing.error(request_id, framing.INVALID_PARAMS, "tools/call needs a name"))
            return
        key = id_key(request_id)
        if key in self._waiting or key in self._in_flight:
            await self._send_host(framing.error(request_id, framing.INVALID_REQUEST, "duplicate request id"))
            return
        tool_name: str = params["name"]
        meta = params.get("_meta")
        if not self._registered.is_set() and isinstance(meta, dict):  # the 2026 protocol has no initialize
            self._learn_host_name(meta.get(CLIENT_INFO_META_KEY))
        self._call_counter += 1
        block_id = f"{self.invocation_id}:tool:{self._call_counter}"
        tool = self._tools.get(tool_name)
        if tool is not None and not await self._gated(tool_name, tool, params):
            self._start_call(message, block_id, gated=False)
            self._in_flight[key] = _InFlight("tools/call", block_id)
            await self._forward(message)
            return
        task = asyncio.get_running_loop().create_task(self._held_call(message, block_id))
        self._waiting[key] = _Waiting(task)
        task.add_done_callback(lambda done: self._drop_held(self._waiting, key, done))

    @staticmethod
    def _drop_held(table: dict[str, _Waiting], key: str, task: asyncio.Task[None]) -> None:
        held = table.get(key)
        if held is not None and held.task is task:
            del table[key]

    async def _gated(self, tool_name: str, tool: Mapping[str, Any] | None, params: Mapping[str, Any]) -> bool:
        """Whether the call waits: a high-risk call always does (a sensitive target, a destructive tool), whatever
        the read-only annotation, ``--allow`` or an approve-for-session waiver would let through."""
        call = self._policy_call(params, tool)
        if assess(call, scan_secrets=False).high:
            return True
        rule_effect = await self._rule_effect(call)
        if rule_effect is None and tool_name in self._session_allowed:  # a persistent rule beats the waiver
            return False
        return self.policy.needs_review(tool_name, tool, rule_effect=rule_effect)

    def _policy_call(self, params: Mapping[str, Any], tool: Mapping[str, Any] | None) -> PolicyCall:
        arguments = params.get("arguments")
        annotations = annotations_of(tool)
        return PolicyCall(
            qualified_name(self.name, params["name"]),
            dict(arguments) if isinstance(arguments, Mapping) else {},
            agent=self.host_name,
            session_id=self.session_id,
            metadata={"annotations": annotations} if annotations else {},
        )

    async def _rule_effect(self, call: PolicyCall) -> str | None:
        """The persistent rule's effect on this call (None without a database or a rule that applies)."""
        if self.client is None:
            return None
        return await rule_effect(self.client.backend, call)

    def _start_call(self, message: dict[str, Any], block_id: str, *, gated: bool) -> None:
        params = message["params"]
        self._timeline.block(
            block_id,
            BlockKind.TOOL_USE,
            BlockOp.APPLY,
            {
                "name": qualified_name(self.name, params["name"]),
                "call_id": str(message["id"]),
                "arguments": params.get("arguments"),
                "status": ToolStatus.PENDING.value if gated else ToolStatus.RUNNING.value,
                "gated": gated,
            },
        )

    async def _held_call(self, message: dict[str, Any], block_id: str) -> None:
        """A call whose tool is unknown yet, or gated: look it up, ask Reviewer, then forward or answer."""
        try:
            await self._hold_call(message, block_id)
        except Exception as exc:  # fail closed: the call does not run, the host learns why
            log.warning(f"mcp-proxy: gating {message['params']['name']!r} failed: {exc!r}")
            self._waiting.pop(id_key(message["id"]), None)
            text = f"Reviewer could not review this call, so it was not run: {exc}"
            await self._send_host(framing.error(message["id"], framing.INTERNAL_ERROR, text))

    async def _hold_call(self, message: dict[str, Any], block_id: str) -> None:
        request_id = message["id"]
        key = id_key(request_id)
        params: dict[str, Any] = message["params"]
        tool_name: str = params["name"]
        tool = self._tools.get(tool_name) or await self._tools.look_up(
            tool_name, params.get("_meta"), self._request_upstream
        )
        if not await self._gated(tool_name, tool, params):
            self._waiting.pop(key, None)
            self._start_call(message, block_id, gated=False)
            self._in_flight[key] = _InFlight("tools/call", block_id)
            await self._forward(message)
            return
        self._start_call(message, block_id, gated=True)
        if self.client is None:
            await self._answer_not_run(message, block_id, "no Reviewer database: gated calls cannot be approved")
            return
        outcome = await self._review(message, tool, block_id)
        if outcome.runs_tool:
            if outcome.kind is DecisionKind.APPROVE_FOR_SESSION:
                self._session_allowed.add(tool_name)
            if outcome.kind is DecisionKind.EDIT:
                message = {**message, "params": {**params, "arguments": outcome.arguments}}
                self._timeline.block(
                    block_id, BlockKind.TOOL_USE, BlockOp.PATCH, {"edited_arguments": outcome.arguments}
                )
            self._waiting.pop(key, None)
            self._in_flight[key] = _InFlight("tools/call", block_id)
            self._timeline.block(block_id, BlockKind.TOOL_USE, BlockOp.PATCH, {"status": ToolStatus.RUNNING.value})
            await self._forward(message)
            return
        await self._answer_not_run(message, block_id, outcome.text_for_model())

    async def _answer_not_run(self, message: dict[str, Any], block_id: str, text: str) -> None:
        self._waiting.pop(id_key(message["id"]), None)
        self._timeline.block(
            block_id, BlockKind.TOOL_USE, BlockOp.PATCH, {"status": ToolStatus.ERROR.value, "result": text}
        )
        body = {"content": [{"type": "text", "text": text}], "isError": True}
        await self._send_host(framing.result(message["id"], body))

    async def _review(self, message: dict[str, Any], tool: Mapping[str, Any] | None, block_id: str) -> Outcome:
        assert self.client is not None
        params: dict[str, Any] = message["params"]
        key = id_key(message["id"])
        arguments = params.get("arguments")
        schema = (tool or {}).get("inputSchema")
        call = ExternalCall(
            hitl_id=stable_id("mcp", self.session_id, str(self._call_counter), key),
            agent=self.host_name,
            session_id=self.session_id,
            invocation_id=self.invocation_id,
            tool_name=qualified_name(self.name, params["name"]),
            arguments=arguments if arguments is not None else {},
            tool_call_id=str(message["id"]),
            description=(tool or {}).get("description") if isinstance((tool or {}).get("description"), str) else None,
            schema=dict(schema) if isinstance(schema, Mapping) else None,
            title=f"{self.host_name} · {self.name}",
            extra_data={
                "annotations": annotations_of(tool),
                "risk": risk_of(tool),
                "mcp": {"server": self.name, "tool": params["name"], "known": tool is not None},
            },
        )
        held = self._waiting.get(key)
        if held is not None:
            held.hitl_id = call.hitl_id
        meta = params.get("_meta")
        token = meta.get("progressToken") if isinstance(meta, dict) else None
        beat = asyncio.get_running_loop().create_task(self._heartbeat(token)) if token is not None else None
        try:
            outcome = await self._ask(call, block_id, held)
        finally:
            if beat is not None:
                beat.cancel()
        return outcome

    async def _ask(self, call: ExternalCall, block_id: str | None, held: _Waiting | None) -> Outcome:
        """Submit and wait; cancelled (host gone, host cancelled, upstream dead) it takes the request back."""
        assert self.client is not None
        await self._registered_or_now()
        submit = asyncio.ensure_future(self.client.submit(call))
        try:
            record = await asyncio.shield(submit)
            call = dataclasses.replace(call, hitl_id=str(record["hitl_id"]))  # another call's id: asked anew
            if held is not None:
                held.hitl_id = call.hitl_id
            if block_id is not None:
                self._timeline.block(f"{block_id}:hitl", BlockKind.HITL, BlockOp.APPLY, call.request_block())
            outcome = (
                await self.client.outcome_of(record)
                if record["status"] != HITLStatus.PENDING.value
                else await self.client.wait(call.hitl_id)
            )
        except asyncio.CancelledError:
            reason = held.reason if held is not None else ANSWERED_ELSEWHERE
            hitl_id = call.hitl_id
            with contextlib.suppress(Exception):
                hitl_id = str((await submit)["hitl_id"])  # the id it was asked under (its own, for a reused one)
            with contextlib.suppress(HITLNotFound):
                await self.client.abandon(hitl_id, reason)
            if block_id is not None:
                patch = {"status": "decided", "decision": "cancel", "message": reason}
                self._timeline.block(f"{block_id}:hitl", BlockKind.HITL, BlockOp.PATCH, patch)
                self._timeline.block(block_id, BlockKind.TOOL_USE, BlockOp.PATCH, {"status": "error", "result": reason})
            raise
        if block_id is not None:
            decided: dict[str, Any] = {"status": "decided", "decision": outcome.kind.value}
            decided["reviewer"] = outcome.reviewer
            if outcome.message:
                decided["message"] = outcome.message
            self._timeline.block(f"{block_id}:hitl", BlockKind.HITL, BlockOp.PATCH, decided)
        return outcome

    async def _registered_or_now(self) -> None:
        if not self._registered.is_set():
            await self._register()

    async def _heartbeat(self, token: Any) -> None:
        """Progress notifications while a call waits, so a host that resets its time-out on progress keeps waiting."""
        beats = 0
        while True:
            beats += 1
            params = {"progressToken": token, "progress": beats, "message": WAITING_MESSAGE}
            await self._send_host(framing.notification("notifications/progress", params))
            await asyncio.sleep(self.progress_interval)

    async def _request_upstream(self, method: str, params: dict[str, Any]) -> Any:
        self._own_counter += 1
        request_id = f"{self._own_prefix}{self._own_counter}"
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._own[id_key(request_id)] = future
        try:
            await self._forward({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
            return await future
        finally:
            self._own.pop(id_key(request_id), None)

    # -- upstream → host ---------------------------------------------------------------------------------------

    async def _pump_upstream(self, reader: asyncio.StreamReader) -> None:
        while (line := await framing.read_line(reader)) is not None:
            try:
                message = json.loads(line)
            except (json.JSONDecodeError, UnicodeDecodeError):
                message = None
            if isinstance(message, dict) and await self._from_upstream(message):
                continue
            if self._to_host is not None:
                await self._to_host.send(line)

    async def _from_upstream(self, message: dict[str, Any]) -> bool:
        """Look at one upstream message; True when the proxy consumed it (it must not reach the host)."""
        method = message.get("method")
        if method is None and "id" in message:
            key = id_key(message["id"])
            future = self._own.pop(key, None)
            if future is not None:
                if not future.done():
                    if "error" in message:
                        future.set_exception(RuntimeError(str(message.get("error"))))
                    else:
                        future.set_result(message.get("result"))
                return True
            flight = self._in_flight.pop(key, None)
            if flight is not None and flight.method == "tools/list":
                self._tools.absorb(message.get("result"))
            elif flight is not None and flight.block_id is not None:
                self._timeline.call_finished(flight.block_id, flight.started, message)
            return False
        if method == "notifications/tools/list_changed":
            self._tools.forget()
        elif method == "elicitation/create" and "id" in message and self.client is not None:
            params = message.get("params")
            if isinstance(params, dict) and params.get("mode", "form") == "form":
                key = id_key(message["id"])
                task = asyncio.get_running_loop().create_task(self._elicit(message))
                self._upstream_asks[key] = _Waiting(task)
                task.add_done_callback(lambda done: self._drop_held(self._upstream_asks, key, done))
                return True
        elif method == "notifications/cancelled":
            params = message.get("params")
            key = id_key(params.get("requestId")) if isinstance(params, dict) else ""
            held = self._upstream_asks.pop(key, None)
            if held is not None:
                held.reason = "cancelled by the MCP server"
                held.task.cancel()
                return True
        return False

    async def _elicit(self, message: dict[str, Any]) -> None:
        try:
            await self._ask_upstreams_question(message)
        except Exception as exc:  # the upstream must get an answer: cancel is the honest one
            log.warning(f"mcp-proxy: elicitation failed: {exc!r}")
            await self._forward_raw_up(framing.result(message["id"], {"action": "cancel"}))

    async def _ask_upstreams_question(self, message: dict[str, Any]) -> None:
        request_id = message["id"]
        key = id_key(request_id)
        try:
            text, schema = elicitation.parse_form_request(message.get("params"))
        except elicitation.ElicitationError as exc:
            await self._forward_raw_up(framing.error(request_id, framing.INVALID_PARAMS, str(exc)))
            return
        self._call_counter += 1
        call = ExternalCall(
            hitl_id=stable_id("mcp-elicit", self.session_id, str(self._call_counter), key),
            agent=self.host_name,
            session_id=self.session_id,
            invocation_id=self.invocation_id,
            tool_name=None,
            arguments=elicitation.question_data(self.name, text, schema),
            hitl_type=HITLType.ASK_USER.value,
            allowed_decisions=(DecisionKind.RESPOND, DecisionKind.REJECT),
            title=f"{self.host_name} · {self.name}",
        )
        held = self._upstream_asks.get(key)
        if held is not None:
            held.hitl_id = call.hitl_id
        outcome = await self._ask(call, f"{self.invocation_id}:ask:{self._call_counter}", held)
        try:
            answer = elicitation.elicit_result(outcome, schema)
        except elicitation.ElicitationError as exc:
            log.warning(f"mcp-proxy: {exc}; the form is cancelled")
            answer = {"action": "cancel"}
        await self._forward_raw_up(framing.result(request_id, answer))

    async def _forward_raw_up(self, line: bytes) -> None:
        if self._to_upstream is not None:
            await self._to_upstream.send(line)

    # -- timeline ----------------------------------------------------------------------------------------------
