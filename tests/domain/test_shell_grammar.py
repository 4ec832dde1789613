"""bashlex loaded with stored parse tables: the same tables, the same parses, without rebuilding them per process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from reviewer_app.domain import shell_grammar

ROOT = Path(__file__).resolve().parents[2]
COMMANDS = [
    "git status && echo $(ls) | grep x > f",
    "for i in 1 2; do echo $i; done",
    "a=1 b=2 env sh -c 'rm -rf /' 2>&1 | tee log &",
    "(cd x; make) || { echo failed; exit 1; }",
    "cat <<EOF\nhello\nEOF\necho done",
    "find . -name '*.py' -exec rm {} \\;",
    'echo "$(date)" `whoami` $((1+2)) ${HOME:-x}',
    "if true; then echo a; elif false; then echo b; else echo c; fi",
]


def _python(code: str, *, env: dict[str, str] | None = None) -> str:
    result = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT), "PYTHONHASHSEED": "0", **(env or {})},
    )
    return result.stdout


PARSES = f"""
import json, sys
if sys.argv[-1] == "stored" or {{stored}}:
    from reviewer_app.domain.shell_grammar import load_bashlex
    bashlex = load_bashlex()
else:
    import bashlex
import bashlex.parser as parser
tables = [{{str(k): dict(v) for k, v in parser.yaccparser.action.items()}},
          {{str(k): dict(v) for k, v in parser.yaccparser.goto.items()}}]
trees = []
for command in {COMMANDS!r}:
    try:
        trees.append([tree.dump() for tree in bashlex.parse(command)])
    except Exception as exc:
        trees.append(type(exc).__name__ + str(exc))
print(json.dumps([tables, trees], sort_keys=True))
"""


def test_the_stored_tables_are_those_bashlex_builds(tmp_path: Path) -> None:
    """Fails after a bashlex upgrade that changes its grammar: run ``python -m reviewer_app.domain.shell_grammar``."""
    written = tmp_path / "tables.json"
    _python(
        f"from pathlib import Path; from reviewer_app.domain.shell_grammar import write_tables; "
        f"write_tables(Path({str(written)!r}))"
    )
    assert json.loads(written.read_text()) == json.loads(shell_grammar.TABLES.read_text())


def test_stored_tables_give_the_same_parser_and_parses() -> None:
    stored = _python(PARSES.replace("{stored}", "True"))
    rebuilt = _python(PARSES.replace("{stored}", "False"))
    assert stored == rebuilt
    assert "CommandNode" in stored or "kind='command'" in stored


def test_loading_with_stored_tables_does_not_build_them() -> None:
    profile = _python(
        "import cProfile, pstats, io\n"
        "from reviewer_app.domain.shell_grammar import load_bashlex\n"
        "profiler = cProfile.Profile(); profiler.enable(); load_bashlex(); profiler.disable()\n"
        "out = io.StringIO(); pstats.Stats(profiler, stream=out).print_stats(); print(out.getvalue())"
    )
    assert "load_bashlex" in profile and "lr_parse_table" not in profile
    rebuilt = _python(
        "import cProfile, pstats, io\n"
        "profiler = cProfile.Profile(); profiler.enable(); import bashlex; profiler.disable()\n"
        "out = io.StringIO(); pstats.Stats(profiler, stream=out).print_stats(); print(out.getvalue())"
    )
    assert "lr_parse_table" in rebuilt  # what the stored tables spare


def test_tables_for_another_grammar_are_not_used(tmp_path: Path) -> None:
    """Tables that do not fit bashlex's productions are ignored: bashlex builds its own, the parses stay right."""
    other = json.loads(shell_grammar.TABLES.read_text())
    other["productions"] = other["productions"][:-1]
    other["action"]["0"] = {}
    wrong = tmp_path / "other.json"
    wrong.write_text(json.dumps(other))
    code = PARSES.replace("{stored}", "True").replace(
        "from reviewer_app.domain.shell_grammar import load_bashlex",
        f"from reviewer_app.domain import shell_grammar; from pathlib import Path; "
        f"shell_grammar.TABLES = Path({str(wrong)!r}); from reviewer_app.domain.shell_grammar import load_bashlex",
    )
    assert _python(code) == _python(PARSES.replace("{stored}", "False"))


def test_unreadable_tables_fall_back_to_bashlex(tmp_path: Path) -> None:
    broken = tmp_path / "broken.json"
    broken.write_text("{not json")
    code = PARSES.replace("{stored}", "True").replace(
        "from reviewer_app.domain.shell_grammar import load_bashlex",
        f"from reviewer_app.domain import shell_grammar; from pathlib import Path; "
        f"shell_grammar.TABLES = Path({str(broken)!r}); from reviewer_app.domain.shell_grammar import load_bashlex",
    )
    assert _python(code) == _python(PARSES.replace("{stored}", "False"))
