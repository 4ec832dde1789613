"""A small OpenAI Responses API on 127.0.0.1 for driving the real Codex CLI in tests.

The first turn asks for one shell call (whichever shell tool Codex offers: ``shell_command``, ``exec_command``
or ``shell``); once a function-call output arrives it answers with text quoting it. Requests are kept.
"""

from __future__ import annotations

import json
from typing import Any

from tests.integrations.fake_server import FakeServer, Reply, json_reply, sse


def _event(kind: str, data: dict[str, Any]) -> bytes:
    return sse(kind, {"type": kind, **data})


class FakeResponses(FakeServer):
    url_path = "/v1"

    def __init__(self, command: str) -> None:
        super().__init__()
        self.command = command

    def outputs(self) -> list[str]:
        """Every function-call output Codex sent back."""
        seen: dict[str, str] = {}
        for body in self.bodies():
            for item in body.get("input") or []:
                if isinstance(item, dict) and item.get("type") in ("function_call_output", "custom_tool_call_output"):
                    output = item.get("output")
                    seen[str(item.get("call_id"))] = output if isinstance(output, str) else json.dumps(output)
        return list(seen.values())

    def _call(self, body: dict[str, Any]) -> dict[str, Any] | None:
        names = {tool.get("name") for tool in body.get("tools") or [] if isinstance(tool, dict)}
        if "shell_command" in names:
            return {"name": "shell_command", "arguments": json.dumps({"command": self.command})}
        if "exec_command" in names:
            # Asking to run outside the sandbox makes Codex ask for approval (and so run PermissionRequest hooks).
            arguments = {"cmd": self.command, "sandbox_permissions": "require_escalated", "justification": "a marker"}
            return {"name": "exec_command", "arguments": json.dumps(arguments)}
        if "shell" in names:
            return {"name": "shell", "arguments": json.dumps({"command": ["bash", "-lc", self.command]})}
        return None

    def answer_get(self, path: str) -> Reply:
        if path.split("?", maxsplit=1)[0].endswith("/models"):
            return json_reply({"object": "list", "data": [], "models": []})
        return json_reply({"error": {"message": "not here"}}, 404)

    def answer(self, path: str, body: dict[str, Any]) -> Reply:
        if not path.split("?", maxsplit=1)[0].endswith("/responses"):
            return json_reply({"error": {"message": path}}, 404)
        number = self.keep(body)
        answered = any(
            isinstance(item, dict) and item.get("type") in ("function_call_output", "custom_tool_call_output")
            for item in body.get("input") or []
        )
        call = None if answered else self._call(body)
        if call is not None:
            item = {"type": "function_call", "id": f"fc_{number}", "call_id": f"call_{number}", **call}
        else:
            outputs = self.outputs()
            text = "Done. The tool said: " + (outputs[-1] if outputs else "nothing")
            item = {
                "type": "message",
                "id": f"msg_{number}",
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": text, "annotations": []}],
            }
        response = {"id": f"resp_{number}", "object": "response", "status": "in_progress", "output": []}
        usage = {
            "input_tokens": 10,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": 5,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": 15,
        }
        events = (
            _event("response.created", {"response": response})
            + _event("response.output_item.added", {"output_index": 0, "item": item})
            + _event("response.output_item.done", {"output_index": 0, "item": item})
            + _event(
                "response.completed",
                {"response": {**response, "status": "completed", "output": [item], "usage": usage}},
            )
        )
        return Reply(events, "text/event-stream", stream=True)
