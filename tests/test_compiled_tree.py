"""The controlling process writes pytest's cache of rewritten test modules (and of the installed modules pytest
rewrites), which pytest then reads as its own."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import pytest
from _pytest.assertion import rewrite

from tests.compiled_tree import write_rewritten_imports, write_rewritten_tests

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


def test_installed_modules_pytest_rewrites_are_cached_once_whether_imported_before_or_here(
    tmp_path: Path, pytestconfig: pytest.Config, monkeypatch: pytest.MonkeyPatch
) -> None:
    site = tmp_path / "site"
    for name in ("early_plugin_pkg_for_cache_test", "worker_pkg_for_cache_test"):
        (site / name).mkdir(parents=True)
        (site / name / "__init__.py").write_text(f"from {name}.checks import check\n", encoding="utf-8")
        (site / name / "checks.py").write_text(FAILING.replace("test_it", "check"), encoding="utf-8")
    monkeypatch.syspath_prepend(str(site))
    hook = pytestconfig.stash[rewrite.assertstate_key].hook
    monkeypatch.setattr(hook, "_rewritten_names", {})  # only this test's modules, not the session's
    hook.mark_rewrite("early_plugin_pkg_for_cache_test", "worker_pkg_for_cache_test")  # as for a plugin's package
    monkeypatch.setattr(sys, "dont_write_bytecode", True)  # as under PYTHONDONTWRITEBYTECODE
    try:
        importlib.import_module("early_plugin_pkg_for_cache_test")  # a plugin, loaded before: rewritten, not cached
        early = site / "early_plugin_pkg_for_cache_test" / "checks.py"
        assert _cached_code(early) is None

        assert write_rewritten_imports(pytestconfig, ("worker_pkg_for_cache_test",)) == 2  # the early package's two
        assert sys.dont_write_bytecode is True
        for package in ("early_plugin_pkg_for_cache_test", "worker_pkg_for_cache_test"):
            for module in ("__init__.py", "checks.py"):
                assert _cached_code(site / package / module) is not None, (package, module)
        namespace: dict[str, object] = {}
        exec(_cached_code(site / "worker_pkg_for_cache_test" / "checks.py"), namespace)  # type: ignore[arg-type]
        with pytest.raises(AssertionError, match=r"assert 1 == 2"):  # rewritten, as pytest's hook would run it
            namespace["check"]()  # type: ignore[operator]
        assert write_rewritten_imports(pytestconfig, ("worker_pkg_for_cache_test",)) == 0  # current: left alone
    finally:
        for name in list(sys.modules):
            if name.split(".")[0] in ("early_plugin_pkg_for_cache_test", "worker_pkg_for_cache_test"):
                del sys.modules[name]
