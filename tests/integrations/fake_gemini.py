"""A small Gemini API on 127.0.0.1 for driving the real Gemini CLI in tests.

The CLI first asks a router model which model to use (``:generateContent``): the answer is a JSON choice. The
main turn (``:streamGenerateContent?alt=sse``) asks for the next of its function calls, one a turn; once every
call has its function response it answers with text quoting the last. Function responses the CLI sent back are kept.
"""

from __future__ import annotations

import json
from typing import Any

from tests.integrations.fake_server import FakeServer, Reply, json_reply

ROUTER_CHOICE = {
    "reasoning": "a test",
    "model_choice": "flash",
    "complexity_reasoning": "a test",
    "complexity_score": 1,
}


def _function_responses(body: dict[str, Any]) -> list[Any]:
    return [
        part["functionResponse"]
        for content in body.get("contents") or []
        for part in content.get("parts") or []
        if isinstance(part, dict) and "functionResponse" in part
    ]


class FakeGemini(FakeServer):
    def __init__(self, tool: str, *calls: dict[str, Any]) -> None:
        """``calls``: the arguments of each call of ``tool`` the model asks for, one turn each."""
        super().__init__()
        self.tool = tool
        self.calls = calls

    def function_responses(self) -> list[str]:
        """Every function response the CLI sent back, as JSON text."""
        seen: list[str] = []
        for body in self.bodies():
            for response in _function_responses(body):
                text = json.dumps(response.get("response"))
                if text not in seen:
                    seen.append(text)
        return seen

    def answer(self, path: str, body: dict[str, Any]) -> Reply:
        if ":countTokens" in path:
            return json_reply({"totalTokens": 10})
        if ":generateContent" in path:  # the router's model choice (and any other one-shot call)
            parts = [{"text": json.dumps(ROUTER_CHOICE)}]
            return json_reply({"candidates": [{"content": {"role": "model", "parts": parts}}]})
        self.keep(body)
        responses = _function_responses(body)
        if len(responses) >= len(self.calls):
            part: dict[str, Any] = {"text": f"The tool said: {json.dumps(responses[-1])[:500]}"}
        else:
            part = {"functionCall": {"name": self.tool, "args": self.calls[len(responses)]}}
        turn = {
            "candidates": [{"content": {"role": "model", "parts": [part]}, "finishReason": "STOP", "index": 0}],
            "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15},
            "modelVersion": "gemini-fake",
        }
        return Reply(f"data: {json.dumps(turn)}\r\n\r\n".encode(), "text/event-stream")
