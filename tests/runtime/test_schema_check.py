"""A tool's arguments checked against its schema: the compiled check only accepts, jsonschema words every error."""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from reviewer_app.runtime.schema_check import ArgumentsValidator
from reviewer_app.runtime.tools import ToolArgumentsError, builtin_tools

WRITE = {
    "type": "object",
    "properties": {"path": {"type": "string"}, "content": {"type": "string"}, "mode": {"enum": ["a", "w"]}},
    "required": ["path", "content"],
    "additionalProperties": False,
}


def test_a_plain_schema_is_compiled_and_valid_arguments_pass() -> None:
    validator = ArgumentsValidator(WRITE)
    assert validator.compiled
    assert validator.errors({"path": "a.txt", "content": "x", "mode": "w"}) == []


@pytest.mark.parametrize(
    ("arguments", "messages"),
    [
        ({"path": "a.txt"}, ["'content' is a required property"]),
        ({"path": 7, "content": "x"}, ["7 is not of type 'string'"]),
        ({"path": "a", "content": "x", "mode": "r"}, ["'r' is not one of ['a', 'w']"]),
        (
            {"path": "a", "content": "x", "colour": 1},
            ["Additional properties are not allowed ('colour' was unexpected)"],
        ),
        ([], ["[] is not of type 'object'"]),
    ],
)
def test_invalid_arguments_get_jsonschemas_errors(arguments: Any, messages: list[str]) -> None:
    assert [error.message for error in ArgumentsValidator(WRITE).errors(arguments)] == messages


def test_a_value_that_is_not_json_data_is_judged_by_jsonschema() -> None:
    errors = ArgumentsValidator(WRITE).errors({"path": "a", "content": object()})
    assert [error.validator for error in errors] == ["type"]


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "object", "properties": {"name": {"type": "string", "pattern": "^[a-z]+$"}}},
        {"type": "object", "patternProperties": {"^x-": {"type": "string"}}},
        {"type": "object", "properties": {"n": {"type": "number", "multipleOf": 0.1}}},
        {"type": "object", "properties": {"when": {"type": "string", "format": "date"}}},
        {"$schema": "http://json-schema.org/draft-04/schema#", "type": "object"},
        {"type": "object", "$defs": {"s": {"type": "string"}}, "properties": {"a": {"$ref": "#/$defs/s"}}},
    ],
)
def test_schemas_whose_meaning_could_differ_are_left_to_jsonschema(schema: dict[str, Any]) -> None:
    assert not ArgumentsValidator(schema).compiled


def test_python_regex_semantics_still_decide_a_pattern() -> None:
    # Python's \Z (end of string) has no counterpart in the compiled check's regex dialect.
    schema = {"type": "object", "properties": {"id": {"type": "string", "pattern": r"^[a-z]+\Z"}}}
    validator = ArgumentsValidator(schema)
    assert validator.errors({"id": "abc"}) == []
    assert [error.validator for error in validator.errors({"id": "abc\n"})] == ["pattern"]


@pytest.fixture
def schema_server() -> Iterator[tuple[str, list[str]]]:
    """A real HTTP server on 127.0.0.1 that records every path asked of it."""
    asked: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            asked.append(self.path)
            body = b'{"type": "string"}'
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", asked
    finally:
        server.shutdown()
        server.server_close()


def test_compiling_a_schema_that_refers_outside_itself_fetches_nothing(schema_server: tuple[str, list[str]]) -> None:
    base, asked = schema_server
    schema = {"type": "object", "properties": {"a": {"$ref": f"{base}/name.json"}}}
    assert not ArgumentsValidator(schema).compiled
    assert asked == []


def test_the_registry_words_errors_as_before() -> None:
    tools = builtin_tools()
    with pytest.raises(ToolArgumentsError, match="missing required field 'content'"):
        tools.validate("write_file", {"path": "a.txt"})
    with pytest.raises(ToolArgumentsError, match="field 'path' must be string, got integer"):
        tools.validate("write_file", {"path": 7, "content": "x"})
    assert tools.validate("write_file", {"path": "a.txt", "content": "x"}) == {"path": "a.txt", "content": "x"}


def test_a_property_named_like_a_keyword_keeps_the_compiled_check() -> None:
    schema = {"type": "object", "properties": {"pattern": {"type": "string"}, "format": {"type": "string"}}}
    validator = ArgumentsValidator(schema)
    assert validator.compiled
    assert validator.errors({"pattern": "a*", "format": "x"}) == []
    assert [error.validator for error in validator.errors({"pattern": 1})] == ["type"]


def test_every_builtin_tool_is_compiled() -> None:
    tools = builtin_tools()
    assert all(tools._validators[name].compiled for name in tools.names())
