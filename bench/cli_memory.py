"""Peak memory of ``reviewer-app pending`` with one request carrying 100 MB of arguments.

Prints ``GOAL pending_<view>_peak_rss_mb <measured> <target> PASS|MISS``. The reference is the same command
on a database holding only a small request (the interpreter and imports). POSIX: the command's peak RSS
is ``resource.getrusage(RUSAGE_CHILDREN)`` read by a fresh helper process that ran only that command.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

from common import load_average

ARGUMENT_BYTES = 100_000_000
TARGET_TABLE_MB = 120  # the table never loads the arguments: the interpreter alone (issue 29, item 6)
TARGET_TABLE_RATIO = 2.0  # the same goal against the reference measured in the run (a small request)
TARGET_JSON_MB = 400  # one record at a time (it was ~740 MB: the list, its text, and the text as bytes)

MEASURE = """
import resource, subprocess, sys
subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, check=True)
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
"""


def peak_mb(*args: str) -> float:
    cmd = [sys.executable, "-c", MEASURE, sys.executable, "-m", "reviewer_app", *args]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    return int(out.strip()) / 1024  # ru_maxrss is in KiB on Linux


def seed(path: Path, size: int) -> None:
    from reviewer_app.domain.records import NewRequest
    from reviewer_app.persistence.store import Store

    store = Store.open(path)
    with store.transaction() as tx:  # the store itself: rows an older version could have written
        tx.requests.create(
            NewRequest(
                hitl_id="big",
                hitl_type="tool_approval",
                session_id="s",
                invocation_id="i",
                data={"arguments": {"path": "a.txt", "content": "x" * size}},
                tool_name="write_file",
            )
        )
    store.close()


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        big, small = Path(tmp) / "big.db", Path(tmp) / "small.db"
        seed(big, ARGUMENT_BYTES)
        seed(small, 10)
        base = peak_mb("pending", "--json", "--db", str(small))
        table = peak_mb("pending", "--db", str(big))
        as_json = peak_mb("pending", "--json", "--db", str(big))
    print(
        f"reference (small request): {base:.0f} MB; 100 MB of arguments: table {table:.0f} MB, --json {as_json:.0f} MB"
    )
    print(f"({load_average()})")
    for name, value, target in (("table", table, TARGET_TABLE_MB), ("json", as_json, TARGET_JSON_MB)):
        print(f"GOAL pending_{name}_peak_rss_mb {value:.0f} {target} {'PASS' if value <= target else 'MISS'}")
    ratio = table / base  # the 120 MB is about twice the interpreter and its imports (~60 MB)
    verdict = "PASS" if ratio <= TARGET_TABLE_RATIO else "MISS"
    print(f"GOAL pending_table_peak_rss_vs_small {ratio:.2f}x <={TARGET_TABLE_RATIO}x {verdict}")


if __name__ == "__main__":
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    main()
