"""A small OpenAI chat-completions API on 127.0.0.1 for driving real agent CLIs (Qwen Code, Copilot, Factory,
OpenCode) in tests.

Each turn asks for the next of its tool calls (the first when no tool message has arrived yet, the second after
one has...); once every call has its tool message it answers with text quoting the last. Streaming
(``stream: true``) and plain answers are both served. Tool results the CLI sent back are kept.
"""

from __future__ import annotations

import json
import time
from typing import Any

from tests.integrations.fake_server import FakeServer, Reply, json_reply

USAGE = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}


class FakeChat(FakeServer):
    url_path = "/v1"

    def __init__(self, tool: str, *calls: dict[str, Any]) -> None:
        """``calls``: the arguments of each call of ``tool`` the model asks for, one turn each."""
        super().__init__()
        self.tool = tool
        self.calls = calls

    def tool_results(self) -> list[str]:
        seen: list[str] = []
        for body in self.bodies():
            for message in body.get("messages") or []:
                if isinstance(message, dict) and message.get("role") == "tool":
                    content = message.get("content")
                    text = content if isinstance(content, str) else json.dumps(content)
                    if text not in seen:
                        seen.append(text)
        return seen

    def _message(self, body: dict[str, Any]) -> dict[str, Any]:
        results = [m for m in body.get("messages") or [] if isinstance(m, dict) and m.get("role") == "tool"]
        if len(results) >= len(self.calls):
            return {"role": "assistant", "content": f"The tool said: {json.dumps(results[-1].get('content'))[:500]}"}
        call = {
            "id": f"call_{len(self.requests)}",
            "type": "function",
            "function": {"name": self.tool, "arguments": json.dumps(self.calls[len(results)])},
        }
        return {"role": "assistant", "content": None, "tool_calls": [call]}

    def answer(self, path: str, body: dict[str, Any]) -> Reply:
        self.keep(body)
        message = self._message(body)
        finish = "tool_calls" if message.get("tool_calls") else "stop"
        base = {"id": "chatcmpl-fake", "created": int(time.time()), "model": body.get("model", "fake-model")}
        if not body.get("stream"):
            choice = {"index": 0, "message": message, "finish_reason": finish}
            return json_reply({**base, "object": "chat.completion", "choices": [choice], "usage": USAGE})
        delta = dict(message)
        if delta.get("tool_calls"):
            delta["tool_calls"] = [{"index": 0, **call} for call in delta["tool_calls"]]
        chunk = {**base, "object": "chat.completion.chunk"}
        chunks = [
            {**chunk, "choices": [{"index": 0, "delta": delta}]},
            {**chunk, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}], "usage": USAGE},
        ]
        data = b"".join(f"data: {json.dumps(item)}\n\n".encode() for item in chunks) + b"data: [DONE]\n\n"
        return Reply(data, "text/event-stream")
