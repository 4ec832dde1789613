"""Large values stored once: content-addressed (SHA-256 of their bytes), compressed when it pays.

A run's large tool results and arguments would otherwise be copied into every checkpoint, two timeline events,
the conversation and the audit row. Instead each is one row of ``blobs`` and those places keep a reference:
``{field: "s:<sha256>"}`` for a string (the blob is its UTF-8) or ``"j:<sha256>"`` for a JSON value (the blob is
``json.dumps(value, ensure_ascii=False)``, which is also how the conversation spells a call's arguments, so the
two share one blob). The references of a row's top-level fields are kept beside them: in-band under
:data:`REFS_KEY` in the dictionaries only this app builds (checkpoints, messages), in a column elsewhere.

Pure functions over a ``put``/``get`` pair, so the store and the migration that converts old databases share them.
"""

from __future__ import annotations

import json
import threading
import zlib
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from reviewer_app.domain.sha import sha256_hex

BLOB_THRESHOLD = 4096
"""Values this large (characters of a string, bytes of encoded JSON) are stored as blobs."""

REFS_KEY = "$blobs"
"""In-band key of the references in dictionaries this app builds (checkpoint state, pending calls, messages)."""

CODEC_RAW = "raw"
CODEC_ZLIB = "zlib"
_ZLIB_LEVEL = 6
_PAYS = 0.9  # compressed is kept only when it saves at least a tenth

Put = Callable[[bytes], str]
"""Stores a blob (if new) and returns its SHA-256 hex digest."""

Has = Callable[[str], bool]
"""Whether a blob with this SHA-256 is stored (as seen by the current transaction)."""


class ValueMemo:
    """The blob of a large JSON value recently stored, by the value's identity: a run's checkpoint names the same
    script and call arguments on every commit, and encoding and hashing them again each time is most of its cost.

    Holds the values it names (so an identity is never reused while remembered). Values given to the store are
    never changed afterwards (the runtime builds new ones: an edit is ``run_arguments``, never a change in place);
    the blob's presence is still checked in each transaction (one indexed lookup), so a rolled-back one is
    written again.
    """

    def __init__(self, size: int = 64) -> None:
        self._size = size
        self._entries: OrderedDict[int, tuple[Any, str, str]] = OrderedDict()
        self._lock = threading.Lock()  # a Store may be written from more than one thread (tests, the CLI)

    def lookup(self, value: Any) -> tuple[str, str] | None:
        with self._lock:
            entry = self._entries.get(id(value))
            if entry is None or entry[0] is not value:
                return None
            self._entries.move_to_end(id(value))
            return entry[1], entry[2]

    def remember(self, value: Any, kind: str, sha: str) -> None:
        with self._lock:
            self._entries[id(value)] = (value, kind, sha)
            self._entries.move_to_end(id(value))
            while len(self._entries) > self._size:
                self._entries.popitem(last=False)


_OPENSSL_FROM_BYTES = 1 << 16


def digest(raw: bytes) -> str:
    """SHA-256 of ``raw`` in hex. Below 64 KiB, while nothing has loaded ``hashlib``, the interpreter's built-in SHA
    (:mod:`reviewer_app.domain.sha`): a hook that stores a file write's content as a blob skips loading OpenSSL
    (~4-12 ms); larger values load it, for its speed."""
    if len(raw) >= _OPENSSL_FROM_BYTES:
        import hashlib  # noqa: F401  (sha256_hex uses it once loaded)
    return sha256_hex(raw)


def pack(raw: bytes) -> tuple[str, bytes]:
    """The codec and bytes a blob is stored as: zlib when that saves at least a tenth, else raw."""
    packed = zlib.compress(raw, _ZLIB_LEVEL)
    if len(packed) <= len(raw) * _PAYS:
        return CODEC_ZLIB, packed
    return CODEC_RAW, raw


class BlobCorrupt(ValueError):
    """A stored blob is missing, undecodable or not the content its address names."""


def unpack(sha256: str, codec: str, data: bytes) -> bytes:
    """A stored blob's bytes, checked against the address it is stored under."""
    if codec == CODEC_ZLIB:
        try:
            raw = zlib.decompress(data)
        except zlib.error as exc:
            raise BlobCorrupt(f"blob {sha256} does not decompress: {exc}") from None
    elif codec == CODEC_RAW:
        raw = bytes(data)
    else:
        raise BlobCorrupt(f"blob {sha256} uses an unknown codec {codec!r}")
    if digest(raw) != sha256:
        raise BlobCorrupt(f"blob {sha256} does not match its address (changed after it was written)")
    return raw


