"""The inbox's search engine: everything in scope, grouped, with flat columns a filter reads in C-level loops.

Sessions hold invocations hold requests, in arrival order. Next to the grouping, one entry per
request ("slot") in flat per-request columns: the text the search matches, lower-cased once (the
summary, its invocation's session, agent and run id, and the request's kind, in one string, so a
search term costs one substring test per request), and the fields the filter combos compare. A
filter is evaluated over those columns with ``map`` loops into one mask (True:
the slot passes); the last few masks are kept (erasing a search brings a cached one back), and a
search that only narrows a known one (typing on: "wr" after "w") reads only the slots that passed it.
Removed requests leave tombstones in the columns until enough pile up to rebuild them.

No Qt here: the model (:mod:`ui.inbox.model`) builds the visible tree over this.
"""

from __future__ import annotations

import gc
from bisect import bisect_left
from collections import OrderedDict
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from itertools import compress, repeat
from operator import and_, attrgetter, contains, eq
from typing import Any

from reviewer_app.domain.hitl import HITLStatus
from reviewer_app.domain.records import RequestSummary
from reviewer_app.ui.inbox.filters import InboxFilter, Key, group_hay, haystack, label_text, sort_key

LEVEL_SESSION, LEVEL_INVOCATION, LEVEL_REQUEST = 0, 1, 2
MASKS_KEPT = 6  # masks of recent searches kept for erasing (0.8 MB each at 100,000 requests)
# A search narrows a known mask only when that one lets at most this share of the slots through: reading the
# slots it passed one by one costs more than searching every slot in one C-level pass when most of them passed.
NARROW_BELOW = 0.25
COMPACT_ABOVE = 5_000  # tombstones of removed requests tolerated before the flat columns are rebuilt

_PENDING = HITLStatus.PENDING.value


