"""History: decided requests searched through the full-text index and paged by keyset, on SQLite and PostgreSQL.

The search text is hostile: quotes, FTS5 and tsquery operators, NUL and megabytes are matched as literal words,
never a syntax error.
"""

from __future__ import annotations

import sqlite3
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from reviewer_app.domain.decisions import Decision, DecisionKind, args_digest
from reviewer_app.domain.history import (
    HistoryCursor,
    HistoryEntry,
    HistoryQuery,
    decided_by_words,
    decision_words,
    search_terms,
)
from reviewer_app.domain.records import NewRequest
from reviewer_app.domain.rules import Rule
from reviewer_app.domain.toolcall import ToolCall
from reviewer_app.hitl import SQLHITLBackend
from reviewer_app.persistence import migrate
from reviewer_app.persistence.engine import create_engines, database_url
from reviewer_app.persistence.store import Store
from reviewer_app.persistence.store.history import fts5_match


async def _ask(backend: SQLHITLBackend, hitl_id: str, tool: str, arguments: dict[str, Any], **extra: Any) -> None:
    await backend.create(
        hitl_id=hitl_id,
        hitl_type="tool_approval",
        session_id=extra.pop("session_id", "s1"),
        invocation_id=extra.pop("invocation_id", "i1"),
        data={"arguments": arguments},
        metadata={"agent": extra.pop("agent", "coder")},
        tool_name=tool,
    )


async def _decide(backend: SQLHITLBackend, hitl_id: str, kind: DecisionKind, shown: dict[str, Any], **kw: Any) -> None:
    sha = args_digest(shown) if kind.needs_hash else None
    await backend.decide(hitl_id, Decision(kind=kind, args_sha256=sha, **kw))


async def _fill(backend: SQLHITLBackend) -> None:
    await _ask(backend, "h-ls", "run_shell", {"command": "ls -la /srv/photos"})
    await _decide(backend, "h-ls", DecisionKind.APPROVE, {"command": "ls -la /srv/photos"})
    await _ask(backend, "h-rm", "run_shell", {"command": "rm -rf /var/lib/postgres"}, agent="cleaner")
    await _decide(
        backend, "h-rm", DecisionKind.REJECT, {"command": "rm -rf /var/lib/postgres"}, message="never wipe the database"
    )
    shown = {"path": "notes.txt", "content": "hello wörld\n"}
    await _ask(backend, "h-edit", "write_file", shown)
    await _decide(
        backend, "h-edit", DecisionKind.EDIT, shown, edited_args={"path": "notes.txt", "content": "hello quokka\n"}
    )
    await _ask(backend, "h-pending", "run_shell", {"command": "echo still waiting"})


@pytest.mark.asyncio
async def test_search_finds_decisions_by_every_indexed_field(any_db: str) -> None:
    backend = SQLHITLBackend(any_db, reviewer="dana")
    try:
        await _fill(backend)

        async def ids(text: str, **filters: Any) -> list[str]:
            page = await backend.history_page(HistoryQuery(text=text, **filters))
            return [entry.hitl_id for entry in page.entries]

        assert await ids("") == ["h-edit", "h-rm", "h-ls"]  # newest first; the pending request is not history
        assert await ids("photos") == ["h-ls"]  # the arguments as shown
        assert await ids("phot") == ["h-ls"]  # words match as prefixes
        assert await ids("quokka") == ["h-edit"]  # the arguments as edited
        assert await ids("QUOKKA") == ["h-edit"]  # case folded
        assert await ids("wörld") == ["h-edit"]  # words beyond ASCII
        if any_db.startswith("sqlite"):  # FTS5 also folds diacritics (PostgreSQL's would need unaccent, an extension)
            assert await ids("WORLD") == ["h-edit"]
        assert await ids("write_file") == ["h-edit"]  # the tool name
        assert await ids("cleaner") == ["h-rm"]  # the agent
        assert await ids("wipe database") == ["h-rm"]  # the reject reason, every word required
        assert await ids("wipe photos") == []
        assert await ids("dana") == ["h-edit", "h-rm", "h-ls"]  # the reviewer
        assert await ids("", decisions=("reject",)) == ["h-rm"]
        assert await ids("", tool_name="write_file") == ["h-edit"]
        assert await ids("rf", agent="cleaner") == ["h-rm"]
        assert await ids("still waiting") == []
    finally:
        await backend.aclose()


