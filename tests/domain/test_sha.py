"""The built-in SHA and HMAC the hook's lean path uses give hashlib's and hmac's digests."""

from __future__ import annotations

import subprocess
import sys

PROBE = """
import sys
from reviewer_app.domain import sha
assert "hashlib" not in sys.modules and "hmac" not in sys.modules  # the built-in modules are the ones used
cases = []
for key in (b"", b"k", b"k" * 32, b"k" * 64, b"k" * 65, bytes(range(200))):
    for message in (b"", b"reviewer-audit-key-id", "\\u00e9\\u2028".encode() * 999):
        cases.append((key.hex(), message.hex(), sha.hmac_sha256_hex(key, message), sha.sha256_hex(message),
                      sha.new("sha1", message).hexdigest()))
assert "hashlib" not in sys.modules and "_hashlib" not in sys.modules
import hashlib, hmac
for key, message, mac, digest, sha1 in cases:
    key, message = bytes.fromhex(key), bytes.fromhex(message)
    assert mac == hmac.new(key, message, hashlib.sha256).hexdigest(), (key, message)
    assert digest == hashlib.sha256(message).hexdigest() and sha1 == hashlib.sha1(message).hexdigest()
    assert sha.hmac_sha256_hex(key, message) == mac  # hashlib loaded: hmac's own
print("ok", len(cases))
"""


def test_builtin_digests_are_hashlibs_and_hmacs(subprocess_env: dict[str, str]) -> None:
    result = subprocess.run(
        [sys.executable, "-c", PROBE], env=subprocess_env, capture_output=True, text=True, check=False, timeout=60
    )
    assert result.stdout.strip() == "ok 18", result.stderr
