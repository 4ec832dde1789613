"""An upstream's form elicitation as a Reviewer question, and the reviewer's answer as an ``ElicitResult``.

The form is the request's ``requestedSchema`` (a flat object of primitive fields). The reviewer answers with
the field values as a JSON object (or, for a one-field form, the bare value); rejecting declines, a cancelled
or expired question cancels, as the MCP specification's three actions say.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from reviewer_app.domain.decisions import DecisionKind
from reviewer_app.domain.json_schemas import SchemaProblem, best_error
from reviewer_app.integrations.core import Outcome


class ElicitationError(ValueError):
    """The upstream's elicitation request is not a valid form request."""


def parse_form_request(params: Any) -> tuple[str, dict[str, Any]]:
    """The message and requested schema of a form-mode ``elicitation/create``, validated by the MCP SDK's types."""
    if not isinstance(params, Mapping):
        raise ElicitationError("elicitation/create needs params")
    _check_with_sdk(params)
    message, schema = params.get("message"), params.get("requestedSchema")
    if not isinstance(message, str) or not isinstance(schema, Mapping) or schema.get("type") != "object":
        raise ElicitationError("a form elicitation needs a message and an object requestedSchema")
    return message, dict(schema)


def _check_with_sdk(params: Mapping[str, Any]) -> None:
    try:  # imported on the first elicitation: pydantic alone would add ~40 ms of CPU to every proxy start
        from mcp.types import ElicitRequestFormParams
        from pydantic import ValidationError
    except ImportError:  # installed without the ``mcp`` extra: the checks below still run
        return
    try:
        ElicitRequestFormParams.model_validate(dict(params))
    except ValidationError as exc:
        raise ElicitationError(f"invalid form elicitation: {exc.errors()[0].get('msg', exc)}") from exc


def question_data(server: str, message: str, schema: Mapping[str, Any]) -> dict[str, Any]:
    """The ask_user request's data: the question, its form, and the choices of a one-field enum form."""
    properties = schema.get("properties") if isinstance(schema.get("properties"), Mapping) else {}
    data: dict[str, Any] = {"question": message, "form": dict(schema), "mcp_server": server}
    if isinstance(properties, Mapping) and len(properties) == 1:
        only = next(iter(properties.values()))
        if isinstance(only, Mapping) and isinstance(only.get("enum"), list):
            data["options"] = [str(value) for value in only["enum"]]
    return data


def _coerce(value: str, field: Mapping[str, Any]) -> Any:
    kind = field.get("type")
    if kind == "boolean":
        return value.strip().lower() in ("true", "yes", "y", "1")
    if kind in ("integer", "number"):
        try:
            number = json.loads(value)
        except json.JSONDecodeError:
            return value
        return number
    return value


def answer_content(outcome: Outcome, schema: Mapping[str, Any]) -> dict[str, Any]:
    """The form's content from a reviewer's answer; raises :class:`ElicitationError` if it does not fit."""
    response = outcome.record.get("user_response") or {}
    content: Any = response.get("content") if isinstance(response, Mapping) else None
    text = outcome.message or ""
    if content is None:
        try:
            content = json.loads(text)
        except json.JSONDecodeError:
            content = None
    properties = schema.get("properties") if isinstance(schema.get("properties"), Mapping) else {}
    if not isinstance(content, dict) and isinstance(properties, Mapping) and len(properties) == 1:
        name, field = next(iter(properties.items()))
        content = {name: _coerce(text, field if isinstance(field, Mapping) else {})}
    if not isinstance(content, dict):
        raise ElicitationError("the answer is not a JSON object of the form's fields")
    try:
        error = best_error(content, dict(schema))
    except SchemaProblem as exc:
        raise ElicitationError(f"the form cannot be checked: {exc}") from exc
    if error is not None:
        raise ElicitationError(f"the answer does not fit the form: {error.message}")
    return content


def elicit_result(outcome: Outcome, schema: Mapping[str, Any]) -> dict[str, Any]:
    """The ``ElicitResult`` for the upstream: accept with content, decline, or cancel."""
    if outcome.kind is DecisionKind.RESPOND:
        return {"action": "accept", "content": answer_content(outcome, schema)}
    if outcome.kind in (DecisionKind.REJECT, DecisionKind.STEER):
        return {"action": "decline"}
    return {"action": "cancel"}