@pytest.mark.asyncio
async def test_a_page_carries_what_the_history_view_shows(any_db: str) -> None:
    backend = SQLHITLBackend(any_db, reviewer="dana")
    try:
        await _fill(backend)
        page = await backend.history_page(HistoryQuery())
        by_id = {entry.hitl_id: entry for entry in page.entries}
        rejected = by_id["h-rm"]
        assert rejected.decision == "reject" and rejected.reason == "never wipe the database"
        assert rejected.decision_words == "Rejected" and rejected.agent == "cleaner"
        assert "dana" in rejected.reviewer and not rejected.edited
        assert by_id["h-edit"].edited and by_id["h-edit"].decision_words == "Approved with edited arguments"
        assert by_id["h-ls"].summary and by_id["h-ls"].tool_name == "run_shell"
        assert page.entries[0].shown_args is None  # pages leave the (possibly huge) arguments out

        full = await backend.history_entry(by_id["h-edit"].audit_id)
        assert full is not None
        assert full.shown_args == {"path": "notes.txt", "content": "hello wörld\n"}
        assert full.edited_args == {"path": "notes.txt", "content": "hello quokka\n"}
        assert await backend.history_entry(10**9) is None
    finally:
        await backend.aclose()


@pytest.mark.asyncio
async def test_a_rule_decision_names_the_rule_and_its_pattern(any_db: str) -> None:
    backend = SQLHITLBackend(any_db, reviewer="dana")
    try:
        stored = await backend.add_rule(Rule.create("deny", "Bash(curl:*)", note="no egress", now=time.time()))
        request = NewRequest(
            hitl_id="h-curl",
            hitl_type="tool_approval",
            session_id="s1",
            invocation_id="i1",
            data={"arguments": {"command": "curl https://example.invalid"}},
            tool_name="Bash",
        )
        call = ToolCall(tool_name="Bash", arguments={"command": "curl https://example.invalid"})
        assert await backend.settle_by_rules(request, call) is not None
        (entry,) = (await backend.history_page(HistoryQuery(text="curl"))).entries
        assert entry.rule_id == stored.rule.id and entry.rule_pattern == "Bash(curl:*)"
        assert entry.rule_effect == "deny" and entry.decision == "reject"
        assert entry.decided_by_words == f"rule:{stored.rule.id} (Bash(curl:*))"
        full = await backend.history_entry(entry.audit_id)
        assert full is not None and full.rule_pattern == "Bash(curl:*)"
    finally:
        await backend.aclose()


@pytest.mark.asyncio
async def test_pages_follow_the_keyset_without_gaps_or_repeats(any_db: str) -> None:
    backend = SQLHITLBackend(any_db, reviewer="dana")
    try:
        for i in range(23):
            await _ask(backend, f"h{i:02d}", "run_shell", {"command": f"echo page{i}"})
            await _decide(backend, f"h{i:02d}", DecisionKind.APPROVE, {"command": f"echo page{i}"})
        expected = [f"h{i:02d}" for i in reversed(range(23))]
        for text in ("", "echo"):
            seen: list[str] = []
            cursor: HistoryCursor | None = None
            while True:
                page = await backend.history_page(HistoryQuery(text=text), after=cursor, limit=5)
                seen += [entry.hitl_id for entry in page.entries]
                if page.next_cursor is None:
                    break
                assert page.next_cursor == page.entries[-1].cursor
                cursor = page.next_cursor
                if len(seen) == 10 and text == "":  # a decision made meanwhile lands on top, not in later pages
                    await _ask(backend, "h-late", "run_shell", {"command": "echo late"})
                    await _decide(backend, "h-late", DecisionKind.APPROVE, {"command": "echo late"})
            assert seen == (expected if text == "" else ["h-late", *expected]), text
    finally:
        await backend.aclose()


HOSTILE = [
    '"',
    '""',
    "'",
    "*",
    "^",
    "NEAR(a b)",
    "a OR b AND NOT c",
    "col:value",
    "tool_name:rm",
    "(",
    ")",
    "{tool_name summary}: x",
    "-rf",
    "!",
    "a & b | !c",
    "a:*",
    "<->",
    "\\",
    "\x00",
    "rm\x00rf",
    "😀 emoji",
    "\ud800",
    "\u202e",
    " ",
    "x" * 5000,
    "word " * 20_000,
]


@pytest.mark.asyncio
@pytest.mark.parametrize("text", HOSTILE, ids=range(len(HOSTILE)))
async def test_hostile_search_text_is_matched_as_literal_words(any_db: str, text: str) -> None:
    backend = SQLHITLBackend(any_db, reviewer="dana")
    try:
        await _fill(backend)
        page = await backend.history_page(HistoryQuery(text=text))
        terms = search_terms(text)
        for entry in page.entries:  # whatever matched holds every word
            full = await backend.history_entry(entry.audit_id)
            assert full is not None
        if not terms:
            assert page.entries == []
    finally:
        await backend.aclose()


@pytest.mark.asyncio
async def test_quotes_and_operators_around_a_word_still_find_it(any_db: str) -> None:
    backend = SQLHITLBackend(any_db, reviewer="dana")
    try:
        await _fill(backend)
        for text in ('"photos', 'photos"', "photos*", "^photos", "photos OR nothing-like-it", "(photos)"):
            page = await backend.history_page(HistoryQuery(text=text))
            expected = ["h-ls"] if "nothing" not in text else []
            assert [entry.hitl_id for entry in page.entries] == expected, text
        # "OR" is a word like any other: all words are required
        page = await backend.history_page(HistoryQuery(text="rm OR"))
        assert page.entries == []
    finally:
        await backend.aclose()


