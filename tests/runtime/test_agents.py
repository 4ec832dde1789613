"""Agent definitions: agents.toml parsing with clear errors, the built-in demo agent, model building."""

from __future__ import annotations

from pathlib import Path

import pytest

from reviewer_app.domain.waivers import ApprovalPolicy
from reviewer_app.runtime.agents import AgentCatalog, AgentConfigError, parse_agents
from reviewer_app.runtime.llm_clients import ScriptedModel

AGENTS_TOML = """
[agents.coder]
description = "Edits files"
system_prompt = "You write code."
tools = ["read_file", "write_file", "run_shell"]
model = { type = "openai", base_url = "http://127.0.0.1:9/v1", model = "m", api_key_env = "NO_SUCH_KEY" }
time_budget_s = 120
max_turns = 7

[agents.coder.policy]
gated = ["run_shell"]
default_on_expiry = "approve"
expires_after_s = 600

[agents.player]
model = { type = "scripted", script = "player.yaml" }
"""


def test_catalog_from_file_with_defaults_and_the_demo_agent(tmp_path: Path) -> None:
    (tmp_path / "player.yaml").write_text("- text: hello\n")
    file = tmp_path / "agents.toml"
    file.write_text(AGENTS_TOML)
    catalog = AgentCatalog.load(file)
    assert catalog.names() == ["coder", "demo", "player"]
    coder = catalog.get("coder")
    assert coder.tools == ["read_file", "write_file", "run_shell"]
    assert coder.policy == ApprovalPolicy(
        gated=frozenset({"run_shell"}), default_on_expiry="approve", expires_after_s=600
    )
    assert (coder.time_budget_s, coder.max_turns, coder.description) == (120.0, 7, "Edits files")
    player = catalog.get("player")
    assert player.policy == ApprovalPolicy()  # every tool that writes or executes is gated
    assert player.model["script"] == str(tmp_path / "player.yaml")  # relative to the agents file
    assert isinstance(catalog.build_model("player"), ScriptedModel)
    assert isinstance(catalog.build_model("demo"), ScriptedModel)
    assert len(catalog.build_model("coder", [{"text": "override"}])) == 1  # type: ignore[arg-type]
    with pytest.raises(KeyError, match=r"unknown agent .ghost.*coder, demo, player"):
        catalog.get("ghost")


def test_demo_agent_needs_no_configuration(tmp_path: Path) -> None:
    catalog = AgentCatalog.load(None, default_path=tmp_path / "missing.toml")
    assert catalog.names() == ["demo"]
    assert "ask_user" in catalog.get("demo").tools


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"agent": {}}, "unknown top-level key"),
        ({"agents": {"a": {"model": {"type": "scripted", "script": []}, "colour": "red"}}}, "unknown key"),
        ({"agents": {"a": {}}}, "'model' must be a table"),
        ({"agents": {"a": {"model": {}, "tools": ["format_disk"]}}}, "unknown tool"),
        ({"agents": {"a": {"model": {}, "policy": {"default_on_expiry": "steer"}}}}, "default_on_expiry"),
        ({"agents": {"a": {"model": {}, "policy": {"expires_after_s": -1}}}}, "expires_after_s"),
        ({"agents": {"a": {"model": {}, "policy": {"gated": "run_shell"}}}}, "list of tool names"),
        ({"agents": {"a": {"model": {}, "max_turns": 0}}}, "max_turns"),
        ({"agents": {"a": {"model": {}, "time_budget_s": "soon"}}}, "time_budget_s"),
    ],
)
def test_bad_agent_definitions_name_the_problem(data: dict, message: str) -> None:
    with pytest.raises(AgentConfigError, match=message):
        parse_agents(data, source="agents.toml")


def test_unreadable_files_are_reported(tmp_path: Path) -> None:
    with pytest.raises(AgentConfigError, match="does not exist"):
        AgentCatalog.load(tmp_path / "nope.toml")
    broken = tmp_path / "broken.toml"
    broken.write_text("[agents.x\n")
    with pytest.raises(AgentConfigError, match="not valid TOML"):
        AgentCatalog.load(broken)