def encode_value(value: Any) -> tuple[str, bytes] | None:
    """``(kind, bytes)`` for a value large enough to be a blob, else None."""
    if isinstance(value, str):
        if len(value) < BLOB_THRESHOLD:
            return None
        return "s", value.encode("utf-8", "surrogatepass")
    if isinstance(value, dict | list) and value and not _surely_small(value, BLOB_THRESHOLD // 8):
        raw = json.dumps(value, ensure_ascii=False).encode("utf-8", "surrogatepass")
        if len(raw) < BLOB_THRESHOLD:
            return None
        return "j", raw
    return None


def _surely_small(value: Any, budget: int) -> bool:
    """True when ``value`` certainly encodes to less than ``8 * budget`` bytes, without encoding it.

    Counts scalars and containers (each well under 8 bytes of punctuation) and string lengths (up to 4 bytes a
    character in UTF-8, 6 escaped, plus quotes and separators, all within 8 a character plus 8 per item); gives
    up on anything larger or deeper. Most call arguments are a handful of short strings: no JSON encoding.
    """
    stack = [value]
    remaining = budget
    while stack:
        item = stack.pop()
        remaining -= 1
        if isinstance(item, str):
            remaining -= len(item)
        elif isinstance(item, dict):
            for key, child in item.items():
                remaining -= 1 + (len(key) if isinstance(key, str) else 8)
                stack.append(child)
        elif isinstance(item, list | tuple):
            stack.extend(item)
        elif not (item is None or isinstance(item, bool | int | float)):
            return False
        elif isinstance(item, int) and not isinstance(item, bool):
            if not -(10**20) < item < 10**20:
                return False
            remaining -= 3  # up to 21 characters
        elif isinstance(item, float):
            remaining -= 3  # repr is at most 24 characters
        if remaining < 0:
            return False
    return True


def _may_be_large(value: Any) -> bool:
    if isinstance(value, str):
        return len(value) >= BLOB_THRESHOLD
    if isinstance(value, dict | list):
        return bool(value) and not _surely_small(value, BLOB_THRESHOLD // 8)
    return False


def small_json(value: Any) -> str | None:
    """``json.dumps(value)`` when it is shorter than :data:`BLOB_THRESHOLD`, else None (or when it cannot be encoded).

    Then no field of ``value`` is large enough to be a blob (each encodes to fewer UTF-8 bytes than the whole does,
    escaped), so the store keeps it inline as it is. Encoding is C code: cheaper than looking through the fields
    (:func:`_surely_small`), and the text is what the JSON column stores anyway (``Statements.json_value``).
    """
    try:
        text = json.dumps(value)
    except (TypeError, ValueError):  # the ordinary path meets (and reports) what cannot be encoded
        return None
    return text if len(text) < BLOB_THRESHOLD else None


def decode_value(kind: str, raw: bytes) -> Any:
    text = raw.decode("utf-8", "surrogatepass")
    return text if kind == "s" else json.loads(text)


def externalize(
    data: Mapping[str, Any],
    put: Put,
    *,
    skip: Iterable[str] = (),
    memo: ValueMemo | None = None,
    has: Has | None = None,
) -> tuple[dict[str, Any], dict[str, str]]:
    """``data`` with its large top-level fields replaced by references: ``(rest, {field: "kind:sha"})``."""
    skipped = set(skip)
    if not any(_may_be_large(value) for key, value in data.items() if key not in skipped):
        return dict(data), {}  # the usual case, decided without encoding anything
    rest: dict[str, Any] = {}
    refs: dict[str, str] = {}
    for key, value in data.items():
        if key in skipped:
            rest[key] = value
            continue
        if memo is not None and has is not None and isinstance(value, dict | list):
            known = memo.lookup(value)
            if known is not None and has(known[1]):
                refs[key] = f"{known[0]}:{known[1]}"
                continue
        encoded = encode_value(value)
        if encoded is None:
            rest[key] = value
        else:
            kind, raw = encoded
            sha = put(raw)
            refs[key] = f"{kind}:{sha}"
            if memo is not None and isinstance(value, dict | list):
                memo.remember(value, kind, sha)
    return rest, refs


def ref_digests(refs: Mapping[str, Any] | None) -> list[str]:
    if not isinstance(refs, Mapping):
        return []
    return [str(ref)[2:] for ref in refs.values() if isinstance(ref, str) and ref[:2] in ("s:", "j:")]


def internalize(rest: Mapping[str, Any], refs: Mapping[str, Any] | None, blobs: Mapping[str, bytes]) -> dict[str, Any]:
    """``rest`` with its referenced fields back; an unreadable one becomes a placeholder naming it."""
    data = dict(rest)
    if not isinstance(refs, Mapping):
        return data
    for key, ref in refs.items():
        text = str(ref)
        kind, sha = text[:1], text[2:]
        raw = blobs.get(sha)
        if raw is None or kind not in ("s", "j"):
            data[key] = f"<stored content {sha} is missing or damaged>"
            continue
        data[key] = decode_value(kind, raw)
    return data


# -- in-band references: the dictionaries this app builds (checkpoint state, pending calls, messages) -------------


def externalize_inband(
    data: Mapping[str, Any],
    put: Put,
    *,
    skip: Iterable[str] = (),
    memo: ValueMemo | None = None,
    has: Has | None = None,
) -> dict[str, Any]:
    rest, refs = externalize(data, put, skip=(*skip, REFS_KEY), memo=memo, has=has)
    if refs:
        rest[REFS_KEY] = refs
    return rest


def inband_digests(data: Mapping[str, Any]) -> list[str]:
    return ref_digests(data.get(REFS_KEY))


def internalize_inband(data: Mapping[str, Any], blobs: Mapping[str, bytes]) -> dict[str, Any]:
    refs = data.get(REFS_KEY)
    if refs is None:
        return dict(data)
    rest = {key: value for key, value in data.items() if key != REFS_KEY}
    return internalize(rest, refs, blobs)


def externalize_message(message: Mapping[str, Any], put: Put) -> dict[str, Any]:
    """A conversation message with large content, and large call arguments, as references."""
    stored = externalize_inband(message, put, skip=("tool_calls",))
    calls = message.get("tool_calls")
    if isinstance(calls, list) and calls:
        stored_calls = []
        for call in calls:
            function = call.get("function") if isinstance(call, dict) else None
            stored_calls.append(
                {**call, "function": externalize_inband(function, put)} if isinstance(function, dict) else call
            )
        stored["tool_calls"] = stored_calls
    return stored


def message_digests(message: Mapping[str, Any]) -> list[str]:
    found = inband_digests(message)
    for call in message.get("tool_calls") or ():
        function = call.get("function") if isinstance(call, dict) else None
        if isinstance(function, dict):
            found.extend(inband_digests(function))
    return found


def internalize_message(message: Mapping[str, Any], blobs: Mapping[str, bytes]) -> dict[str, Any]:
    restored = internalize_inband(message, blobs)
    calls = restored.get("tool_calls")
    if isinstance(calls, list) and calls:
        restored["tool_calls"] = [
            {**call, "function": internalize_inband(call["function"], blobs)}
            if isinstance(call, dict) and isinstance(call.get("function"), dict)
            else call
            for call in calls
        ]
    return restored


# -- checkpoint state (format 2): the turn's pending calls, counters, the message count it resumes from ------------

STATE_FORMAT = 2


def externalize_state(
    state: Mapping[str, Any], put: Put, *, memo: ValueMemo | None = None, has: Has | None = None
) -> dict[str, Any]:
    stored = externalize_inband(state, put, skip=("pending",), memo=memo, has=has)
    stored["pending"] = [externalize_inband(call, put, memo=memo, has=has) for call in state.get("pending") or ()]
    return stored


def state_digests(state: Mapping[str, Any]) -> list[str]:
    found = inband_digests(state)
    for call in state.get("pending") or ():
        if isinstance(call, Mapping):
            found.extend(inband_digests(call))
    return found


def internalize_state(state: Mapping[str, Any], blobs: Mapping[str, bytes]) -> dict[str, Any]:
    restored = internalize_inband(state, blobs)
    restored["pending"] = [
        internalize_inband(call, blobs) if isinstance(call, Mapping) else call for call in state.get("pending") or ()
    ]
    return restored
