"""The Core tables the store uses (``persistence/core_tables.py``) are the SQLModel tables (``persistence/tables.py``,
the schema's definition), column for column: a change made to one and not the other fails here."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import Column, Index, MetaData, Table, TypeDecorator
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.schema import CreateIndex, CreateTable

from reviewer_app.persistence import core_tables, tables


def _column(column: Column[Any]) -> tuple[Any, ...]:
    default = column.default
    return (
        column.name,
        column.key,
        repr(column.type.impl if isinstance(column.type, TypeDecorator) else column.type),  # SQLModel's str: a String
        column.nullable,
        column.primary_key,
        column.autoincrement,
        None if default is None else (type(default).__name__, getattr(default, "arg", None)),
        None if column.server_default is None else str(getattr(column.server_default, "arg", None)),
        bool(column.index),
        bool(column.unique),
        sorted(foreign.target_fullname for foreign in column.foreign_keys),
    )


def _indexes(table: Table) -> list[Index]:
    return sorted(table.indexes, key=lambda index: str(index.name))


def _table(table: Table) -> dict[str, Any]:
    return {
        "columns": [_column(column) for column in table.columns],
        "indexes": sorted((index.name, [c.name for c in index.columns], index.unique) for index in table.indexes),
        "constraints": sorted(
            (type(constraint).__name__, str(constraint.name), sorted(c.name for c in constraint.columns))
            for constraint in table.constraints
        ),
        "ddl": [
            str(statement.compile(dialect=dialect)).strip()
            for dialect in (sqlite.dialect(), postgresql.dialect())
            for statement in [CreateTable(table), *(CreateIndex(index) for index in _indexes(table))]
        ],
    }


def _schema(metadata: MetaData) -> dict[str, dict[str, Any]]:
    return {table.name: _table(table) for table in metadata.sorted_tables}


def test_the_core_tables_are_the_sqlmodel_tables() -> None:
    assert _schema(core_tables.metadata) == _schema(tables.metadata)


@pytest.mark.parametrize(
    "name",
    [name for name in dir(tables) if name.endswith("_t") and isinstance(getattr(tables, name), Table)],
)
def test_each_table_handle_names_the_same_table(name: str) -> None:
    ours, theirs = getattr(core_tables, name), getattr(tables, name)
    assert (ours.name, _table(ours)) == (theirs.name, _table(theirs))
