"""A small Anthropic Messages API on 127.0.0.1 for driving the real Claude Code CLI in tests.

The main agent's first turn asks for one tool call (``Bash`` with the command given), each later turn for the next
of ``then`` while any is left; once every call has its tool result it answers with text quoting the last (or, given
``repeat_input``, asks once more under the same ``tool_use`` id with other input, as a hostile endpoint might, and
answers after that one). Side requests (titles, topic checks: those without the tool) get a short text. Every
request is kept in ``requests`` for the test to inspect.
"""

from __future__ import annotations

import json
from typing import Any

from tests.integrations.fake_server import FakeServer, Reply, json_reply, sse


def _tool_results(body: dict[str, Any]) -> list[dict[str, Any]]:
    results = []
    for message in body.get("messages") or []:
        content = message.get("content")
        if message.get("role") == "user" and isinstance(content, list):
            results.extend(block for block in content if isinstance(block, dict) and block.get("type") == "tool_result")
    return results


def _result_text(result: dict[str, Any]) -> str:
    content = result.get("content")
    if isinstance(content, list):
        return " ".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return str(content or "")


class FakeAnthropic(FakeServer):
    """``with FakeAnthropic(tool_name, tool_input) as api: ... api.url``."""

    def __init__(
        self,
        tool_name: str = "Bash",
        tool_input: dict[str, Any] | None = None,
        *,
        thinking: str = "",
        repeat_input: dict[str, Any] | None = None,
        then: tuple[dict[str, Any], ...] = (),
    ) -> None:
        super().__init__()
        self.tool_name = tool_name
        self.tool_input = tool_input or {"command": "echo hello", "description": "say hello"}
        self.inputs = (self.tool_input, *then)
        self.thinking = thinking
        self.repeat_input = repeat_input

    def tool_results(self) -> list[str]:
        """The text of every tool result the CLI sent back (last request first seen)."""
        seen: dict[str, str] = {}
        for body in self.bodies():
            for result in _tool_results(body):
                seen[str(result.get("tool_use_id"))] = _result_text(result)
        return list(seen.values())

    def _reply(self, body: dict[str, Any]) -> tuple[list[dict[str, Any]], str]:
        """Content blocks and stop reason for one request."""
        tools = {tool.get("name") for tool in body.get("tools") or [] if isinstance(tool, dict)}
        results = _tool_results(body)
        if self.repeat_input is not None and results and self.tool_name in tools:
            self.repeat_input, repeated_input = None, self.repeat_input  # once
            repeated = {"type": "tool_use", "id": "toolu_fake_0001", "name": self.tool_name, "input": repeated_input}
            return [{"type": "text", "text": "Once more."}, repeated], "tool_use"
        if results and len(results) >= len(self.inputs):
            text = "Done. The tool said: " + _result_text(results[-1])
            return [{"type": "text", "text": text}], "end_turn"
        if self.tool_name in tools:
            blocks: list[dict[str, Any]] = []
            if self.thinking and not results:
                blocks.append({"type": "thinking", "thinking": self.thinking, "signature": "sig"})
            blocks.append({"type": "text", "text": "I will run the tool now."})
            call_id = f"toolu_fake_{len(results) + 1:04d}"
            blocks.append(
                {"type": "tool_use", "id": call_id, "name": self.tool_name, "input": self.inputs[len(results)]}
            )
            return blocks, "tool_use"
        return [{"type": "text", "text": "Reviewer test"}], "end_turn"

    def answer_get(self, path: str) -> Reply:
        return json_reply({"type": "error", "error": {"type": "not_found_error", "message": "not here"}}, 404)

    def answer(self, path: str, body: dict[str, Any]) -> Reply:
        path = path.split("?", 1)[0]
        if path.endswith("/count_tokens"):
            return json_reply({"input_tokens": 42})
        if not path.endswith("/v1/messages"):
            return json_reply({"type": "error", "error": {"type": "not_found_error", "message": path}}, 404)
        number = self.keep(body)
        blocks, stop = self._reply(body)
        message = {
            "id": f"msg_fake_{number}",
            "type": "message",
            "role": "assistant",
            "model": body.get("model") or "claude-test",
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {"input_tokens": 12, "output_tokens": 1},
        }
        if not body.get("stream"):
            return json_reply({**message, "content": blocks, "stop_reason": stop})
        return Reply(b"".join(_stream(message, blocks, stop)), "text/event-stream", stream=True)


def _stream(message: dict[str, Any], blocks: list[dict[str, Any]], stop: str) -> list[bytes]:
    """The message as Anthropic streams it: start, each block as start, delta(s) and stop, then the end."""
    out = [sse("message_start", {"type": "message_start", "message": message})]
    for index, block in enumerate(blocks):
        if block["type"] == "text":
            start = {"type": "text", "text": ""}
            delta = {"type": "text_delta", "text": block["text"]}
        elif block["type"] == "thinking":
            start = {"type": "thinking", "thinking": ""}
            delta = {"type": "thinking_delta", "thinking": block["thinking"]}
        else:
            start = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
        out.append(sse("content_block_start", {"type": "content_block_start", "index": index, "content_block": start}))
        out.append(sse("content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}))
        if block["type"] == "thinking":
            sig = {"type": "signature_delta", "signature": block["signature"]}
            out.append(sse("content_block_delta", {"type": "content_block_delta", "index": index, "delta": sig}))
        out.append(sse("content_block_stop", {"type": "content_block_stop", "index": index}))
    end = {
        "type": "message_delta",
        "delta": {"stop_reason": stop, "stop_sequence": None},
        "usage": {"output_tokens": 20},
    }
    out.append(sse("message_delta", end))
    out.append(sse("message_stop", {"type": "message_stop"}))
    return out
