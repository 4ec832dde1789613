"""The attacks here run against the same fake OpenAI-compatible server as the model client's tests."""

from tests.runtime.test_openai_client import server  # noqa: F401 (a fixture, shared by re-export)
