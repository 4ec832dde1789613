"""Tools the agents call: specs with JSON schemas, a registry that validates and runs them, and the built-ins.

Every file tool is confined to the session's workspace folder; tool failures come back as ``ToolResult(ok=False)``
so the model sees them and the run carries on.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import inspect
import json
import os
import signal
import sys
import threading
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jsonschema
from jsonschema import Draft202012Validator

from reviewer_app.domain import safe_fs
from reviewer_app.domain.json_schemas import SchemaProblem
from reviewer_app.domain.safe_fs import WorkspaceEscape
from reviewer_app.hitl.db_thread import resolve_future
from reviewer_app.runtime.process_groups import die_with_parent
from reviewer_app.runtime.schema_check import ArgumentsValidator

__all__ = [
    "ToolArgumentsError",
    "ToolContext",
    "ToolRegistry",
    "ToolResult",
    "ToolSpec",
    "WorkspaceEscape",
    "builtin_tools",
    "resolve_in_workspace",
]

_NOTE_ROOM_BYTES = 512

ToolHandler = Callable[[dict[str, Any], "ToolContext"], Awaitable[Any] | Any]


@dataclass
class ToolContext:
    """Where and for whom a tool runs."""

    workspace: Path
    session_id: str
    invocation_id: str
    shell_timeout_s: float = 30.0
    output_cap_bytes: int = 64_000
    # Process groups of the shell tools running now: the runtime's heartbeat records them for recovery.
    process_groups: set[int] = field(default_factory=set)


@dataclass(frozen=True)
class ToolSpec:
    """A tool: its OpenAI function schema plus how to run it and whether running it changes anything."""

    name: str
    description: str
    parameters: dict[str, Any]
    handler: ToolHandler
    side_effects: bool = False
    idempotent: bool = False

    def openai_schema(self) -> dict[str, Any]:
        return {
            "type": "function",
            "function": {"name": self.name, "description": self.description, "parameters": self.parameters},
        }


class ToolArgumentsError(ValueError):
    """Arguments do not match the tool's schema; the message names the field."""


@dataclass(frozen=True)
class ToolResult:
    """What a tool run produced. ``output`` is the text the model sees (``"error: ..."`` when ``ok`` is false)."""

    ok: bool
    output: str
    duration_ms: int


def resolve_in_workspace(workspace: Path, relative: str) -> Path:
    """The absolute path of ``relative`` inside ``workspace``; refuses ``..``, absolute paths and symlinks that
    lead outside, because the model's arguments are untrusted.

    Check-then-open: the file tools use :mod:`safe_fs` (race-free) instead wherever the platform allows;
    this remains for showing paths and for Windows.
    """
    safe_fs.workspace_parts(relative)  # the same refusals as the race-free file tools: no NUL, absolute path or ..
    root = workspace.resolve()
    target = (root / relative).resolve()
    if target != root and not target.is_relative_to(root):
        raise WorkspaceEscape(f"{relative!r} leads outside the workspace (through a symlink to {target})")
    return target


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def _describe_error(error: jsonschema.ValidationError) -> str:
    """One sentence that names the offending field, for the model and the operator."""
    field = ".".join(str(p) for p in error.absolute_path)
    where = f"field '{field}'" if field else "arguments"
    if error.validator == "required" and isinstance(error.instance, dict):
        required: list[str] = list(error.validator_value) if isinstance(error.validator_value, list) else []
        missing = [r for r in required if r not in error.instance]
        name = ".".join([*(str(p) for p in error.absolute_path), str(missing[0])]) if missing else field
        return f"missing required field '{name}'"
    if error.validator == "type":
        expected = error.validator_value
        expected_text = " or ".join(expected) if isinstance(expected, list) else str(expected)
        return f"{where} must be {expected_text}, got {_json_type(error.instance)}"
    if error.validator == "additionalProperties" and isinstance(error.instance, dict):
        schema = error.schema if isinstance(error.schema, dict) else {}
        allowed = set(schema.get("properties", {}))
        extra = sorted(k for k in error.instance if k not in allowed)
        return f"unexpected field(s) {', '.join(map(repr, extra))} in {where}"
    return f"{where}: {error.message}"


