"""SHA-256, SHA-1 and HMAC-SHA256 without loading OpenSSL when nothing else has.

Why: ``hashlib`` loads OpenSSL's ``_hashlib`` (~4 ms of a hook call whose whole budget is half an interpreter
start). The interpreter's built-in ``_sha256``/``_sha2`` and ``_sha1`` give the same digests; they are used only
while ``hashlib`` is not loaded (the hook's lean path), so a process that hashes large values (the window, the
audit verifier) keeps OpenSSL's speed. HMAC is RFC 2104's construction, as the ``hmac`` module builds it; a test
holds both to ``hashlib``/``hmac`` for keys shorter than, as long as and longer than the block.
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False  # no ``typing`` at run time (the hook's lean path imports this module)
if TYPE_CHECKING:
    from typing import Any

_BLOCK = 64
_TRANS_5C = bytes(x ^ 0x5C for x in range(256))
_TRANS_36 = bytes(x ^ 0x36 for x in range(256))


_BUILTINS: dict[str, Any] = {}


def _builtin(name: str) -> Any:
    """The built-in constructor ``name`` (``sha256``/``sha1``), or None where this interpreter has none; looked up
    once (``_sha2`` since Python 3.12, ``_sha256`` before)."""
    if name not in _BUILTINS:
        _BUILTINS[name] = None
        sha256 = "_sha2" if sys.version_info >= (3, 12) else "_sha256"  # (a failed import searches every path entry)
        for module in (sha256,) if name == "sha256" else ("_sha1",):
            try:
                _BUILTINS[name] = getattr(__import__(module), name)
                break
            except (ImportError, AttributeError):
                continue
    return _BUILTINS[name]


def new(name: str, data: bytes = b"") -> Any:
    """A ``name`` hash object over ``data``: hashlib's once it is loaded, else the interpreter's built-in one."""
    hashlib = sys.modules.get("hashlib")
    constructor = getattr(hashlib, name) if hashlib is not None else _builtin(name)
    if constructor is None:
        import hashlib

        constructor = getattr(hashlib, name)
    return constructor(data)


def sha256_hex(data: bytes) -> str:
    return str(new("sha256", data).hexdigest())


def hmac_sha256_hex(key: bytes, message: bytes) -> str:
    """HMAC-SHA256 of ``message`` under ``key`` (``hmac.new(key, message, hashlib.sha256).hexdigest()``)."""
    hmac = sys.modules.get("hmac")
    if hmac is not None:
        import hashlib

        return str(hmac.new(key, message, hashlib.sha256).hexdigest())
    if len(key) > _BLOCK:
        key = new("sha256", key).digest()
    key = key.ljust(_BLOCK, b"\0")
    inner = new("sha256", key.translate(_TRANS_36) + message).digest()
    return str(new("sha256", key.translate(_TRANS_5C) + inner).hexdigest())
