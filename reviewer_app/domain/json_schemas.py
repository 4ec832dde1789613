"""JSON Schema checks on schemas Reviewer did not write: a reference to a URL is never fetched.

Tool schemas come from agents and MCP servers, a request's schema from a row another process wrote, a form from an
MCP message. ``jsonschema`` fetches a ``$ref`` it cannot find in the schema, so a hostile schema could make Reviewer
call an address of its choosing (an internal service, a cloud metadata endpoint) or hang a check on a slow server.
Every check here follows references inside the schema only; anything else, and a schema that is not valid, is a
:class:`SchemaProblem` with a reason, never a crash and never a pass. ``jsonschema`` is imported on first use (it
costs ~40 ms, off the window's start).
"""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from jsonschema.exceptions import ValidationError
    from jsonschema.protocols import Validator
    from referencing import Registry


class SchemaProblem(ValueError):
    """The schema cannot be used to check anything: it is not valid, or it refers outside itself."""


def _refuse(uri: str) -> Any:
    from referencing.exceptions import NoSuchResource

    raise NoSuchResource(ref=uri)  # type: ignore[call-arg]


@cache
def _registry() -> Registry[Any]:
    from referencing import Registry

    return Registry(retrieve=_refuse)  # type: ignore[call-arg]


def schema_validator(schema: Any, validator_class: type[Validator] | None = None) -> Validator:
    """A validator for ``schema`` that resolves references inside it only.

    ``validator_class``: the draft to use; by default the one ``$schema`` names, else Draft 2020-12.
    """
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import SchemaError
    from jsonschema.validators import validator_for

    if not isinstance(schema, dict):
        raise SchemaProblem(f"the schema is not a JSON object: {type(schema).__name__}")
    cls = validator_class or validator_for(schema, default=Draft202012Validator)
    try:
        cls.check_schema(schema)
    except SchemaError as exc:
        raise SchemaProblem(f"the schema is not a valid JSON Schema: {exc.message}") from exc
    return cls(schema, registry=_registry())


def validator_errors(validator: Validator, instance: Any) -> list[ValidationError]:
    """Every way ``instance`` breaks the validator's schema, shallowest first (none: it fits)."""
    from referencing.exceptions import Unresolvable

    try:
        errors = list(validator.iter_errors(instance))
    except Unresolvable as exc:
        raise SchemaProblem(
            f"the schema refers to {exc.ref}, which is not fetched: only references inside the schema are followed"
        ) from exc
    return sorted(errors, key=lambda error: (len(error.absolute_path), list(map(str, error.path))))


def schema_errors(instance: Any, schema: Any) -> list[ValidationError]:
    """Every way ``instance`` breaks ``schema``, shallowest first; :class:`SchemaProblem` if the schema is unusable."""
    return validator_errors(schema_validator(schema), instance)


def best_error(instance: Any, schema: Any) -> ValidationError | None:
    """The error ``jsonschema.validate`` would raise for ``instance`` (None: it fits), without fetching anything."""
    from jsonschema.exceptions import best_match

    error: ValidationError | None = best_match(schema_errors(instance, schema))
    return error