class ToolRegistry:
    """Named tools with pre-compiled validators."""

    def __init__(self, specs: Iterable[ToolSpec] = ()) -> None:
        self._specs: dict[str, ToolSpec] = {}
        self._validators: dict[str, ArgumentsValidator] = {}
        for spec in specs:
            self.register(spec)

    def register(self, spec: ToolSpec) -> None:
        if spec.name in self._specs:
            raise ValueError(f"tool {spec.name!r} is already registered")
        if spec.parameters.get("type") != "object":
            raise ValueError(f"tool {spec.name!r}: parameters schema must have type 'object'")
        try:
            Draft202012Validator.check_schema(spec.parameters)
        except jsonschema.SchemaError as exc:
            raise ValueError(f"tool {spec.name!r}: invalid parameters schema: {exc.message}") from exc
        self._specs[spec.name] = spec
        self._validators[spec.name] = ArgumentsValidator(spec.parameters)

    def get(self, name: str) -> ToolSpec:
        try:
            return self._specs[name]
        except KeyError:
            known = ", ".join(self._specs) or "none"
            raise KeyError(f"unknown tool {name!r} (known tools: {known})") from None

    def __contains__(self, name: object) -> bool:
        return name in self._specs

    def names(self) -> list[str]:
        return list(self._specs)

    def subset(self, names: Iterable[str]) -> ToolRegistry:
        """A registry with only these tools (in this order); unknown names raise KeyError.

        The specs were checked when registered here, so their validators are shared rather than rebuilt:
        re-checking every schema cost ~0.7 ms per started run.
        """
        subset = ToolRegistry()
        for name in names:
            spec = self.get(name)
            if name in subset._specs:
                raise ValueError(f"tool {name!r} is already registered")
            subset._specs[name] = spec
            subset._validators[name] = self._validators[name]
        return subset

    def schemas(self) -> list[dict[str, Any]]:
        return [spec.openai_schema() for spec in self._specs.values()]

    def validate(self, name: str, args: Any) -> dict[str, Any]:
        """Check ``args`` against the tool's schema; raises ToolArgumentsError naming the bad field."""
        spec = self.get(name)
        if not isinstance(args, dict):
            raise ToolArgumentsError(f"{spec.name}: arguments must be a JSON object, got {_json_type(args)}")
        try:
            errors = self._validators[name].errors(args)
        except SchemaProblem as exc:
            raise ToolArgumentsError(f"{spec.name}: {exc}") from exc
        if errors:
            raise ToolArgumentsError(f"{spec.name}: " + "; ".join(_describe_error(e) for e in errors[:3]))
        return args

    async def execute(
        self, name: str, args: dict[str, Any], ctx: ToolContext, *, validated: bool = False
    ) -> ToolResult:
        """Validate and run a tool. Failures become ``ok=False`` results; only cancellation propagates.

        ``validated``: the caller has already checked these very arguments with :meth:`validate` (the
        runtime's gate does, for calls it runs unedited), so they are not checked twice on the way in.
        """
        started = time.monotonic()

        def done(ok: bool, output: str) -> ToolResult:
            # Built-ins cap their content themselves; this is the safety net for other handlers, with room
            # left for a header or a truncation note.
            capped = _cap(output, ctx.output_cap_bytes + _NOTE_ROOM_BYTES)
            return ToolResult(ok=ok, output=capped, duration_ms=_ms_since(started))

        try:
            spec = self.get(name)
            if not validated:
                self.validate(name, args)
        except KeyError as exc:
            return done(False, f"error: {exc.args[0]}")
        except ToolArgumentsError as exc:
            return done(False, f"error: {exc}")
        try:
            if inspect.iscoroutinefunction(spec.handler):
                value = await spec.handler(args, ctx)
            else:
                value = await _in_daemon_thread(spec.handler, args, ctx, name=f"tool-{name}")
                if inspect.isawaitable(value):
                    value = await value
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            message = str(exc) or type(exc).__name__
            return done(False, f"error: {message}")
        if isinstance(value, str):
            return done(True, value)
        try:
            return done(True, json.dumps(value, ensure_ascii=False, default=str))
        except (TypeError, ValueError) as exc:
            return done(False, f"error: tool returned a value that is not JSON data: {exc}")


