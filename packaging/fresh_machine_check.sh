#!/usr/bin/env bash
# A fresh Debian/Ubuntu desktop, for real: remove Qt's xcb libraries, then `make run` must install them
# again and the window must open (under Xvfb with openbox). Changes the system's packages: run it in a
# throwaway machine or container (CI), as root or with sudo. The removed packages are reinstalled on exit.
#
#   packaging/fresh_machine_check.sh [SCREENSHOT.png] [PACKAGE...]   (default: libxcb-icccm4 libxcb-keysyms1)
set -euo pipefail
cd "$(dirname "$0")/.."
shot="$(realpath -m "${1:-build/fresh-machine.png}")"
[ $# -eq 0 ] || shift
if [ $# -gt 0 ]; then packages=("$@"); else packages=(libxcb-icccm4 libxcb-keysyms1); fi
sudo=""
[ "$(id -u)" -eq 0 ] || sudo=sudo
command -v apt-get >/dev/null || { echo "fresh_machine_check: needs apt-get (Debian/Ubuntu)" >&2; exit 2; }

tools=(xvfb xauth openbox x11-utils imagemagick)
if ! dpkg -s "${tools[@]}" >/dev/null 2>&1; then
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${tools[@]}" >/dev/null
fi

tmp="$(mktemp -d)"
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill -- "-$pid" 2>/dev/null || kill "$pid" 2>/dev/null || true; done
  # Whatever happened, leave the machine with the libraries it had (and that the app needs).
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${packages[@]}" >/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT

echo "== removing ${packages[*]} (dpkg -r --force-depends), as on a fresh machine"
for package in "${packages[@]}"; do
  if dpkg -s "$package" >/dev/null 2>&1; then $sudo dpkg -r --force-depends "$package" >/dev/null 2>&1; fi
done
for package in "${packages[@]}"; do
  if dpkg -s "$package" >/dev/null 2>&1; then echo "FAIL: $package is still installed" >&2; exit 1; fi
done

echo "== Xvfb and openbox"
setsid Xvfb -displayfd 3 -screen 0 1440x900x24 -nolisten tcp 3>"$tmp/display" 2>"$tmp/xvfb.log" &
pids+=($!)
for _ in $(seq 100); do [ -s "$tmp/display" ] && break; sleep 0.1; done
DISPLAY=":$(cat "$tmp/display")"
export DISPLAY
unset WAYLAND_DISPLAY QT_QPA_PLATFORM
setsid openbox >"$tmp/openbox.log" 2>&1 &
pids+=($!)

echo "== make run on $DISPLAY"
XDG_CONFIG_HOME="$tmp/config" XDG_DATA_HOME="$tmp/data" setsid make run \
  ARGS="--db $tmp/demo.db --workspaces $tmp/workspaces --reviewer fresh --demo" >"$tmp/run.log" 2>&1 &
run_pid=$!
pids+=("$run_pid")
opened=""
# Wait for the window itself: `setsid` may fork, so the job's pid ending says nothing about the app.
for _ in $(seq 240); do
  # The tree is read whole before it is searched: `xwininfo | grep -q` under pipefail fails when grep stops at the
  # first match and xwininfo dies of SIGPIPE writing the rest, reporting an open window as missing.
  if [[ "$(xwininfo -root -tree 2>/dev/null || true)" == *'"Reviewer'* ]]; then opened=yes; break; fi
  sleep 0.5
done
cat "$tmp/run.log"
if [ -z "$opened" ]; then
  echo "FAIL: no Reviewer window appeared within 120 s; the X server said:" >&2
  tail -5 "$tmp/xvfb.log" >&2 || true
  exit 1
fi
sleep 5 # let the demo fill the inbox
mkdir -p "$(dirname "$shot")"
import -window root "$shot"
echo "== screenshot: $shot"

grep -q "installing .*${packages[0]}" "$tmp/run.log" || { echo "FAIL: make run did not say it installs ${packages[0]}" >&2; exit 1; }
for package in "${packages[@]}"; do
  dpkg -s "$package" >/dev/null 2>&1 || { echo "FAIL: make run did not install $package" >&2; exit 1; }
done
echo "PASS: make run installed ${packages[*]} and the window opened"
