"""How fast the frozen app starts: ``--self-test`` wall time and process start -> first window mapped.

The window is timed under a private Xvfb server with the real xcb platform plugin
(needs ``xvfb`` and ``xdotool``); ``--cold`` drops the page cache before each run
(root only), which is what a first start after boot costs.

    python packaging/startup_time.py [--exe PATH] [--runs 3] [--cold]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from smoke_test import app_env, default_exe


def drop_caches() -> None:
    os.sync()
    Path("/proc/sys/vm/drop_caches").write_text("3\n")


def time_self_test(exe: Path, scratch: Path) -> float:
    started = time.perf_counter()
    subprocess.run([str(exe), "--self-test"], env=app_env(scratch), capture_output=True, check=True, timeout=180)
    return time.perf_counter() - started


def time_first_window(exe: Path, scratch: Path, display: str) -> float:
    """Seconds from spawning ``--demo`` until xdotool sees a visible window of that process."""
    env = app_env(scratch)
    env.update(QT_QPA_PLATFORM="xcb", DISPLAY=display)
    started = time.perf_counter()
    process = subprocess.Popen(
        [str(exe), "--db", str(scratch / "startup.db"), "--demo"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        while time.perf_counter() - started < 60:
            found = subprocess.run(
                ["xdotool", "search", "--onlyvisible", "--pid", str(process.pid), "--name", "."],
                env={"DISPLAY": display, "PATH": os.environ.get("PATH", "")},
                capture_output=True,
                text=True,
                check=False,
            )
            if found.stdout.strip():
                return time.perf_counter() - started
            if process.poll() is not None:
                raise SystemExit(f"the app exited with {process.returncode} before showing a window")
            time.sleep(0.01)
        raise SystemExit("no window within 60 s")
    finally:
        process.terminate()
        process.wait(timeout=15)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--exe", type=Path, default=None)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--cold", action="store_true", help="drop the page cache before each run (root)")
    args = parser.parse_args(argv)
    exe = (args.exe or default_exe()).resolve()
    prepare = drop_caches if args.cold else (lambda: None)
    label = "cold" if args.cold else "warm"
    with tempfile.TemporaryDirectory(prefix="reviewer-startup-") as scratch_dir:
        scratch = Path(scratch_dir)
        results: dict[str, list[float]] = {"--self-test": [], "first window": []}
        for run in range(args.runs):
            prepare()
            results["--self-test"].append(time_self_test(exe, scratch / f"self-test-{run}"))
        if shutil.which("Xvfb") and shutil.which("xdotool"):
            display = ":87"
            xvfb = subprocess.Popen(["Xvfb", display, "-screen", "0", "1280x800x24", "-nolisten", "tcp"])
            try:
                time.sleep(1.0)
                for run in range(args.runs):
                    prepare()
                    results["first window"].append(time_first_window(exe, scratch / f"gui-{run}", display))
            finally:
                xvfb.terminate()
                xvfb.wait(timeout=10)
        else:
            print("no Xvfb/xdotool: first-window time not measured (apt-get install xvfb xdotool)")
        for name, values in results.items():
            if values:
                shown = ", ".join(f"{value:.2f}" for value in values)
                print(f"{name} ({label}): median {statistics.median(values):.2f} s  [{shown}]")
    return 0


if __name__ == "__main__":
    sys.exit(main())
