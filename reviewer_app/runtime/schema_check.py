"""A tool's arguments checked against its JSON schema: a compiled check says "valid" at once, ``jsonschema`` explains.

Every gated call is validated inside the transaction that suspends its run, and ``jsonschema`` spent ~25 µs on two
string fields (a third of the gate's own work). ``jsonschema-rs`` (compiled) answers the same question in well under
a microsecond. It is trusted only to *accept*: whenever it rejects (or cannot judge) a call, ``jsonschema`` decides
and words the errors, so an error the model sees is always ``jsonschema``'s. It is not used at all for schemas whose
meaning could differ between the two (regular expressions, references, other drafts, float ``multipleOf``), and it
never fetches anything: a schema that refers outside itself keeps ``jsonschema`` alone.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from jsonschema import Draft202012Validator, ValidationError

from reviewer_app.domain.json_schemas import schema_validator, validator_errors

# Keywords whose meaning could differ between the two libraries (regex dialects, reference resolution, the draft
# chosen by ``$schema``, float arithmetic): a schema using any of them is checked by ``jsonschema`` alone.
_ONLY_JSONSCHEMA = frozenset(
    {
        "$ref",
        "$dynamicRef",
        "$recursiveRef",
        "$schema",
        "$id",
        "$anchor",
        "$dynamicAnchor",
        "pattern",
        "patternProperties",
        "propertyNames",
        "multipleOf",
        "format",
        "contentEncoding",
        "contentMediaType",
        "contentSchema",
    }
)


# Keywords whose value maps names (of properties, definitions) to subschemas: those names are not keywords.
_NAMING = frozenset({"properties", "$defs", "definitions", "dependentSchemas"})


def _keywords(schema: Any) -> Iterator[str]:
    """Every keyword used anywhere in ``schema`` (a property called ``pattern`` is not one)."""
    stack = [schema]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            for key, value in item.items():
                yield str(key)
                if key in _NAMING and isinstance(value, dict):
                    stack.extend(value.values())
                else:
                    stack.append(value)
        elif isinstance(item, list):
            stack.extend(item)


def _refuse_retrieval(uri: str) -> Any:
    raise ValueError(f"tool schemas are not fetched ({uri})")


def _compiled(schema: dict[str, Any]) -> Callable[[Any], bool] | None:
    """``jsonschema-rs``'s ``is_valid`` for ``schema``, or None when ``jsonschema`` should judge alone."""
    if any(key in _ONLY_JSONSCHEMA for key in _keywords(schema)):
        return None
    try:
        import jsonschema_rs

        validator = jsonschema_rs.Draft202012Validator(schema, retriever=_refuse_retrieval)
    except Exception:  # not installed, or a schema it does not take: jsonschema alone
        return None
    is_valid: Callable[[Any], bool] = validator.is_valid
    return is_valid


class ArgumentsValidator:
    """One tool's schema, compiled for both checks (see the module docstring)."""

    __slots__ = ("_fast", "_full")

    def __init__(self, schema: dict[str, Any]) -> None:
        self._full = schema_validator(schema, Draft202012Validator)
        self._fast = _compiled(schema)

    @property
    def compiled(self) -> bool:
        """Whether valid arguments are accepted by the compiled check (else ``jsonschema`` judges every call)."""
        return self._fast is not None

    def errors(self, arguments: Any) -> list[ValidationError]:
        """The arguments' schema errors (none: valid), shallowest first.

        Raises :class:`~reviewer_app.domain.json_schemas.SchemaProblem` when the schema refers outside itself.
        """
        fast = self._fast
        if fast is not None:
            try:
                if fast(arguments):
                    return []
            except Exception:  # a value it cannot convert (not JSON data): jsonschema judges
                pass
        return sorted(validator_errors(self._full, arguments), key=lambda e: (len(e.absolute_path), e.path))
