"""Run every benchmark, each in its own process, and end with one ``GOAL`` line per goal.

``make bench`` runs this. The table printed before the goal lines (Markdown) is what the README's
"Performance" section shows, with the machine it ran on.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import BENCH_DIR, REPO_ROOT, machine_info

# (script, extra arguments, timeout in seconds). Each prints its own figures and GOAL lines.
BENCHES: list[tuple[str, list[str], int]] = [
    ("store_throughput.py", [], 300),
    ("round_trip.py", [], 420),
    ("ui_inbox.py", [], 300),
    ("ui_load.py", [], 300),
    ("rule_eval.py", [], 120),
    ("mcp_proxy.py", [], 300),
    ("hook_latency.py", [], 300),
    ("withdrawal.py", [], 600),  # two cases of 20 rounds, each next to its reference
    ("liveness.py", [], 600),
    ("wakeup.py", [], 300),
    ("cli_memory.py", [], 300),
    ("stats_queries.py", [], 300),
    ("why.py", [], 300),
    ("storage_growth.py", [], 600),
    ("history.py", [], 900),  # builds (once, cached in the temp dir) 1,000,000 decided requests: ~4 min
]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", help="run only these scripts (e.g. round_trip.py)")
    args = parser.parse_args()

    info = machine_info()
    print(
        f"machine: {info['nproc']} cores, {info['cpu']}, Python {info['python']}, SQLite {info['sqlite']}, {info['os']}"
    )
    env = dict(os.environ)
    env.setdefault("QT_QPA_PLATFORM", "offscreen")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), env.get("PYTHONPATH")]))
    lines: list[dict[str, object]] = []
    failures: list[str] = []
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="reviewer-bench-results-") as tmp:
        results = Path(tmp) / "results.jsonl"
        env["BENCH_RESULTS"] = str(results)
        for script, extra, timeout in BENCHES:
            if args.only and script not in args.only:
                continue
            print(f"\n=== {script} (load average {os.getloadavg()[0]:.2f}) ===", flush=True)
            before = time.monotonic()
            try:
                command = [sys.executable, str(BENCH_DIR / script), *extra]
                code = subprocess.run(command, env=env, cwd=REPO_ROOT, timeout=timeout, check=False).returncode
            except subprocess.TimeoutExpired:
                code = -1
                print(f"{script}: timed out after {timeout} s")
            if code != 0:
                failures.append(f"{script} (exit {code})")
            print(f"--- {script}: {time.monotonic() - before:.0f} s", flush=True)
        if results.exists():
            for raw in results.read_text(encoding="utf-8").splitlines():
                record = json.loads(raw)
                if "goal" in record:
                    lines.append(record)

    print(f"\n## Benchmarks ({time.monotonic() - started:.0f} s)\n")
    print(f"Machine: {info['nproc']} cores, {info['cpu']}, Python {info['python']}, SQLite {info['sqlite']}.\n")
    print("| goal | measured | target | result | load average (1, 5, 15 min) |")
    print("|---|---|---|---|---|")
    for record in lines:
        name, measured, target, verdict = str(record["line"]).split()[1:]
        load = str(record.get("load", "")).removeprefix("load average ")
        print(f"| {name} | {measured} | {target} | {verdict} | {load} |")
    if failures:
        print(f"\nbenchmarks that did not finish: {', '.join(failures)}")
    print()
    for record in lines:
        print(record["line"])
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
