"""The real agent CLIs from npm, installed once into a cache directory the tests reuse.

``REVIEWER_NPM_CACHE`` names the directory (default ``~/.cache/reviewer-app-tests/npm``); CI keeps it between
runs. ``npm install --ignore-scripts`` of the platform package puts the native binary in place (so node's own
version does not matter). Tests skip, saying why, only when npm or the registry cannot be reached.
"""

from __future__ import annotations

import os
import platform
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.shared_cache import installing

CLAUDE_CODE_VERSION = "2.1.331"
CODEX_VERSION = "0.169.0"


def cache_root() -> Path:
    configured = os.environ.get("REVIEWER_NPM_CACHE")
    return Path(configured) if configured else Path.home() / ".cache" / "reviewer-app-tests" / "npm"


def _install(directory: Path, packages: list[str], binary: Path) -> Path:
    if binary.is_file():
        return binary
    with installing(directory):
        return _install_once(directory, packages, binary)


def _install_once(directory: Path, packages: list[str], binary: Path) -> Path:
    if binary.is_file():  # another test worker installed it while this one waited for the lock
        return binary
    if not (sys.platform == "linux" and platform.machine() in ("x86_64", "AMD64")):
        pytest.skip("the end-to-end tests install the linux-x64 builds of the agent CLIs")
    npm = shutil.which("npm")
    if npm is None:
        pytest.skip("npm is not installed: cannot fetch the agent CLI")
    directory.mkdir(parents=True, exist_ok=True)
    result = subprocess.run(
        [npm, "install", "--ignore-scripts", "--no-audit", "--no-fund", "--prefix", str(directory), *packages],
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    if result.returncode != 0:
        text = result.stderr + result.stdout
        if any(word in text for word in ("ENOTFOUND", "ECONNREFUSED", "ETIMEDOUT", "EAI_AGAIN", "network")):
            pytest.skip(f"the npm registry is unreachable: {text.strip().splitlines()[-1]}")
        raise AssertionError(f"npm install failed:\n{text}")
    assert binary.is_file(), f"npm installed no binary at {binary}"
    return binary


def claude_binary() -> Path:
    directory = cache_root() / f"claude-code-{CLAUDE_CODE_VERSION}"
    binary = directory / "node_modules" / "@anthropic-ai" / "claude-code-linux-x64" / "claude"
    packages = [
        f"@anthropic-ai/claude-code@{CLAUDE_CODE_VERSION}",
        f"@anthropic-ai/claude-code-linux-x64@{CLAUDE_CODE_VERSION}",
    ]
    return _install(directory, packages, binary)


def codex_binary() -> Path:
    directory = cache_root() / f"codex-{CODEX_VERSION}"
    binary = (
        directory
        / "node_modules"
        / "@openai"
        / "codex-linux-x64"
        / "vendor"
        / "x86_64-unknown-linux-musl"
        / "bin"
        / "codex"
    )
    packages = [
        f"@openai/codex@{CODEX_VERSION}",
        f"@openai/codex-linux-x64@npm:@openai/codex@{CODEX_VERSION}-linux-x64",
    ]
    return _install(directory, packages, binary)


GEMINI_CLI_VERSION = "0.61.0"
QWEN_CODE_VERSION = "0.24.4"
COPILOT_VERSION = "1.0.102"
FACTORY_VERSION = "0.225.2"
"""@factory/cli 0.225.1 names @factory/cli-linux-x64 0.225.1, which was never published; 0.225.2 was."""
OPENCODE_VERSION = "1.18.33"


def gemini_binary() -> Path:
    """Gemini CLI is plain JavaScript: node runs ``.bin/gemini``."""
    directory = cache_root() / f"gemini-cli-{GEMINI_CLI_VERSION}"
    return _install(
        directory, [f"@google/gemini-cli@{GEMINI_CLI_VERSION}"], directory / "node_modules" / ".bin" / "gemini"
    )


def qwen_binary() -> Path:
    directory = cache_root() / f"qwen-code-{QWEN_CODE_VERSION}"
    return _install(
        directory, [f"@qwen-code/qwen-code@{QWEN_CODE_VERSION}"], directory / "node_modules" / ".bin" / "qwen"
    )


def opencode_binary() -> Path:
    directory = cache_root() / f"opencode-ai-{OPENCODE_VERSION}"
    binary = directory / "node_modules" / "opencode-linux-x64" / "bin" / "opencode"
    packages = [f"opencode-ai@{OPENCODE_VERSION}", f"opencode-linux-x64@{OPENCODE_VERSION}"]
    return _install(directory, packages, binary)


def opencode_config_dependencies() -> Path:
    """The folder ``npm install @opencode-ai/plugin`` made, at OpenCode's own version: what OpenCode installs into
    each config folder before it loads a plugin from there (``node_modules``, ``package.json``, the lockfile)."""
    directory = cache_root() / f"opencode-plugin-{OPENCODE_VERSION}"
    marker = directory / "node_modules" / "@opencode-ai" / "plugin" / "package.json"
    _install(directory, [f"@opencode-ai/plugin@{OPENCODE_VERSION}"], marker)
    return directory


def copilot_binary() -> Path:
    directory = cache_root() / f"copilot-{COPILOT_VERSION}"
    binary = directory / "node_modules" / "@github" / "copilot-linux-x64" / "copilot"
    packages = [f"@github/copilot@{COPILOT_VERSION}", f"@github/copilot-linux-x64@{COPILOT_VERSION}"]
    return _install(directory, packages, binary)


def droid_binary() -> Path:
    """Factory's droid: the platform package holds the whole binary (the ``@factory/cli`` shim only finds it)."""
    directory = cache_root() / f"factory-cli-{FACTORY_VERSION}"
    binary = directory / "node_modules" / "@factory" / "cli-linux-x64" / "bin" / "droid"
    return _install(directory, [f"@factory/cli-linux-x64@{FACTORY_VERSION}"], binary)
