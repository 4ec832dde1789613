"""Effect items in words, for the terminal and the window alike."""

from __future__ import annotations

from typing import Any

from reviewer_app.domain.file_reach import MAX_GLOB_MATCHES


def item_facts(item: dict[str, Any]) -> str:
    """The facts of one effect item in a few words: inside/outside, exists, size, counts, tracked."""
    facts: list[str] = []
    if item.get("resolved") and item.get("resolved") != item.get("path"):
        facts.append(f"= {item['resolved']}")
    if "inside_workspace" in item:
        facts.append("inside the workspace" if item["inside_workspace"] else "OUTSIDE the workspace")
    if item.get("pattern"):
        facts.append(pattern_words(item.get("matches")))
    elif item.get("exists") is False:
        facts.append("does not exist yet")
    elif item.get("kind"):
        facts.append(str(item["kind"]))
    if item.get("size") is not None:
        facts.append(f"{item['size']:,} bytes")
    if item.get("files") is not None:
        facts.append(("at least " if item.get("at_least") else "") + f"{item['files']:,} entries")
    if item.get("tracked") is not None:
        facts.append("tracked by git" if item["tracked"] else "not tracked by git")
    for key in ("how", "note", "diff_note"):
        if item.get(key):
            facts.append(str(item[key]))
    return "; ".join(facts)


SHOWN_MATCHES = 3


def pattern_words(matches: list[str] | None) -> str:
    """What a wildcard matches now, in a few words: how many, and the first few (the shell sorts them)."""
    if matches is None:
        return f"a pattern: matches more than {MAX_GLOB_MATCHES:,} now"
    if not matches:
        return "a pattern: matches nothing now (the shell passes it as written)"
    more = ", …" if len(matches) > SHOWN_MATCHES else ""
    return f"a pattern: matches {len(matches):,} now: " + ", ".join(matches[:SHOWN_MATCHES]) + more


def network_text(item: dict[str, Any]) -> str:
    text = str(item.get("host"))
    if item.get("remote"):
        text += f" (remote {item['remote']}, branch {item.get('branch')})"
    if item.get("force"):
        count = item.get("discards")
        if count is not None:
            text += f"; FORCE: discards {'at least ' if item.get('discards_at_least') else ''}{count} remote commit(s)"
        else:
            text += "; FORCE push"
    if item.get("uploads") is not None:
        text += f"; uploads {item['uploads']} commit(s)"
    if item.get("note"):
        text += f"; {item['note']}"
    return text