async def _in_daemon_thread(fn: Callable[..., Any], *args: Any, name: str) -> Any:
    """Run a blocking handler on a thread of its own that never keeps the process alive.

    ``asyncio.to_thread`` uses the loop's executor, which ``asyncio.run`` and the interpreter join at exit:
    a handler stuck for good (a hung file system, a device) kept ``reviewer-app run`` alive after SIGTERM.
    A cancelled call abandons its daemon thread; the process can still exit.
    """
    loop = asyncio.get_running_loop()
    future: asyncio.Future[Any] = loop.create_future()
    context = contextvars.copy_context()

    def work() -> None:
        result: Any = None
        error: BaseException | None = None
        try:
            result = context.run(fn, *args)
        except BaseException as exc:  # handed to the awaiting caller, as an executor would
            error = exc
        with contextlib.suppress(RuntimeError):  # the loop is closed: nobody waits any more
            loop.call_soon_threadsafe(resolve_future, future, result, error)

    threading.Thread(target=work, name=name, daemon=True).start()
    return await future


def _ms_since(started: float) -> int:
    return int((time.monotonic() - started) * 1000)


def _cap(text: str, cap_bytes: int) -> str:
    """Keep the model's context bounded: at most ``cap_bytes`` UTF-8 bytes plus a note of what was cut."""
    data = text.encode("utf-8", errors="replace")
    if cap_bytes <= 0 or len(data) <= cap_bytes:
        return text
    kept = data[:cap_bytes].decode("utf-8", errors="ignore")
    return f"{kept}\n[output truncated: {len(data) - cap_bytes} more bytes]"


# --------------------------------------------------------------------------------------------------------------
# Built-in tools


def _read_file(args: dict[str, Any], ctx: ToolContext) -> str:
    rel = args["path"]
    cap = max(ctx.output_cap_bytes, 1)
    if safe_fs.RACE_FREE:
        data, size = safe_fs.read_file(ctx.workspace, rel, cap + 1)
    else:  # pragma: no cover - Windows: check-then-open
        data, size = _read_file_by_path(ctx.workspace, rel, cap + 1)
    text = data[:cap].decode("utf-8", errors="replace")
    if len(data) > cap:
        text += f"\n[file truncated: showing {cap} of {size} bytes]"
    return text


def _list_dir(args: dict[str, Any], ctx: ToolContext) -> str:
    rel = args.get("path") or "."
    list_entries = safe_fs.list_dir if safe_fs.RACE_FREE else _list_dir_by_path  # Windows: check-then-open
    entries = list_entries(ctx.workspace, rel)
    lines = [f"{name}/" if is_dir else name for name, is_dir in entries]
    return "\n".join(lines) if lines else "(empty directory)"


def _write_file(args: dict[str, Any], ctx: ToolContext) -> str:
    rel = args["path"]
    data = args["content"].encode("utf-8")
    if safe_fs.RACE_FREE:
        safe_fs.write_file(ctx.workspace, rel, data)
    else:  # pragma: no cover - Windows: check-then-open
        _write_file_by_path(ctx.workspace, rel, data)
    return f"wrote {len(data)} bytes to {rel}"


# Windows has no openat(): these resolve the path, check it stays inside, then open it (a swap in between
# can still redirect them; documented in safe_fs).


def _read_file_by_path(workspace: Path, rel: str, limit: int) -> tuple[bytes, int]:  # pragma: no cover
    path = resolve_in_workspace(workspace, rel)
    if not path.exists():
        raise FileNotFoundError(f"no such file: {rel}")
    if path.is_dir():
        raise IsADirectoryError(f"{rel} is a directory (use list_dir)")
    if not path.is_file():
        raise WorkspaceEscape(f"{rel} is not a regular file; the file tools only use regular files")
    with path.open("rb") as fh:
        return fh.read(limit), os.fstat(fh.fileno()).st_size


def _list_dir_by_path(workspace: Path, rel: str) -> list[tuple[str, bool]]:  # pragma: no cover
    path = resolve_in_workspace(workspace, rel)
    if not path.exists():
        raise FileNotFoundError(f"no such directory: {rel}")
    if not path.is_dir():
        raise NotADirectoryError(f"{rel} is not a directory")
    return sorted((e.name, e.is_dir()) for e in path.iterdir())


