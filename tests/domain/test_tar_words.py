"""How tar's command line is read (``domain.tar_words``): a table of lines with what each archives, extracts, lists
and where; GNU tar itself checks the create rows (what it put in the archive is what the reader said it reads)."""

from __future__ import annotations

import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

from reviewer_app.domain.tar_words import long_option, read_tar

# (program and words, modes, archives, what a create reads (placed where -C leads), lists, where an extract writes,
# programs run)
TABLE: list[tuple[str, set[str], list[str], list[str], list[str], list[str], list[str]]] = [
    ("tar czf out.tgz src", {"c"}, ["out.tgz"], ["src"], [], ["."], []),
    ("tar -czf out.tgz src", {"c"}, ["out.tgz"], ["src"], [], ["."], []),
    ("tar -c -z -f out.tgz src docs", {"c"}, ["out.tgz"], ["src", "docs"], [], ["."], []),
    ("tar --create --gzip --file=out.tgz src", {"c"}, ["out.tgz"], ["src"], [], ["."], []),
    ("tar --create --file out.tgz src", {"c"}, ["out.tgz"], ["src"], [], ["."], []),
    ("tar -cfout.tar src", {"c"}, ["out.tar"], ["src"], [], ["."], []),
    ("tar cf out.tar --exclude '*.pyc' src", {"c"}, ["out.tar"], ["src"], [], ["."], []),
    # old style: each value letter takes the next word, in the letters' order
    ("tar cfC out.tar ~ .ssh", {"c"}, ["out.tar"], ["~/.ssh"], [], ["~"], []),
    ("tar cCf ~ out.tar .ssh", {"c"}, ["out.tar"], ["~/.ssh"], [], ["~"], []),
    ("tar czf x.tgz ~", {"c"}, ["x.tgz"], ["~"], [], ["."], []),
    # -C moves the operands after it, each -C relative to the one before
    ("tar -C src -czf /tmp/src.tgz .", {"c"}, ["/tmp/src.tgz"], ["src"], [], ["src"], []),
    ("tar -cf x.tar a -C b c -C d e", {"c"}, ["x.tar"], ["a", "b/c", "b/d/e"], [], ["b", "b/d"], []),
    (
        "tar -C ~/.config -C ../.ssh -czf /tmp/x.tgz .",
        {"c"},
        ["/tmp/x.tgz"],
        ["~/.config/../.ssh"],
        [],
        ["~/.config", "~/.config/../.ssh"],
        [],
    ),
    ("tar -C /etc -C ssh -cf x.tar -- -weird", {"c"}, ["x.tar"], ["/etc/ssh/-weird"], [], ["/etc", "/etc/ssh"], []),
    ("tar --directory=/srv -cf x.tar site", {"c"}, ["x.tar"], ["/srv/site"], [], ["/srv"], []),
    ("tar --dir ~ -cf /tmp/x.tar .", {"c"}, ["/tmp/x.tar"], ["~"], [], ["~"], []),  # an abbreviation
    ("tar --cre --fil=/tmp/x.tar docs", {"c"}, [], ["docs"], [], ["."], []),  # --fil is ambiguous: tar fails
    ("tar -cf x.tar --add-file=../keys", {"c"}, ["x.tar"], ["../keys"], [], ["."], []),
    ("tar -rf x.tar new", {"c"}, ["x.tar"], ["new"], [], ["."], []),
    ("tar -uf x.tar new", {"c"}, ["x.tar"], ["new"], [], ["."], []),
    # the files a list names
    ("tar czf /tmp/x.tgz -T -", {"c"}, ["/tmp/x.tgz"], [], ["-"], ["."], []),
    ("tar -czf /tmp/x.tgz --files-from list.txt", {"c"}, ["/tmp/x.tgz"], [], ["list.txt"], ["."], []),
    ("tar -czf /tmp/x.tgz --files=list.txt", {"c"}, ["/tmp/x.tgz"], [], ["list.txt"], ["."], []),
    # GNU's -I runs a compressor, bsdtar's reads a list: plain tar may be either
    ("gtar -c -I zstd -f x.tar.zst src", {"c"}, ["x.tar.zst"], ["src"], [], ["."], ["zstd"]),
    ("bsdtar -c -I names.txt -f x.tar", {"c"}, ["x.tar"], [], ["names.txt"], ["."], []),
    ("tar -c -I names.txt -f x.tar", {"c"}, ["x.tar"], [], ["names.txt"], ["."], ["names.txt"]),
    ("tar --use-compress-program=zstd -cf x.tar src", {"c"}, ["x.tar"], ["src"], [], ["."], ["zstd"]),
    # bsdtar's -s takes a pattern; GNU's -s takes none: tar reads the word after as a file too
    ("bsdtar -c -s /a/b/ -f x.tar src", {"c"}, ["x.tar"], ["src"], [], ["."], []),
    ("tar -c -s /a/b/ -f x.tar src", {"c"}, ["x.tar"], ["/a/b/", "src"], [], ["."], []),
    ("bsdtar -cf x.tar @other.tar src", {"c"}, ["x.tar", "other.tar"], ["src"], [], ["."], []),
    # extract and list: the archive read, members named, where files land
    ("tar xzf a.tgz", {"x"}, ["a.tgz"], [], [], ["."], []),
    ("tar xzf a.tgz -C out", {"x"}, ["a.tgz"], [], [], ["out"], []),
    ("tar --extract --file=a.tgz --directory=out", {"x"}, ["a.tgz"], [], [], ["out"], []),
    ("tar -C ~/.ssh -xf x.tar", {"x"}, ["x.tar"], [], [], ["~/.ssh"], []),
    ("tar -xf a.tar --to-command=sh", {"x"}, ["a.tar"], [], [], ["."], ["sh"]),
    ("tar --to-com=sh -xf a.tar", {"x"}, ["a.tar"], [], [], ["."], ["sh"]),
    ("tar -tzf a.tgz", {"t"}, ["a.tgz"], [], [], ["."], []),
    ("tar --list -f a.tar", {"t"}, ["a.tar"], [], [], ["."], []),
    ("tar -Af a.tar b.tar", {"A"}, ["a.tar"], ["b.tar"], [], ["."], []),
    ("tar -df a.tar src", {"d"}, ["a.tar"], [], [], ["."], []),
    # values that are no file to read, and flags that take none
    ("tar -c --wildcards-match-slash src -f x.tar", {"c"}, ["x.tar"], ["src"], [], ["."], []),
    ("tar -c --occurrence src -f x.tar", {"c"}, ["x.tar"], ["src"], [], ["."], []),
    ("tar -c --owner root --group=wheel -f x.tar src", {"c"}, ["x.tar"], ["src"], [], ["."], []),
    ("gtar -c -H pax -f x.tar src", {"c"}, ["x.tar"], ["src"], [], ["."], []),
]


