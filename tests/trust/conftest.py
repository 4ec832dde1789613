"""The attacks here run against the same fake OpenAI-compatible server as the model client's tests, and the notes MCP
upstream of the proxy tests."""

from tests.integrations.conftest import env, forking_server, notes_file  # noqa: F401 (fixtures, shared by re-export)
from tests.runtime.test_openai_client import server  # noqa: F401 (a fixture, shared by re-export)
