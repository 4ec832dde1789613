"""The files a patch writes, read from its text: the Codex/Factory/OpenCode patch format (``*** Add File: p``,
``*** Update File: p``, ``*** Move to: p``) and unified diffs (``diff --git a/p b/p``, ``--- a/p``, ``+++ b/p``).

Why: a patch tool (``ApplyPatch``, ``apply_patch``, OpenCode's ``patch``, an MCP tool given a ``diff``) and ``patch``
or ``git apply`` in a shell write the files their text names, which no path argument shows: ``*** Add File:
~/.bashrc`` came out low. Each named file is judged as a write (a sensitive one is high). Standard library only:
the hook's lean path uses :func:`patch_paths` to step aside for such calls.
"""

from __future__ import annotations

_HEADERS = ("*** Add File: ", "*** Update File: ", "*** Delete File: ", "*** Move to: ", "+++ ", "--- ", "diff --git ",
            "rename to ", "copy to ")  # fmt: skip
MAX_PATCH_BYTES = 1 << 20
"""A patch file larger than this is not read (its files cannot be judged: high)."""


def patch_paths(text: str) -> list[str]:
    """The files a patch text names (each also without git's ``a/``/``b/`` prefix), in order; [] for other text."""
    if "\n" not in text or not any(header in text for header in _HEADERS):
        return []
    found: list[str] = []
    for line in text.splitlines()[:100_000]:
        header = next((header for header in _HEADERS if line.startswith(header)), None)
        if header is None:
            continue
        rest = line[len(header) :].split("\t", 1)[0].strip()
        for path in rest.split(" ") if header == "diff --git " else [rest]:
            if path and path != "/dev/null":
                found.append(path)
                if path[:2] in ("a/", "b/"):
                    found.append(path[2:])
    return found


def patch_input(program: str, args: tuple[str, ...]) -> tuple[list[str], bool] | None:
    """For ``patch`` and ``git apply|am``: (the patch files it reads, whether it reads a patch from its input), else
    None. ``patch`` also writes the file it is given first (``patch FILE PATCHFILE``)."""
    if program == "git":
        words = [word for word in args if not word.startswith("-")]
        if not words or words[0] not in ("apply", "am"):
            return None
        files = words[1:]
        return files, not files
    if program != "patch":
        return None
    files, operands, index = [], [], 0
    while index < len(args):
        word = args[index]
        index += 1
        if word in ("-i", "--input"):
            files.append(args[index] if index < len(args) else "")
            index += 1
        elif word.startswith(("--input=", "-i")):
            files.append(word.split("=", 1)[1] if word.startswith("--") else word[2:])
        elif word in ("-d", "--directory", "-p", "-o", "--output", "-r", "-z", "-B", "-D", "-F", "-V", "-Y"):
            index += 1
        elif not word.startswith("-"):
            operands.append(word)
    files += operands[1:2]
    return files, not files


def read_patch(path: str) -> str | None:
    """A patch file's text, or None when it cannot be read whole (missing, too large, not text, not a regular file:
    a FIFO the agent made is never waited on)."""
    from reviewer_app.domain.safe_fs import read_regular

    try:
        data, size = read_regular(path, MAX_PATCH_BYTES + 1)
        if size > MAX_PATCH_BYTES or len(data) > MAX_PATCH_BYTES:
            return None
        text = data.decode("utf-8")
    except (OSError, ValueError):
        return None
    return text.replace("\r\n", "\n").replace("\r", "\n")  # as ``open(encoding="utf-8")`` reads it


__all__ = ["MAX_PATCH_BYTES", "patch_input", "patch_paths", "read_patch"]
