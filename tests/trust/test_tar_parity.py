"""One reading of tar for the risk engine and the preview: what "What it will touch" shows for a tar line (and for
the other programs judged by the trees they read whole) is never less than what the engine judged, and the lines
that hid a key from the engine's own reading are judged high.

Why: the engine and the preview each read tar's words their own way (``tar cfC out.tar dir file``, ``-C a -C b``,
``--dir=~``, ``bsdtar``); where they disagreed the operator was shown something other than what was judged.
"""

from __future__ import annotations

import os
import posixpath
import shlex
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reviewer_app.domain.recursive_reads import recursive_read
from reviewer_app.domain.shell import effective_argv, parse_command
from reviewer_app.domain.toolcall import ToolCall
from reviewer_app.preview.effects import compute_effects
from tests.trust.test_wildcards_and_recursive_reads import home, judged_high

__all__ = ["home"]  # the fixture, used by name below


def _resolved(path: str, cwd: Path) -> str:
    return os.path.realpath(os.path.join(cwd, os.path.expanduser(path)))


def _shown_less(line: str, cwd: Path) -> list[str]:
    """What the engine judged that the preview does not show: each directory read whole, and the files a list
    names."""
    effects: dict[str, Any] = compute_effects(ToolCall("Bash", {"command": line}, cwd=str(cwd)), budget_s=5).to_dict()
    items = [*effects["reads"], *effects["writes"]]  # the engine judges where an extract writes as it does a read
    shown = {os.path.realpath(str(item["resolved"])) for item in items if "resolved" in item}
    told = " ".join([*effects["notes"], *(str(item.get("how", "")) for item in effects["reads"])])
    missing: list[str] = []
    for simple in parse_command(line).commands:
        argv = effective_argv(simple.argv)
        judged = recursive_read(posixpath.basename(argv[0]), tuple(argv[1:])) if argv else None
        if judged is None:
            continue
        missing += [operand for operand in judged.operands if _resolved(operand, cwd) not in shown]
        if judged.listed is not None and "list" not in told:
            missing.append(f"the files a list names ({judged.listed})")
    return missing


CORPUS = [
    "tar czf /tmp/x.tgz src",
    "tar -czf /tmp/x.tgz src notes.txt",
    "tar -C src -czf /tmp/x.tgz .",
    "tar --create --file=/tmp/x.tar src",
    "tar cf /tmp/x.tar --exclude '*.pyc' src",
    "gtar -czf /tmp/x.tgz src",
    "bsdtar czf /tmp/x.tgz src",
    "tar cfC /tmp/x.tar .. ws/src",
    "tar -cf /tmp/x.tar -C .. -C ws src",
    "tar -c --wildcards-match-slash src -f /tmp/x.tar",
    "tar -c --occurrence src -f /tmp/x.tar",
    "tar --dir .. -cf /tmp/x.tar ws",
    "find . | tar czf /tmp/x.tgz -T -",
    "tar -czf /tmp/x.tgz --files=list.txt",
    "tar -c -I list.txt -f /tmp/x.tar",
    "tar -xf /tmp/x.tar -C src",
    "jar cf /tmp/x.jar src",
    "jar cvf /tmp/x.jar -C src .",
]


OTHER_READERS = [  # other programs the engine judges by the trees they read whole or the lists they read
    "find . | cpio -o > /tmp/x.cpio",
    "find . | zip -@ /tmp/x.zip",
    "7z a /tmp/x.7z src",
    "git grep --no-index TODO src",
    "rclone copy src remote:x",
    "aws s3 sync src s3://bucket",
    "pax -w -f /tmp/x.pax src",
    "python3 -m http.server -d src",
    "restic -r /tmp/repo backup src",
    "borg create /tmp/repo::x src",
    "zip -r /tmp/x.zip src",
    "grep -r TODO src",
]


@pytest.mark.parametrize("line", [*CORPUS, *OTHER_READERS])
def test_the_preview_shows_every_tree_the_engine_judged(home: Path, line: str) -> None:
    assert _shown_less(line, home / "ws") == [], line


_WORDS = st.sampled_from(["src", "..", "notes.txt", "ws", ".", "-", "list.txt", "/tmp/x.tar"])
_OPTIONS = st.sampled_from(
    ["-c", "-x", "-t", "-z", "-v", "-h", "-I", "-s", "-H", "-L", "-f", "-C", "-T", "-X", "--exclude", "--file",
     "--directory", "--dir", "--files-from", "--files", "--add-file", "--create", "--extract", "--owner", "--",
     "--occurrence", "--wildcards-match-slash", "--file=/tmp/x.tar", "--directory=..", "-cf", "-czf", "-Cf"]
)  # fmt: skip
_FIRST = st.sampled_from(["czf", "cf", "cfC", "cCf", "xf", "tf", "cT", "-c", "--create"])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    program=st.sampled_from(["tar", "gtar", "bsdtar"]),
    first=_FIRST,
    rest=st.lists(st.one_of(_WORDS, _OPTIONS), max_size=7),
)
def test_the_preview_never_shows_less_than_the_engine_judged(
    home: Path, program: str, first: str, rest: list[str]
) -> None:
    line = shlex.join([program, first, *rest])
    assert _shown_less(line, home / "ws") == [], line


HIDDEN_FROM_THE_ENGINE = [
    "tar --dir ~ -czf /tmp/x.tgz .",  # --dir is --directory, as GNU's getopt reads an abbreviation
    "tar --direc=$HOME -czf /tmp/x.tgz .ssh",
    "find ~ | tar czf /tmp/x.tgz --files=-",  # --files is --files-from
    "tar -c -I ../list.txt -f /tmp/x.tar",  # bsdtar (tar on macOS): -I is --files-from
    "bsdtar -c -I ../list.txt -f /tmp/x.tar",
    "tar -C ~/plain/docs -C ../../.ssh -czf /tmp/x.tgz .",  # each -C from the one before
    "tar cCf ~/plain/docs /tmp/x.tar ../../keys",  # old style: C takes ~/plain/docs, f takes /tmp/x.tar
]


@pytest.mark.parametrize("line", HIDDEN_FROM_THE_ENGINE)
def test_tar_lines_that_read_keys_through_options_are_judged_high(home: Path, line: str) -> None:
    assert judged_high("Bash", {"command": line}, home / "ws"), line


OTHER_ARCHIVERS_THAT_READ_A_TREE = [
    "jar cf /tmp/x.jar ~",
    "jar cf /tmp/x.jar ../keys",
    "jar cvf /tmp/x.jar -C ~ .",
    "jar -c -f /tmp/x.jar -C ../keys .",
    "jar --create --file=/tmp/x.jar ../keys",
    "jar uf /tmp/x.jar ../envs",
]


@pytest.mark.parametrize("line", OTHER_ARCHIVERS_THAT_READ_A_TREE)
def test_jar_reads_its_operands_whole_as_tar_does(home: Path, line: str) -> None:
    assert judged_high("Bash", {"command": line}, home / "ws"), line


@pytest.mark.parametrize("line", ["jar cf /tmp/app.jar -C src .", "jar tf app.jar", "jar xf app.jar"])
def test_ordinary_jar_lines_stay_below_high(home: Path, line: str) -> None:
    assert not judged_high("Bash", {"command": line}, home / "ws"), line
