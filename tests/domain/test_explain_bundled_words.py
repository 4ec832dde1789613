""" "What it does" for programs whose first word bundles option letters without a dash (``tar czf``, ``ps aux``,
``ar rcs``, ``jar cf``) and for operands that are settings (``dd if=… of=…``): each letter is explained as the
option it is, its value taken from the next words in order, and a directory read whole says so."""

from __future__ import annotations

import pytest

from reviewer_app.domain.explain import explain_command

# (command, parts the explanation must hold, parts it must not)
TABLE: list[tuple[str, list[str], list[str]]] = [
    ("tar czf x.tgz ~", ["c: create an archive", "z: gzip", "f x.tgz: the archive file",
                         "~ (the home directory: every file under it)"], ["czf", "Operands: czf"]),
    ("tar -czf x.tgz ~", ["-c: create an archive", "-f x.tgz: the archive file",
                          "~ (the home directory: every file under it)"], []),
    ("tar xzf a.tgz -C /tmp/out", ["x: extract", "f a.tgz: the archive file", "-C /tmp/out:"], ["xzf", "Operands"]),
    ("tar cfC out.tar /srv site", ["f out.tar: the archive file", "C /srv:", "site (every file under it)"],
     ["cfC"]),
    ("tar --create --gzip --file=x.tgz src", ["--create: create an archive", "--file x.tgz: the archive file",
                                              "src (every file under it)"], ["not in the table"]),
    ("tar -c -T list.txt -f x.tar", ["-T list.txt:", "list"], ["not in the table"]),
    ("tar -c -I names.txt -f x.tar", ["-I names.txt:", "bsdtar"], ["not in the table"]),
    ("tar czf x.tgz /", ["/ (the whole file system: every file on it)"], []),
    ("zip -r out.zip ~", ["-r: recursive", "~ (the home directory: every file under it)"], []),
    ("grep -r TOKEN ~", ["~ (the home directory: every file under it)"], []),
    ("ps aux", ["a: processes of every user", "u: ", "x: also processes without a terminal"],
     ["Operands: aux", "not in the table"]),
    ("ps -ef", ["-e: every process", "-f: full format"], ["not in the table"]),
    ("ar rcs libx.a a.o b.o", ["r: ", "c: ", "s: ", "libx.a a.o b.o"], ["Operands: rcs", "not in Reviewer's"]),
    ("ar t libx.a", ["t: list the members"], ["not in Reviewer's"]),
    ("jar cf app.jar -C build .", ["c: create", "f app.jar: the archive file", "-C build:"],
     ["Operands: cf", "not in Reviewer's"]),
    ("find . -name '*.c' | cpio -o -H newc > x.cpio", ["-o: ", "names come on its input", "-H newc:"],
     ["not in Reviewer's", "Operands: -o"]),
    ("cpio -idv < x.cpio", ["-i: extract", "-d: ", "-v: "], ["not in Reviewer's", "not in the table"]),
    ("dd if=/dev/sda of=disk.img bs=1M", ["if=/dev/sda: read from /dev/sda", "of=disk.img: WRITE to disk.img",
                                          "bs=1M: "], ["Operands"]),
]  # fmt: skip


@pytest.mark.parametrize(("command", "present", "absent"), TABLE)
def test_the_explanation_reads_bundled_letters_and_settings_as_options(
    command: str, present: list[str], absent: list[str]
) -> None:
    explanation = " ".join(segment.explanation for segment in explain_command(command))
    for part in present:
        assert part in explanation, (command, part, explanation)
    for part in absent:
        assert part not in explanation, (command, part, explanation)
