"""Agents: a name, a system prompt, a model, a tool set and an approval policy, read from ``agents.toml``.

::

    [agents.coder]
    description = "Edits files in its workspace"
    system_prompt = "You are a careful coding assistant."
    tools = ["read_file", "list_dir", "write_file", "run_shell", "ask_user"]
    model = { type = "openai", base_url = "http://127.0.0.1:11434/v1", model = "qwen2.5", api_key_env = "OLLAMA_KEY" }
    time_budget_s = 600          # wall time, not counting time spent waiting for a reviewer
    max_turns = 40

    [agents.coder.policy]
    gated = ["write_file", "run_shell"]   # default: every tool that writes or executes
    ungated = []
    default_on_expiry = "reject"          # or "approve"
    expires_after_s = 3600

The built-in ``demo`` agent (a scripted model, see :mod:`reviewer_app.runtime.demo`) needs no file.
"""

from __future__ import annotations

import tomllib
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from reviewer_app.domain.waivers import ApprovalPolicy
from reviewer_app.runtime.demo import DEMO_SYSTEM_PROMPT, demo_script
from reviewer_app.runtime.llm_clients import ModelClient, ScriptedModel, model_from_config
from reviewer_app.runtime.tools import builtin_tools

DEFAULT_TOOLS = ("read_file", "list_dir", "write_file", "run_shell", "ask_user")
EXPIRY_DEFAULTS = ("reject", "approve")


class AgentConfigError(ValueError):
    """An agents file that cannot be used; the message names the file, the agent and the key."""


@dataclass(frozen=True)
class AgentSpec:
    """Everything needed to start a run of one agent."""

    name: str
    system_prompt: str
    model: dict[str, Any]
    tools: list[str]
    policy: ApprovalPolicy
    description: str = ""
    time_budget_s: float | None = None
    max_turns: int = 50
    shell_timeout_s: float = 30.0


def demo_agent() -> AgentSpec:
    return AgentSpec(
        name="demo",
        system_prompt=DEMO_SYSTEM_PROMPT,
        model={"type": "scripted", "script": demo_script()},
        tools=list(DEFAULT_TOOLS),
        policy=ApprovalPolicy(),
        description="Scripted demo: looks around, writes a file, runs a command, asks a question.",
    )


class AgentCatalog:
    """The agents this process can run, by name."""

    def __init__(self, agents: Iterable[AgentSpec] = (), *, include_demo: bool = True) -> None:
        self._agents: dict[str, AgentSpec] = {}
        if include_demo:
            self._agents["demo"] = demo_agent()
        for spec in agents:
            self._agents[spec.name] = spec

    @classmethod
    def load(cls, path: Path | str | None = None, *, default_path: Path | None = None) -> AgentCatalog:
        """Agents from ``path`` (must exist), else from ``default_path`` if it exists, plus the demo agent."""
        if path is not None:
            file = Path(path)
            if not file.is_file():
                raise AgentConfigError(f"agents file {file} does not exist")
            return cls(parse_agents_file(file))
        if default_path is not None and default_path.is_file():
            return cls(parse_agents_file(default_path))
        return cls()

    def names(self) -> list[str]:
        return sorted(self._agents)

    def __contains__(self, name: object) -> bool:
        return name in self._agents

    def get(self, name: str) -> AgentSpec:
        try:
            return self._agents[name]
        except KeyError:
            raise KeyError(f"unknown agent {name!r} (known agents: {', '.join(self.names())})") from None

    def build_model(self, name: str, script_override: Any = None) -> ModelClient:
        """The agent's model; ``script_override`` (a list of turns or ``{"turns": ...}``) plays a script instead."""
        if script_override is not None:
            return ScriptedModel.from_data(script_override)
        return model_from_config(self.get(name).model)


def parse_agents_file(path: Path) -> list[AgentSpec]:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise AgentConfigError(f"cannot read agents file {path}: {exc}") from exc
    except tomllib.TOMLDecodeError as exc:
        raise AgentConfigError(f"agents file {path} is not valid TOML: {exc}") from exc
    return parse_agents(data, base_dir=path.parent, source=str(path))


_AGENT_KEYS = frozenset(
    {"description", "system_prompt", "model", "tools", "policy", "time_budget_s", "max_turns", "shell_timeout_s"}
)
_POLICY_KEYS = frozenset({"gated", "ungated", "default_on_expiry", "expires_after_s"})


