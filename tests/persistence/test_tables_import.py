"""Opening the store imports SQLAlchemy Core only: no ORM, no SQLModel, no pydantic.

Every process that opens the store pays its imports: a permission hook waiting for a reviewer (50-200 of them in a
hook storm), the MCP proxy, each CLI command. The store uses the Core tables of ``persistence/core_tables.py``
(``test_core_tables.py`` holds them equal to the SQLModel definitions): importing SQLModel, pydantic and the ORM
cost each of those processes ~0.18 s of CPU. The MCP proxy loads pydantic (with the SDK's types) on its first form
elicitation only.
"""

from __future__ import annotations

import subprocess
import sys

from tests.conftest import REPO_ROOT

PROBE = (
    "import sys\n"
    "import reviewer_app.hitl.core, reviewer_app.persistence.store\n"
    "import reviewer_app.integrations.mcp_proxy.command, reviewer_app.integrations.mcp_proxy.proxy\n"
    "heavy = ('sqlmodel', 'pydantic', 'pydantic_core', 'sqlalchemy.orm')\n"
    "print(sorted(m for m in sys.modules if m.startswith(heavy)))\n"
)


def test_the_store_and_the_mcp_proxy_load_no_orm_sqlmodel_or_pydantic(subprocess_env: dict[str, str]) -> None:
    done = subprocess.run(
        [sys.executable, "-c", PROBE], env=subprocess_env, cwd=REPO_ROOT, capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == "[]", done.stdout + done.stderr
