"""A schema is hostile input: its ``$ref`` to a URL is never fetched.

Tool schemas come from agents and MCP servers, a request's schema from a row another process wrote, a form from an
MCP message. ``jsonschema`` fetches a remote ``$ref`` by default, so any of them could make Reviewer send requests to
an address of the attacker's choosing (an internal service, a cloud metadata endpoint) or hang a check on a slow
server. Each way a schema is checked is tried here against a real HTTP server on 127.0.0.1 that counts what it is
asked; it must be asked nothing, and the check must end in a clear error, never a crash or a pass.
"""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from reviewer_app.domain.decisions import Decision, DecisionError, DecisionKind, args_digest
from reviewer_app.domain.hitl import HITLStatus, HITLType
from reviewer_app.domain.json_schemas import SchemaProblem, schema_errors
from reviewer_app.hitl.gate import validate_decision
from reviewer_app.integrations.core import Outcome
from reviewer_app.integrations.mcp_proxy.elicitation import ElicitationError, answer_content
from reviewer_app.runtime.tools import ToolArgumentsError, ToolRegistry, ToolSpec


class _CountingServer:
    def __init__(self) -> None:
        self.asked: list[str] = []
        asked = self.asked

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                asked.append(self.path)
                body = b'{"type": "integer"}'
                self.send_response(200)
                self.send_header("Content-Type", "application/schema+json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.server.server_port}{path}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def server() -> Iterator[_CountingServer]:
    counting = _CountingServer()
    try:
        yield counting
    finally:
        counting.close()


def _schema(server: _CountingServer) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {"count": {"$ref": server.url("/metadata/count.json")}, "name": {"$ref": "#/$defs/name"}},
        "$defs": {"name": {"type": "string"}},
    }


def test_a_schema_check_follows_references_inside_the_schema_only(server: _CountingServer) -> None:
    schema = _schema(server)
    [local] = schema_errors({"name": 3}, schema)  # a reference inside the schema is followed
    assert "is not of type 'string'" in local.message
    with pytest.raises(SchemaProblem, match=r"refers to http://127\.0\.0\.1:\d+/metadata/count\.json"):
        schema_errors({"count": "three"}, schema)
    assert server.asked == []


def test_an_invalid_schema_is_a_schema_problem_not_a_crash() -> None:
    with pytest.raises(SchemaProblem, match="not a valid JSON Schema"):
        schema_errors({"a": 1}, {"type": "object", "properties": {"a": {"type": 12}}})


def _noop(args: dict[str, Any], ctx: Any) -> str:
    return "ok"


def test_a_tool_schema_with_a_remote_reference_refuses_the_call_without_fetching(server: _CountingServer) -> None:
    registry = ToolRegistry([ToolSpec("count", "count things", _schema(server), _noop)])
    with pytest.raises(ToolArgumentsError, match="not fetched"):
        registry.validate("count", {"count": 3})
    assert server.asked == []


def _record(schema: dict[str, Any]) -> dict[str, Any]:
    arguments = {"count": 1}
    return {
        "hitl_id": "h1",
        "hitl_type": HITLType.TOOL_APPROVAL.value,
        "status": HITLStatus.PENDING.value,
        "tool_name": "count",
        "data": {"arguments": arguments, "schema": schema},
    }


def test_an_edit_is_checked_against_a_stored_schema_without_fetching(server: _CountingServer) -> None:
    record = _record(_schema(server))
    decision = Decision(DecisionKind.EDIT, edited_args={"count": 2}, args_sha256=args_digest({"count": 1}))
    with pytest.raises(DecisionError, match="not fetched"):
        validate_decision(record, decision)  # type: ignore[arg-type]
    assert server.asked == []


def test_an_edit_against_an_invalid_stored_schema_is_refused_with_a_reason() -> None:
    record = _record({"type": "object", "properties": {"count": {"minimum": "many"}}})
    decision = Decision(DecisionKind.EDIT, edited_args={"count": 2}, args_sha256=args_digest({"count": 1}))
    with pytest.raises(DecisionError, match="not a valid JSON Schema"):
        validate_decision(record, decision)  # type: ignore[arg-type]


def test_an_mcp_form_answer_is_checked_without_fetching(server: _CountingServer) -> None:
    outcome = Outcome(record={}, kind=DecisionKind.RESPOND, arguments=None, message='{"count": 3}', reviewer="op")  # type: ignore[arg-type]
    with pytest.raises(ElicitationError, match="not fetched"):
        answer_content(outcome, _schema(server))
    assert server.asked == []


def test_the_edit_dialog_checks_without_fetching(qtbot: Any, server: _CountingServer) -> None:
    from reviewer_app.ui.dialogs.edit import EditArgumentsDialog

    dialog = EditArgumentsDialog("count", {"count": 1}, _schema(server))
    qtbot.addWidget(dialog)
    dialog.tabs.setCurrentIndex(EditArgumentsDialog.JSON_TAB)
    dialog.editor.setPlainText('{"count": 2}')
    assert not dialog.validate()
    assert "not fetched" in dialog.error_label.text()
    assert server.asked == []
