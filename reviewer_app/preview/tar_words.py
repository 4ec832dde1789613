"""A tar command's words read as GNU tar reads them: its mode, the archive, the files it archives and where.

Why: ``tar czf backup.tgz src`` names the archive right after its options, so a reader that takes every word for a
file it reads says the archive is read; and ``-C dir`` moves the files after it. Options come bundled (``-czf``,
old style ``czf`` whose value letters take the next words in order), short (``-f x``) or long (``--file=x``,
``--file x``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

_MODES = {"c": "c", "x": "x", "t": "t", "r": "c", "u": "c", "A": "c"}
"""Short mode letters: create, extract, list; append, update and concatenate add to the archive like create."""
_LONG_MODES = {"--create": "c", "--extract": "x", "--get": "x", "--list": "t", "--append": "c", "--update": "c",
               "--concatenate": "c", "--catenate": "c"}  # fmt: skip
_SHORT_VALUES = frozenset("fCTXbgKNVLIH")
"""Short options that take a value: the archive, the directory, the file lists, and others whose value is no file
to archive."""
_LONG_VALUES = frozenset({
    "--file", "--directory", "--files-from", "--exclude-from", "--exclude", "--transform", "--xform",
    "--use-compress-program", "--to-command", "--owner", "--group", "--mode", "--mtime", "--newer", "--after-date",
    "--newer-mtime", "--label", "--blocking-factor", "--record-size", "--format", "--index-file", "--info-script",
    "--new-volume-script", "--rsh-command", "--volno-file", "--checkpoint-action", "--warning", "--tape-length",
    "--listed-incremental", "--suffix", "--strip-components", "--exclude-tag", "--exclude-tag-all",
    "--exclude-tag-under", "--sort", "--occurrence", "--hole-detection", "--quoting-style", "--wildcards-match-slash",
})  # fmt: skip


@dataclass
class TarCommand:
    """``mode``: "c" (writes the archive), "x" (extracts), "t" (lists), None (not told); ``operands``: each file
    named, with the ``-C`` directory in force where it stands (None: where tar runs); ``lists``: files that name
    more files to archive (``-T``)."""

    mode: str | None = None
    archive: str | None = None
    directory: str | None = None
    operands: list[tuple[str, str | None]] = field(default_factory=list)
    lists: list[str] = field(default_factory=list)

    def option(self, name: str, value: str) -> None:
        if name in ("f", "--file"):
            self.archive = value
        elif name in ("C", "--directory"):
            self.directory = value
        elif name in ("T", "--files-from") and value != "-":
            self.lists.append(value)


def read_tar(args: tuple[str, ...]) -> TarCommand:
    """The words after ``tar``, read as GNU tar reads them."""
    command = TarCommand()
    words = list(args)
    index = 0
    if words and not words[0].startswith("-"):  # old style: `czf backup.tgz src`, values in the letters' order
        letters, index = words[0], 1
        for letter in letters:
            command.mode = _MODES.get(letter, command.mode)
            if letter in _SHORT_VALUES and index < len(words):
                command.option(letter, words[index])
                index += 1
    while index < len(words):
        word = words[index]
        index += 1
        if word == "--":
            command.operands.extend((rest, command.directory) for rest in words[index:])
            break
        if word.startswith("--"):
            name, equals, value = word.partition("=")
            command.mode = _LONG_MODES.get(name, command.mode)
            if name in _LONG_VALUES and not equals and index < len(words):
                value, index = words[index], index + 1
            if name in _LONG_VALUES:
                command.option(name, value)
        elif word.startswith("-") and len(word) > 1:
            for position, letter in enumerate(word[1:], start=2):
                command.mode = _MODES.get(letter, command.mode)
                if letter in _SHORT_VALUES:  # the rest of the bundle, else the next word
                    value = word[position:]
                    if not value and index < len(words):
                        value, index = words[index], index + 1
                    command.option(letter, value)
                    break
        else:
            command.operands.append((word, command.directory))
    return command
