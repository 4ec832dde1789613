"""The lean path's JSON (``json``'s C accelerator called as ``json`` calls it) gives ``json``'s texts, values and
errors, in a process where ``json`` is not loaded, as in a hook call."""

from __future__ import annotations

import json
import math
import pickle
import random
import subprocess
import sys
from typing import Any

PROBE = """
import pickle, sys
from reviewer_app.domain import lean_json
batches, variants = pickle.loads(sys.stdin.buffer.read())
assert "json" not in sys.modules
def attempt(call):
    try:
        return ("ok", call())
    except BaseException as exc:
        return ("error", type(exc).__name__, str(exc))
found = []
for values, texts in batches:  # what json accepts first: an error hands over to json, which stays loaded
    dumped = [[attempt(lambda: lean_json.dumps(value, **variant)) for variant in variants] for value in values]
    loaded = [attempt(lambda: lean_json.loads(text)) for text in texts]
    found.append((dumped, loaded, "json" not in sys.modules))
sys.stdout.buffer.write(pickle.dumps(found))
"""

VARIANTS: list[dict[str, Any]] = [
    {},
    {"ensure_ascii": False},
    {"sort_keys": True, "separators": (",", ":"), "ensure_ascii": False, "default": str},
    {"sort_keys": True},
]
STRINGS = ["", "a", "é", "\u2028", "\ud800", '\x00\x1f"\\/', "日本語", "\U0001f600", "ünï\tcode\n"]


def value(rng: random.Random, depth: int = 0) -> Any:
    choice = rng.randrange(12 if depth < 4 else 7)
    if choice == 0:
        return rng.choice([None, True, False])
    if choice == 1:
        return rng.choice([0, -1, 2**63, -(10**40), rng.randrange(-1000, 1000)])
    if choice == 2:
        return rng.choice([0.0, -0.0, 1.5, 1e308, 5e-324, math.inf, -math.inf, math.nan, rng.random()])
    if choice in (3, 4):
        return rng.choice(STRINGS) + "".join(rng.choice(STRINGS) for _ in range(rng.randrange(3)))
    if choice == 5:
        return rng.choice(
            [1 + 2j, b"bytes", {1, 2}]
        )  # json's error, default=str's text if rng.random() < 0.3 else "plain"
    if choice == 6:
        return rng.choice(STRINGS)
    if choice in (7, 8):
        keys = [rng.choice([*STRINGS, 1, 2.5, True, None, "k", "b", "a"]) for _ in range(rng.randrange(5))]
        if rng.random() < 0.05:
            keys.append((1, 2))  # a key json refuses
        return {key: value(rng, depth + 1) for key in keys}
    if choice == 9:
        return tuple(value(rng, depth + 1) for _ in range(rng.randrange(4)))
    return [value(rng, depth + 1) for _ in range(rng.randrange(5))]


def texts(values: list[Any]) -> list[str]:
    """What json writes for the values, and texts it refuses or reads specially."""
    found = []
    for item in values:
        try:
            found.append(json.dumps(item, ensure_ascii=False))
            found.append(" \n\t" + json.dumps(item) + "\r\n ")
        except (TypeError, ValueError):
            continue
    found += ["", " ", "{", "[1,]", '{"a" 1}', "1 2", "tru", "nan", "NaN", "-Infinity", '"\\ud800"', '"\x01"']
    found += ["\ufeff{}", '{"a": 1} x', "01", "1e400", "-0", '{"a": 1, "a": 2}', "[" * 50 + "]" * 50, "\u00a0 1"]
    found += ["9" * 5000]  # over int_max_str_digits: json's ValueError
    return found


def test_lean_json_is_jsons_texts_values_and_errors(subprocess_env: dict[str, str]) -> None:
    rng = random.Random(29)
    values = [value(rng) for _ in range(600)]
    circular: list[Any] = []
    circular.append(circular)
    values += [circular, "é", "", 1, None, math.nan, 3j, {"z": 1, "a": [1, {"é": "\ud800"}]}]
    corpus = texts(values)
    valid = [item for item in values if all(attempt(lambda: json.dumps(item, **v))[0] == "ok" for v in VARIANTS)]  # noqa: B023
    readable = [text for text in corpus if attempt(lambda: json.loads(text))[0] == "ok"]  # noqa: B023
    assert len(valid) > 300 and len(readable) > 300
    batches = [(valid, readable), (values, corpus)]
    result = subprocess.run(
        [sys.executable, "-c", PROBE],
        input=pickle.dumps((batches, VARIANTS)),
        env=subprocess_env,
        capture_output=True,
        check=False,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr.decode()
    found = pickle.loads(result.stdout)
    assert found[0][2], "json was imported for values and texts it accepts"  # errors alone load it
    for (values_in, texts_in), (dumped, loaded, _) in zip(batches, found, strict=True):
        for item, answers in zip(values_in, dumped, strict=True):
            for variant, answer in zip(VARIANTS, answers, strict=True):
                assert answer == attempt(lambda: json.dumps(item, **variant)), (item, variant)  # noqa: B023
        for text, answer in zip(texts_in, loaded, strict=True):
            wanted = attempt(lambda: json.loads(text))  # noqa: B023
            assert same(answer, wanted), (text, answer, wanted)


def attempt(call: Any) -> tuple[Any, ...]:
    try:
        return ("ok", call())
    except BaseException as exc:
        return ("error", type(exc).__name__, str(exc))


def same(left: Any, right: Any) -> bool:
    """Equal, NaN equal to NaN, types alike (1 is not 1.0 here)."""
    if type(left) is not type(right):
        return False
    if isinstance(left, float):
        return (math.isnan(left) and math.isnan(right)) or (left == right and str(left) == str(right))
    if isinstance(left, (list, tuple)):
        return len(left) == len(right) and all(same(a, b) for a, b in zip(left, right, strict=True))
    if isinstance(left, dict):
        return list(left) == list(right) and all(same(left[key], right[key]) for key in left)
    return bool(left == right)
