"""The integration fixtures (a hook environment, the notes MCP upstream) for the policy tests."""

from tests.integrations.conftest import env, forking_server, notes_file  # noqa: F401
