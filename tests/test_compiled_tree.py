"""The controlling process writes pytest's cache of rewritten test modules, which pytest then reads as its own."""

from __future__ import annotations

from pathlib import Path

import pytest
from _pytest.assertion import rewrite

from tests.compiled_tree import write_rewritten_tests

FAILING = "def test_it():\n    found = 1\n    assert found == 2\n"


def _cached_code(source: Path) -> object:
    """The code pytest's import hook would run for ``source``: its cached rewritten module, or None."""
    return rewrite._read_pyc(source, rewrite.get_cache_dir(source) / (source.name[:-3] + rewrite.PYC_TAIL))


def test_the_cache_holds_the_rewritten_module_and_is_rewritten_only_when_stale(
    tmp_path: Path, pytestconfig: pytest.Config
) -> None:
    tests = tmp_path / "tests"
    (tests / "sub").mkdir(parents=True)
    module = tests / "sub" / "test_sample.py"
    module.write_text(FAILING, encoding="utf-8")
    (tests / "helper.py").write_text("VALUE = 1\n", encoding="utf-8")  # not a test module: pytest never rewrites it

    assert write_rewritten_tests(pytestconfig, tests) == 1
    code = _cached_code(module)
    assert code is not None
    namespace: dict[str, object] = {}
    exec(code, namespace)  # the module pytest would import
    with pytest.raises(AssertionError, match=r"assert 1 == 2"):  # the rewritten assert explains itself
        namespace["test_it"]()  # type: ignore[operator]

    assert write_rewritten_tests(pytestconfig, tests) == 0  # current: left alone
    module.write_text(FAILING.replace("found = 1", "found = 3"), encoding="utf-8")
    assert _cached_code(module) is None  # pytest's check of the source hash refuses the stale entry
    assert write_rewritten_tests(pytestconfig, tests) == 1
    assert _cached_code(module) is not None
