"""Each host's session events (tool results, prompts, turn and session ends), read into plain fields.

Why: the full path (:mod:`.session`) and the hook's lean path (:mod:`.lean_session`) record the same events, so
they read them with the same code; the lean path must not pay for dataclasses, enums or ``hashlib``. Standard
library only, no ``typing`` at run time.
"""

from __future__ import annotations

from reviewer_app.domain.lean_json import decode_error, dumps, loads
from reviewer_app.integrations.claude_code.wire import HookInputError, load_object, text_field

TYPE_CHECKING = False  # no ``typing`` at run time: the hook's lean path reads session events with this module
if TYPE_CHECKING:
    from typing import Any

TOOL_RESULT = "tool_result"
RUN_END = "run_end"
PROMPT = "prompt"
SESSION_END = "session_end"
MAX_RESULT_CHARS = 20_000
MAX_PROMPT_CHARS = 500
"""As much of a prompt as a run's title keeps (the transcript's first prompt is cut the same)."""

LIFECYCLE_EVENT_KINDS: dict[str, dict[str, str]] = {
    # Claude's Stop ends the turn: every prompt run of the session. Its transcript is copied at each event too.
    "claude-code": {
        "UserPromptSubmit": PROMPT,
        "PostToolUse": TOOL_RESULT,
        "Stop": SESSION_END,
        "SessionEnd": SESSION_END,
    },
    "gemini": {"AfterTool": TOOL_RESULT, "SessionEnd": SESSION_END},
    "qwen": {"PostToolUse": TOOL_RESULT, "Stop": RUN_END, "SessionEnd": SESSION_END},
    "factory": {"PostToolUse": TOOL_RESULT, "Stop": RUN_END, "SessionEnd": SESSION_END},
    "copilot": {"postToolUse": TOOL_RESULT, "sessionEnd": SESSION_END},
    "opencode": {"tool.execute.after": TOOL_RESULT},
}
"""Per host (its ``Host`` value), the lifecycle events Reviewer follows and what each means."""


def result_text(value: Any) -> str:
    """A tool's result as the run's timeline shows it (cut at :data:`MAX_RESULT_CHARS`)."""
    if isinstance(value, str):
        text = value
    elif isinstance(value, dict):  # Gemini {llmContent, returnDisplay, error}; Copilot {resultType, textResultForLlm}
        for key in ("textResultForLlm", "llmContent", "output", "returnDisplay", "stdout"):
            if isinstance(value.get(key), str):
                return result_text(value[key])
        text = dumps(value, ensure_ascii=False)
    else:
        text = dumps(value, ensure_ascii=False)
    return text if len(text) <= MAX_RESULT_CHARS else text[:MAX_RESULT_CHARS] + "\n… (cut)"


def _failed(value: Any) -> bool:
    if not isinstance(value, dict):
        return False
    return bool(value.get("error")) or value.get("resultType") in ("failure", "denied", "error")


def lifecycle_fields(host: str, name: str, payload: bytes) -> dict[str, Any]:
    """One lifecycle event of ``host`` as ``session.Lifecycle``'s fields; :class:`HookInputError` when it is not
    one Reviewer follows."""
    kind = LIFECYCLE_EVENT_KINDS.get(host, {}).get(name)
    if kind is None:
        raise HookInputError(f"the {host} hook does not follow {name!r}")
    raw = load_object(payload)
    session = (
        text_field(raw, "session_id", required=False)
        or text_field(raw, "sessionId", required=False)
        or (f"copilot:{raw.get('cwd') or '?'}" if host == "copilot" else None)
    )
    if session is None:
        raise HookInputError("the event names no session")
    run = text_field(raw, "prompt_id", required=False) if host in ("qwen", "factory") else session
    transcript = text_field(raw, "transcript_path", required=False) if host == "claude-code" else None
    cwd = text_field(raw, "cwd", required=False, limit=4096)
    if host == "claude-code":  # the gating hook's run: the prompt, else the session
        run = text_field(raw, "prompt_id", required=False) or (None if kind == PROMPT else session)
    fields: dict[str, Any] = {"kind": kind, "session_id": session, "run_id": run}
    fields.update(transcript_path=transcript, cwd=cwd)
    if kind == PROMPT:
        fields["prompt"] = (text_field(raw, "prompt", required=False, limit=None) or "")[:MAX_PROMPT_CHARS] or None
        return fields
    if kind != TOOL_RESULT:
        return fields
    if host == "copilot":
        tool, arguments, response = raw.get("toolName"), raw.get("toolArgs"), raw.get("toolResult")
        if isinstance(arguments, str):
            try:
                arguments = loads(arguments)
            except decode_error():  # (json is imported only for the error)
                pass
    elif host == "opencode":
        tool, arguments, response = raw.get("tool"), raw.get("args"), raw.get("output")
    else:
        tool, arguments, response = raw.get("tool_name"), raw.get("tool_input"), raw.get("tool_response")
    call_id = (
        text_field(raw, "tool_use_id", required=False)
        or text_field(raw, "call_id", required=False)
        or text_field(raw, "toolCallId", required=False)
    )
    if call_id is None:  # Gemini and Copilot name no call: the call's content and time do
        from reviewer_app.domain.sha import new

        seed = dumps([tool, arguments, raw.get("timestamp")], sort_keys=True, default=str)
        call_id = "call_" + new("sha256", seed.encode()).hexdigest()[:16]
    fields.update(
        tool_name=tool if isinstance(tool, str) else None,
        call_id=call_id,
        arguments=arguments,
        result=result_text(response),
        ok=not _failed(response),
    )
    return fields
