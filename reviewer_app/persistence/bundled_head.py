"""The schema revision this build ships, read from the migration files' text: no Alembic, no SQLAlchemy.

Opening a database already at this revision skips Alembic (``migrate.py``), and the window's first screen
(``first_screen.py``) reads only a database at this revision.
"""

from __future__ import annotations

import re
from importlib import resources
from pathlib import Path

_REVISION_LINE = re.compile(r"^(revision|down_revision|branch_labels|depends_on)\s*(?::[^=]*)?=\s*(.+?)\s*$", re.M)
_QUOTED = re.compile(r"""^(["'])([^"']+)\1$""")


def migrations_dir() -> Path:
    """Where the migration scripts are, inside the package (and so inside a frozen bundle)."""
    return Path(str(resources.files("reviewer_app.persistence") / "migrations"))


def bundled_head_cheaply() -> str | None:
    """The head revision read from the version files' text, without importing Alembic.

    None whenever the files are anything but a plain linear chain (branches, merges,
    dependencies, an unexpected assignment): the caller then asks Alembic itself.
    """
    revisions: set[str] = set()
    parents: set[str] = set()
    try:
        files = sorted((migrations_dir() / "versions").glob("*.py"))
        for path in files:
            if path.name == "__init__.py":
                continue
            fields = dict(_REVISION_LINE.findall(path.read_text(encoding="utf-8")))
            revision = _QUOTED.match(fields.get("revision", ""))
            if revision is None or fields.get("branch_labels") != "None" or fields.get("depends_on") != "None":
                return None
            revisions.add(revision.group(2))
            down = fields.get("down_revision")
            if down != "None":
                parent = _QUOTED.match(down or "")
                if parent is None:
                    return None
                parents.add(parent.group(2))
    except OSError:
        return None
    heads = revisions - parents
    return heads.pop() if len(heads) == 1 and parents <= revisions else None