def parse_agents(data: dict[str, Any], *, base_dir: Path | None = None, source: str = "agents") -> list[AgentSpec]:
    """Turn the ``[agents.NAME]`` tables into specs, refusing anything unknown so typos are caught early."""
    unknown_top = sorted(set(data) - {"agents"})
    if unknown_top:
        raise AgentConfigError(f"{source}: unknown top-level key(s) {unknown_top}; agents go in [agents.NAME]")
    tables = data.get("agents", {})
    if not isinstance(tables, dict):
        raise AgentConfigError(f"{source}: 'agents' must be a table of [agents.NAME] tables")
    known_tools = set(builtin_tools().names())
    specs = []
    for name, raw in tables.items():
        where = f"{source}: agent {name!r}"
        if not isinstance(raw, dict):
            raise AgentConfigError(f"{where} must be a table")
        _refuse_unknown_keys(raw, _AGENT_KEYS, f"{where}: unknown key(s)")
        model = raw.get("model")
        if not isinstance(model, dict):
            raise AgentConfigError(f"{where}: 'model' must be a table, e.g. {{ type = \"openai\", ... }}")
        model = dict(model)
        script = model.get("script")
        if isinstance(script, str) and base_dir is not None and not Path(script).is_absolute():
            model["script"] = str(base_dir / script)
        tools = raw.get("tools", list(DEFAULT_TOOLS))
        if not isinstance(tools, list) or not all(isinstance(t, str) for t in tools):
            raise AgentConfigError(f"{where}: 'tools' must be a list of tool names")
        missing = sorted(set(tools) - known_tools)
        if missing:
            raise AgentConfigError(f"{where}: unknown tool(s) {missing}; available: {sorted(known_tools)}")
        prompt = raw.get("system_prompt", "You are a helpful assistant.")
        if not isinstance(prompt, str):
            raise AgentConfigError(f"{where}: 'system_prompt' must be a string")
        budget = raw.get("time_budget_s")
        if budget is not None and (isinstance(budget, bool) or not isinstance(budget, int | float) or budget <= 0):
            raise AgentConfigError(f"{where}: 'time_budget_s' must be a positive number of seconds")
        max_turns = raw.get("max_turns", 50)
        if isinstance(max_turns, bool) or not isinstance(max_turns, int) or max_turns < 1:
            raise AgentConfigError(f"{where}: 'max_turns' must be a positive integer")
        shell_timeout = raw.get("shell_timeout_s", 30.0)
        if isinstance(shell_timeout, bool) or not isinstance(shell_timeout, int | float) or shell_timeout <= 0:
            raise AgentConfigError(f"{where}: 'shell_timeout_s' must be a positive number of seconds")
        specs.append(
            AgentSpec(
                name=name,
                system_prompt=prompt,
                model=model,
                tools=list(tools),
                policy=_parse_policy(raw.get("policy", {}), where),
                description=str(raw.get("description", "")),
                time_budget_s=float(budget) if budget is not None else None,
                max_turns=max_turns,
                shell_timeout_s=float(shell_timeout),
            )
        )
    return specs


def _refuse_unknown_keys(raw: dict[str, Any], allowed: frozenset[str], said: str) -> None:
    """A typo in a table is an error naming the keys it does not know, and the ones it does."""
    unknown = sorted(set(raw) - allowed)
    if unknown:
        raise AgentConfigError(f"{said} {unknown}; allowed: {sorted(allowed)}")


def _parse_policy(raw: Any, where: str) -> ApprovalPolicy:
    if not isinstance(raw, dict):
        raise AgentConfigError(f"{where}: 'policy' must be a table")
    _refuse_unknown_keys(raw, _POLICY_KEYS, f"{where}: unknown policy key(s)")
    gated = raw.get("gated")
    ungated = raw.get("ungated", [])
    for key, value in (("gated", gated), ("ungated", ungated)):
        if value is not None and (not isinstance(value, list) or not all(isinstance(v, str) for v in value)):
            raise AgentConfigError(f"{where}: policy '{key}' must be a list of tool names")
    default = raw.get("default_on_expiry", "reject")
    if default not in EXPIRY_DEFAULTS:
        raise AgentConfigError(f"{where}: policy 'default_on_expiry' must be one of {list(EXPIRY_DEFAULTS)}")
    expires = raw.get("expires_after_s")
    if expires is not None and (isinstance(expires, bool) or not isinstance(expires, int) or expires <= 0):
        raise AgentConfigError(f"{where}: policy 'expires_after_s' must be a positive integer")
    return ApprovalPolicy(
        gated=frozenset(gated) if gated is not None else None,
        ungated=frozenset(ungated),
        default_on_expiry=default,
        expires_after_s=expires,
    )