def _write_file_by_path(workspace: Path, rel: str, data: bytes) -> None:  # pragma: no cover
    path = resolve_in_workspace(workspace, rel)
    if path.is_dir():
        raise IsADirectoryError(f"{rel} is a directory")
    path.parent.mkdir(parents=True, exist_ok=True)
    path = resolve_in_workspace(workspace, rel)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with tmp.open("wb") as fh:
            fh.write(data)
        os.replace(tmp, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()


async def _run_shell(args: dict[str, Any], ctx: ToolContext) -> str:
    command: str = args["command"]
    timeout = float(args.get("timeout_s") or ctx.shell_timeout_s)
    cap = max(ctx.output_cap_bytes, 1)
    workspace = ctx.workspace.resolve()
    if not workspace.is_dir():
        raise FileNotFoundError(f"workspace {workspace} does not exist")
    posix = sys.platform != "win32"
    proc = await asyncio.create_subprocess_shell(
        command,
        cwd=workspace,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        start_new_session=posix,  # own process group, so a timeout kills the children too
        preexec_fn=die_with_parent(),  # and the shell dies with this process (Linux)
    )
    if posix:
        ctx.process_groups.add(proc.pid)
    kept = bytearray()
    dropped = 0

    async def pump() -> None:
        nonlocal dropped
        assert proc.stdout is not None
        while chunk := await proc.stdout.read(65536):
            room = cap - len(kept)
            if room > 0:
                kept.extend(chunk[:room])
            dropped += max(0, len(chunk) - max(room, 0))
        await proc.wait()

    pump_task = asyncio.ensure_future(pump())
    timed_out = False
    try:
        await asyncio.wait_for(asyncio.shield(pump_task), timeout)
    except TimeoutError:
        timed_out = True
    finally:
        if proc.returncode is None:
            _kill(proc, posix)
        # Bounded: a grandchild that left the process group could keep the pipe open.
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(pump_task), 5.0)
        if not pump_task.done():
            pump_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await pump_task
            if proc.returncode is None:
                await proc.wait()
        ctx.process_groups.discard(proc.pid)
    output = kept.decode("utf-8", errors="replace")
    if dropped:
        output += f"\n[output truncated: {dropped} more bytes]"
    if timed_out:
        raise TimeoutError(f"command timed out after {timeout:g}s and was killed; output so far:\n{output}")
    return f"exit code: {proc.returncode}\n{output}"


def _kill(proc: asyncio.subprocess.Process, posix: bool) -> None:
    try:
        if posix:
            os.killpg(proc.pid, signal.SIGKILL)
        else:
            proc.kill()
    except (ProcessLookupError, PermissionError):
        with contextlib.suppress(ProcessLookupError):
            proc.kill()


def _ask_user(args: dict[str, Any], ctx: ToolContext) -> str:
    raise RuntimeError("ask_user is answered by the operator through a HITL request; the runner handles it")


_PATH = {"type": "string", "minLength": 1, "description": "Path relative to the workspace folder."}


def _closed_object(properties: dict[str, Any], required: list[str] | None = None) -> dict[str, Any]:
    """The schema of a built-in tool's arguments: these properties and no others."""
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required is not None:
        schema["required"] = required
    schema["additionalProperties"] = False
    return schema


def builtin_tools() -> ToolRegistry:
    """A fresh registry with read_file, list_dir, write_file, run_shell and ask_user."""
    return ToolRegistry(
        [
            ToolSpec(
                name="read_file",
                description="Read a UTF-8 text file from the workspace.",
                parameters=_closed_object({"path": _PATH}, ["path"]),
                handler=_read_file,
                idempotent=True,
            ),
            ToolSpec(
                name="list_dir",
                description="List a workspace directory (directories end with '/'). Defaults to the workspace root.",
                parameters=_closed_object({"path": {**_PATH, "minLength": 0}}),
                handler=_list_dir,
                idempotent=True,
            ),
            ToolSpec(
                name="write_file",
                description="Create or overwrite a text file in the workspace (parent folders are created).",
                parameters=_closed_object(
                    {"path": _PATH, "content": {"type": "string", "description": "Full file text."}},
                    ["path", "content"],
                ),
                handler=_write_file,
                side_effects=True,
                idempotent=True,
            ),
            ToolSpec(
                name="run_shell",
                description="Run a shell command in the workspace folder; returns the exit code and the combined "
                "stdout/stderr (capped).",
                parameters=_closed_object(
                    {
                        "command": {"type": "string", "minLength": 1},
                        "timeout_s": {"type": "number", "exclusiveMinimum": 0, "maximum": 3600},
                    },
                    ["command"],
                ),
                handler=_run_shell,
                side_effects=True,
            ),
            ToolSpec(
                name="ask_user",
                description="Ask the operator a question and wait for the answer.",
                parameters=_closed_object(
                    {
                        "question": {"type": "string", "minLength": 1},
                        "options": {"type": "array", "items": {"type": "string"}},
                    },
                    ["question"],
                ),
                handler=_ask_user,
            ),
        ]
    )
