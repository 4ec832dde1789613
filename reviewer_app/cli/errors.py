"""Exit codes of every command, and one-line messages for what goes wrong around one, never a traceback.

The command line itself can be undecodable, and the database can be read-only, in a folder that cannot
exist, or not a database at all; each gets one line on stderr and its own exit code (listed in the operators'
guide, docs/operators.md).
"""

from __future__ import annotations

import errno
import os
import sqlite3
from collections.abc import Sequence
from pathlib import Path

from reviewer_app.domain.hitl import WriteRetriesExhausted
from reviewer_app.persistence.retry import error_chain

EXIT_FAILED = 1  # the run failed or was cancelled; the audit chain is broken; the self-test failed
EXIT_USAGE = 2  # bad arguments or input (invalid JSON, a decision that does not fit the request)
EXIT_CONFLICT = 3  # the request was already decided (by whom and how is printed)
EXIT_NOT_FOUND = 4  # no such request or run
EXIT_CHANGED = 5  # the arguments are not the ones the operator named with --sha256
EXIT_INTERRUPTED = 130
EXIT_BAD_ENCODING = 10  # an argument on the command line is not valid UTF-8
EXIT_DB_READ_ONLY = 6  # the database (or its folder) cannot be written
EXIT_DB_DIRECTORY = 7  # the database's folder is missing and cannot be created
EXIT_DB_CORRUPT = 8  # the file is not a (readable) SQLite database
EXIT_DB_UNAVAILABLE = 11  # the database stayed busy or full past the retry budget; the run was given up

_READ_ONLY = {"SQLITE_READONLY", "SQLITE_READONLY_DIRECTORY", "SQLITE_READONLY_DBMOVED", "SQLITE_READONLY_CANTINIT"}
_READ_ONLY_ERRNOS = {errno.EACCES, errno.EPERM, errno.EROFS}
_CORRUPT = {"SQLITE_NOTADB", "SQLITE_CORRUPT"}


def undecodable_argument(argv: Sequence[str]) -> str | None:
    """The message for the first argument that is not valid UTF-8 (Python keeps such bytes as surrogates)."""
    for index, argument in enumerate(argv, start=1):
        try:
            argument.encode("utf-8")
        except UnicodeEncodeError:
            shown = os.fsencode(argument).decode("utf-8", "backslashreplace")
            return f"error: argument {index} is not valid UTF-8: {shown[:80]!r}"
    return None


def database_failure(exc: BaseException, database: str) -> tuple[str, int] | None:
    """A one-line message and exit code when ``exc`` says the database itself is unusable; None otherwise."""
    path = _sqlite_file(database)
    where = str(path) if path is not None else database
    for error in error_chain(exc):
        if isinstance(error, WriteRetriesExhausted):
            return (
                f"error: the database {where} cannot record anything ({error}); "
                "runs were released for another process (reviewer-app worker resumes them)",
                EXIT_DB_UNAVAILABLE,
            )
        if isinstance(error, sqlite3.Error):
            name = getattr(error, "sqlite_errorname", "") or ""
            text = str(error)
            if name in _READ_ONLY or "readonly database" in text:
                return (
                    f"error: the database {where} is read-only (check the permissions of the file and its folder, "
                    "which must let SQLite create its journal)",
                    EXIT_DB_READ_ONLY,
                )
            if name in _CORRUPT or "file is not a database" in text or "malformed" in text:
                return f"error: {where} is not a Reviewer database or is corrupt ({text})", EXIT_DB_CORRUPT
            if name == "SQLITE_CANTOPEN" or "unable to open database file" in text:
                return f"error: cannot open the database file {where} ({text})", EXIT_DB_DIRECTORY
        elif isinstance(error, OSError) and path is not None and error.filename is not None:
            failed = Path(os.fsdecode(error.filename))
            if failed == path or failed in path.parents:
                if error.errno in _READ_ONLY_ERRNOS and failed == path:
                    return f"error: the database {where} is read-only ({error.strerror})", EXIT_DB_READ_ONLY
                return (
                    f"error: the database folder {path.parent} cannot be created: {failed}: {error.strerror}",
                    EXIT_DB_DIRECTORY,
                )
    return None


def _sqlite_file(database: str) -> Path | None:
    if "://" not in database:
        return Path(database).expanduser().absolute()
    from reviewer_app.persistence.engine import sqlite_path

    try:
        return sqlite_path(database)
    except Exception:  # not a URL SQLAlchemy understands: no file to name
        return None