def test_every_word_character_is_a_valid_fts5_query(tmp_path: Path) -> None:
    """Whatever letter or digit Python keeps as a word, FTS5 accepts it in a quoted prefix."""
    connection = sqlite3.connect(tmp_path / "fts.db")
    connection.execute("CREATE VIRTUAL TABLE t USING fts5(x, tokenize='unicode61 remove_diacritics 2')")
    connection.execute("INSERT INTO t VALUES ('hello')")
    # Most characters are no word and leave the same terms (('a',)): each distinct query string is made and runs once.
    distinct_terms = {search_terms(chr(code) + "a") for code in range(sys.maxunicode + 1)}
    queries = {fts5_match(terms) for terms in distinct_terms if terms}
    for query in queries:
        connection.execute("SELECT rowid FROM t WHERE t MATCH ?", (query,)).fetchall()
    connection.close()


def test_search_terms_are_bounded() -> None:
    assert search_terms('rm -rf "/tmp"') == ("rm", "rf", "tmp")
    assert search_terms("write_file") == ("write", "file")
    assert len(search_terms(" ".join(f"w{i}" for i in range(1000)))) == 16
    assert search_terms("y" * 500) == ("y" * 64,)
    assert search_terms("\x00\x00") == ()
    assert search_terms(None) == ()


def test_decisions_read_as_words_not_kind_names() -> None:
    for kind in DecisionKind:
        words = decision_words(kind.value)
        assert "_" not in words and words[0].isupper()
    assert decision_words("approve_for_session") == "Approved for the rest of the session"
    assert decided_by_words("alice/system:expiry") == "the expiry clock"
    assert decided_by_words("rule:r1", "Bash(ls:*)") == "rule:r1 (Bash(ls:*))"
    assert decided_by_words("bob/rule:r1", "Read") == "rule:r1 (Read)"
    assert decided_by_words("session-rule:7").startswith("the session's standing approval")


def test_an_expiry_reads_as_one_in_words_and_human_time() -> None:
    """Seen in History: an expired request read "Rejected" by "the expiry clock", its reason "expired without a
    decision at unix time 1795829109"."""
    assert decision_words("reject", reviewer="system:expiry") == "Expired without a decision (so rejected)"
    assert decision_words("approve", reviewer="bob/system:expiry") == "Expired without a decision (so approved)"
    assert decision_words("reject", reviewer="alice") == "Rejected"
    when = 1795829109
    entry = HistoryEntry(
        1, when * 1000, "h1", "reject", "system:expiry", f"expired without a decision at unix time {when}", False
    )
    assert entry.decision_words == "Expired without a decision (so rejected)"
    clock = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(when))
    assert entry.reason_words == f"expired without a decision at {clock}", entry.reason_words
    assert HistoryEntry(2, 0, "h2", "reject", "alice", None, False).reason_words == ""


def test_the_index_trigger_is_present_at_head(db_path: Path) -> None:
    store = Store.open(db_path)
    store.close()
    connection = sqlite3.connect(db_path)
    names = {row[0] for row in connection.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'")}
    connection.close()
    assert "history_fts_after_audit" in names


@pytest.mark.asyncio
async def test_migration_indexes_decisions_made_before_it(empty_any_db: str) -> None:
    """A database decided on at 0009 is searchable after upgrading (the index is built from the audit log)."""
    engines = create_engines(database_url(empty_any_db))
    migrate.upgrade(engines, "0009")
    engines.dispose()
    store = Store.open(empty_any_db, migrate_schema=False)
    with store.transaction() as tx:
        tx.requests.create(
            NewRequest(
                hitl_id="old",
                hitl_type="tool_approval",
                session_id="s",
                invocation_id="i",
                data={"arguments": {"command": "make backfill"}},
                tool_name="run_shell",
            )
        )
        tx.requests.decide("old", {"decision": "reject", "message": "before the index"}, reviewer="erin")
    store.close()

    backend = SQLHITLBackend(empty_any_db)
    try:
        (entry,) = (await backend.history_page(HistoryQuery(text="backfill index"))).entries
        assert entry.hitl_id == "old" and entry.reason == "before the index"
        # and decisions after the upgrade are indexed by the trigger
        await _ask(backend, "new", "run_shell", {"command": "make after"})
        await _decide(backend, "new", DecisionKind.APPROVE, {"command": "make after"})
        assert [e.hitl_id for e in (await backend.history_page(HistoryQuery(text="make"))).entries] == ["new", "old"]
    finally:
        await backend.aclose()