@contextmanager
def gc_paused() -> Iterator[None]:
    """Build big structures without the cyclic GC re-scanning 100,000 live summaries every few allocations."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


@dataclass(eq=False, slots=True)
class Group:
    """A session or an invocation: everything of it in scope, and what the filter shows of it.

    ``items`` holds everything in scope in arrival order (a session's invocation groups, an
    invocation's summaries with their flat-column ``slots``). ``children`` is the visible subset
    and ``count`` the visible requests under the group; both are valid while ``gen`` equals the
    model's generation, and are computed on first use otherwise. ``row`` is the visible row of a
    session shown at the top level (``visible``) or of an invocation inside its computed session.
    """

    uid: int
    level: int
    ident: str
    key: Key
    agent: str | None
    hay: str = ""
    parent: Group | None = None
    puid: int = 0  # internalId of this group's own index: its parent's uid (0 for a session)
    items: list[Any] = field(default_factory=list)
    slots: list[int] = field(default_factory=list)
    children: list[Any] = field(default_factory=list)
    gen: int = -1
    row: int = 0
    count: int = 0
    visible: bool = False
    tail: Key | None = None  # an invocation's newest key: pages append after it without a search
    # What a collapsed row shows (its count and oldest age) without computing its rows: valid while
    # ``cgen`` equals the model's generation. Rows the view never expanded need no row signals later.
    cgen: int = -1
    ccount: int = 0
    coldest: int = 0


_group_key = attrgetter("key")
_hitl_id = attrgetter("hitl_id")
_hitl_type = attrgetter("hitl_type")
_tool_name = attrgetter("tool_name")
_agent = attrgetter("agent")
_parent = attrgetter("parent")


class Grouping:
    """Everything in scope grouped (sessions → invocations → requests), the flat columns, the filter's mask.

    ``mask`` is the current filter's verdict per slot (None: no filter, everything in scope passes);
    the grouping keeps it true through every change. ``version`` changes with every change of the
    grouping (what a cache of something computed from it compares). ``by_uid`` is never replaced,
    only cleared: the model holds it for its hot paths.
    """

    def __init__(self) -> None:
        self.filter = InboxFilter()
        self.source: dict[str, RequestSummary] = {}
        self.sessions: list[Group] = []
        self.session_by_id: dict[str, Group] = {}
        self.inv_by_id: dict[str, Group] = {}
        self.by_uid: dict[int, Group] = {}
        self._next_uid = 1
        # Flat columns the search reads, one entry per slot; removed requests leave tombstones.
        self.f_text: list[str] = []  # what the search matches: summary, session, agent, run id and kind, lower case
        self.f_type: list[str | None] = []
        self.f_tool: list[str | None] = []
        self.f_agent: list[str | None] = []
        self.f_inv: list[Group | None] = []
        self.f_session: list[Group | None] = []
        self.dead = 0
        self.version = 0
        self._masks: OrderedDict[tuple[Any, ...], tuple[list[bool], int]] = OrderedDict()
        self.mask: list[bool] | None = None
        self._mask_key: tuple[Any, ...] | None = None  # the filter ``mask`` is for (kept up to date with changes)
        self._mask_passed = 0  # how many slots ``mask`` let through when it was made
        self.tools: set[str] = set()
        self.agents: set[str] = set()
        self._labels: dict[tuple[str | None, str], str] = {}

    def reset(self, summaries: Iterable[RequestSummary]) -> None:
        """Replace everything with the in-scope ``summaries`` (the mask is then stale: see :meth:`apply_filter`)."""
        includes = self.filter.scope.includes
        latest = {s.hitl_id: s for s in summaries if includes(s.status)}  # one row per request
        rows = sorted(latest.values(), key=sort_key)  # near-linear: the store gives this order already
        self.source = {}
        self.sessions = []
        self.session_by_id, self.inv_by_id = {}, {}
        self.by_uid.clear()
        self._clear_columns()
        self.tools, self.agents, self._labels = set(), set(), {}
        self.append(rows)

    def apply_filter(self) -> int:
        """Evaluate the filter into ``mask`` (or take it from the cache); returns how many requests pass."""
        if self.dead > COMPACT_ABOVE and self.dead >= len(self.source):
            self.compact()
        f = self.filter
        key = f.mask_key
        cached = self._masks.get(key)
        mask: list[bool] | None
        if cached is not None:  # shared with the cache: any change that edits the mask clears the cache first
            self._masks.move_to_end(key)
            mask, visible = cached
        else:
            base = self._narrowed(f)
            mask = self.evaluate(f) if base is None else self._narrow(f, base)
            visible = len(self.source) if mask is None else mask.count(True)
            if mask is not None:
                self._masks[key] = (mask, visible)
                while len(self._masks) > MASKS_KEPT:
                    self._masks.popitem(last=False)
        self.mask, self._mask_key, self._mask_passed = mask, key, visible
        return visible

    def _narrowed(self, f: InboxFilter) -> list[bool] | None:
        """A known mask that every request passing ``f`` passes too: the same field filters, and each of its search
        terms inside one of ``f``'s (typing "wri" after "wr"); None when there is none."""
        terms, fields = f.terms, (f.hitl_type, f.tool, f.agent)
        known = [
            (self._mask_key, self.mask, self._mask_passed),
            *((k, m, n) for k, (m, n) in reversed(self._masks.items())),
        ]
        for key, mask, passed in known:
            if key is None or mask is None or len(mask) != len(self.f_text) or tuple(key[1:]) != fields:
                continue
            if passed > NARROW_BELOW * len(mask):
                continue
            if key[0] and all(any(old in new for new in terms) for old in key[0]):
                return mask
        return None

    def _narrow(self, f: InboxFilter, base: list[bool]) -> list[bool]:
        """:meth:`evaluate` of ``f`` over the slots ``base`` lets through (the others cannot pass ``f``)."""
        passed = list(compress(range(len(base)), base))
        for term in f.terms:
            passed = list(compress(passed, map(contains, map(self.f_text.__getitem__, passed), repeat(term))))
        mask = [False] * len(base)
        for slot in passed:
            mask[slot] = True
        return mask

    def extend(self, rows: list[RequestSummary]) -> list[bool]:
        """Add new requests (not in the grouping yet) and extend the mask; which of them pass the filter."""
        start = len(self.f_text)
        self.append(rows)
        wanted = self.evaluate(self.filter, start)
        if wanted is None:
            return [True] * len(rows)
        assert self.mask is not None
        self.mask.extend(wanted)
        return wanted

    def _touch(self) -> None:
        """The grouping changed: cached masks no longer hold, nor what others computed from it (``version``)."""
        self.version += 1
        self._masks.clear()

    def _new_group(self, level: int, ident: str, key: Key, agent: str | None, hay: str = "") -> Group:
        group = Group(uid=self._next_uid, level=level, ident=ident, key=key, agent=agent, hay=hay)
        self._next_uid += 1
        self.by_uid[group.uid] = group
        (self.session_by_id if level == LEVEL_SESSION else self.inv_by_id)[ident] = group
        return group

    def _clear_columns(self) -> None:
        for column in (self.f_text, self.f_type, self.f_tool, self.f_agent):
            column.clear()
        self.f_inv, self.f_session = [], []
        self.dead = 0
        self._mask_key = None  # slots are renumbered: no mask holds any more

    def _text(self, inv: Group, s: RequestSummary) -> str:
        """What a search matches for ``s`` (as :func:`filters.haystack`, with its invocation's text shared):
        the search splits at whitespace, so no term spans two of the parts."""
        label = self._labels.get((s.tool_name, s.hitl_type)) or self._label(s)
        return f"{s.summary.lower()}\n{inv.hay}\n{label}"

    def _label(self, s: RequestSummary) -> str:
        label_key = (s.tool_name, s.hitl_type)
        label = self._labels.get(label_key)
        if label is None:
            label = self._labels[label_key] = label_text(s)
            if s.tool_name:
                self.tools.add(s.tool_name)
        return label

    def _invocation_for(self, s: RequestSummary, key: Key) -> Group:
        """The invocation group of ``s``, created (with its session) in key order when new."""
        inv = self.inv_by_id.get(s.invocation_id)
        if inv is not None:
            return inv
        session = self.session_by_id.get(s.session_id)
        if session is None:
            session = self._new_group(LEVEL_SESSION, s.session_id, key, s.agent)
            sessions = self.sessions
            if not sessions or sessions[-1].key < key:
                sessions.append(session)
            else:
                sessions.insert(bisect_left(sessions, key, key=_group_key), session)
        inv = self._new_group(LEVEL_INVOCATION, s.invocation_id, key, s.agent, group_hay(s))
        inv.parent, inv.puid = session, session.uid
        if not session.items or session.items[-1].key < key:
            session.items.append(inv)
        else:
            session.items.insert(bisect_left(session.items, key, key=_group_key), inv)
        if s.agent:
            self.agents.add(s.agent)
        return inv

    def append(self, rows: list[RequestSummary]) -> None:
        """Add new requests (sorted by key, not yet in the grouping) to the grouping and the flat columns."""
        f_text, f_inv, text_of = self.f_text, self.f_inv, self._text
        inv_by_id = self.inv_by_id
        start = slot = len(f_text)
        for s in rows:  # the one per-row Python loop: the grouping and the search text
            key = (s.created_at, s.updated_at_ms if s.status == _PENDING else 0, s.hitl_id)
            inv = inv_by_id.get(s.invocation_id) or self._invocation_for(s, key)
            tail = inv.tail
            if tail is None or tail < key:
                inv.items.append(s)
                inv.slots.append(slot)
                inv.tail = key
            else:  # older than what the group holds (a live row arrived before this page)
                pos = bisect_left(inv.items, key, key=sort_key)
                inv.items.insert(pos, s)
                inv.slots.insert(pos, slot)
            f_text.append(text_of(inv, s))
            f_inv.append(inv)
            slot += 1
        # The other columns in C-level loops.
        self.f_type.extend(map(_hitl_type, rows))
        self.f_tool.extend(map(_tool_name, rows))
        self.f_agent.extend(map(_agent, rows))
        self.f_session.extend(map(_parent, f_inv[start:]))
        self.source.update(zip(map(_hitl_id, rows), rows, strict=True))
        self._touch()

    def locate(self, s: RequestSummary) -> tuple[Group, int]:
        """The invocation group holding ``s`` (as the grouping has it) and its position there."""
        inv = self.inv_by_id[s.invocation_id]
        return inv, bisect_left(inv.items, sort_key(s), key=sort_key)

    def _set_slot(self, slot: int, s: RequestSummary | None, inv: Group | None) -> None:
        """Write (or, with None, tombstone) one request's flat columns."""
        if s is None:
            self.f_text[slot] = ""  # contains no search term
            self.f_type[slot] = self.f_tool[slot] = self.f_agent[slot] = None
            self.f_inv[slot] = self.f_session[slot] = None
            return
        assert inv is not None
        self.f_text[slot] = self._text(inv, s)
        self.f_type[slot] = s.hitl_type
        self.f_tool[slot] = s.tool_name
        self.f_agent[slot] = s.agent
        self.f_inv[slot] = inv
        self.f_session[slot] = inv.parent

    def remove(self, old: RequestSummary) -> None:
        """Take ``old`` out of the grouping (its visible row, if any, is gone already)."""
        inv, pos = self.locate(old)
        slot = inv.slots[pos]
        del inv.items[pos], inv.slots[pos]
        inv.tail = sort_key(inv.items[-1]) if inv.items else None
        self._set_slot(slot, None, None)
        if self.mask is not None:
            self.mask[slot] = False
        self.dead += 1
        del self.source[old.hitl_id]
        if not inv.items:
            self._drop_group(inv)
        self._touch()

    def merge(self, s: RequestSummary) -> None:
        """Bring the grouping up to date with one changed summary (the visible tree is not touched)."""
        old = self.source.get(s.hitl_id)
        in_scope = self.filter.scope.includes(s.status)
        if old is not None:
            if in_scope and sort_key(old) == sort_key(s) and old.invocation_id == s.invocation_id:
                inv, pos = self.locate(old)
                inv.items[pos] = s  # same key: the tail stays
                self._set_slot(inv.slots[pos], s, inv)
                self.source[s.hitl_id] = s
                self._touch()
                return
            self.remove(old)
        if in_scope:
            self.append([s])
            if self.mask is not None:
                self.mask.append(self.accepts(s))

    def _drop_group(self, inv: Group) -> None:
        """An invocation lost its last in-scope request (it is no longer visible either)."""
        session = inv.parent
        assert session is not None
        del self.inv_by_id[inv.ident], self.by_uid[inv.uid]
        session.items.remove(inv)
        if inv in session.children:  # shown rows computed before (stale ones are recomputed anyway)
            session.children.remove(inv)
        if not session.items:
            del self.session_by_id[session.ident], self.by_uid[session.uid]
            self.sessions.remove(session)

    def compact(self) -> None:
        """Rebuild the flat columns without tombstones (slots are renumbered; masks are recomputed after)."""
        self._clear_columns()
        for session in self.sessions:
            for inv in session.items:
                inv.slots = list(range(len(self.f_text), len(self.f_text) + len(inv.items)))
                for s in inv.items:
                    self.f_text.append(self._text(inv, s))
                    self.f_type.append(s.hitl_type)
                    self.f_tool.append(s.tool_name)
                    self.f_agent.append(s.agent)
                    self.f_inv.append(inv)
                    self.f_session.append(session)
        assert len(self.f_text) == len(self.source)
        self.mask = None
        self._touch()

    # -- filtering ---------------------------------------------------------------------------
    def accepts(self, s: RequestSummary) -> bool:
        return self.filter.accepts(s, haystack(s))

    def evaluate(self, f: InboxFilter, start: int = 0) -> list[bool] | None:
        """Which slots from ``start`` on pass ``f`` (None: no filter at all), in C-level loops."""
        terms = f.terms
        if not terms and not f.narrows_fields:
            return None

        def part(column: list[Any]) -> list[Any]:
            return column if start == 0 else column[start:]

        mask: Iterator[bool] | None = None
        for term in terms:
            found: Iterator[bool] = map(contains, part(self.f_text), repeat(term))
            mask = found if mask is None else map(and_, mask, found)
        for column, wanted in ((self.f_type, f.hitl_type), (self.f_tool, f.tool), (self.f_agent, f.agent)):
            if wanted is not None:
                same: Iterator[bool] = map(eq, part(column), repeat(wanted))
                mask = same if mask is None else map(and_, mask, same)
        assert mask is not None
        return list(mask)