def _row(line: str) -> tuple[str, tuple[str, ...]]:
    program, *args = shlex.split(line)
    return program, tuple(args)


@pytest.mark.parametrize(("line", "modes", "archives", "reads", "lists", "into", "programs"), TABLE)
def test_tar_lines_are_read_as_tar_reads_them(
    line: str, modes: set[str], archives: list[str], reads: list[str], lists: list[str], into: list[str],
    programs: list[str],
) -> None:  # fmt: skip
    words = read_tar(*reversed(_row(line)))
    assert set(words.modes) == modes, line
    assert list(words.archive_names) == archives, line
    if words.creates:
        assert [path.placed for path in words.reads] == reads, line
    assert [path.placed for path in words.lists] == lists, line
    assert list(words.extracts_into) == into, line
    assert list(words.programs) == programs, line


def test_a_long_option_is_known_by_any_unambiguous_abbreviation() -> None:
    assert long_option("--dir=~", "gnu") == ("--directory", "~")
    assert long_option("--files", "gnu") == ("--files-from", None)
    assert long_option("--fil", "gnu") == ("--fil", None)  # --file or --files-from: GNU tar refuses it
    assert long_option("--cd", "bsd") == ("--cd", None)


@pytest.mark.skipif(shutil.which("tar") is None, reason="GNU tar is not installed")
@pytest.mark.parametrize(
    "line",
    ["tar cfC out.tar top sub", "tar cCf top out.tar sub", "tar -cf out.tar a -C top sub -C sub deeper",
     "tar -C top -C sub -cf ../../out.tar deeper", "tar --dir top -cf ../out.tar sub",
     "tar -c --checkpoint a -f out.tar", "tar -c --wildcards-match-slash a -f out.tar", "tar -cf out.tar --add-file=a"],
)  # fmt: skip
def test_gnu_tar_archives_what_the_reader_says_it_reads(tmp_path: Path, line: str) -> None:
    """Run GNU tar on a real tree: each file it stored lies under one of the paths the reader gave, and each
    path the reader gave is stored."""
    for directory in ("a", "top/sub/deeper"):
        (tmp_path / directory).mkdir(parents=True)
        (tmp_path / directory / "file").write_text("x\n")
    _, args = _row(line)
    words = read_tar(args, "gtar")
    subprocess.run(["tar", *args], cwd=tmp_path, check=True, capture_output=True)
    [archive] = words.archive_names
    listing = subprocess.run(["tar", "-tf", archive], cwd=tmp_path, check=True, capture_output=True, text=True)
    stored = {member for member in listing.stdout.splitlines() if member.endswith("file")}
    read = [(tmp_path / path.placed).resolve() for path in words.reads]
    expected = {str(found.relative_to(path.parent)) for path in read for found in path.rglob("file")}
    assert stored == expected, line
