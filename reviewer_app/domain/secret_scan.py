"""Secret-looking values in a call's arguments (detect-secrets' regex detectors, imported on first use): a
secret makes a call medium risk at most, never high.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator
from typing import Any

from reviewer_app.domain.risk_level import Findings, Risk

_MAX_SCANNED_CHARS = 65536
_PIECE_CHARS = 4096


@functools.lru_cache(maxsize=1)
def secret_detectors() -> tuple[Any, ...]:
    """detect-secrets' regex detectors, imported on first use (the package import costs ~0.1 s).

    The modules are imported by name in plain import statements so that PyInstaller bundles them. The entropy
    and keyword detectors are left out: they flag ordinary hashes, ids and words like "password".
    """
    from detect_secrets.plugins import (
        artifactory,
        aws,
        azure_storage_key,
        basic_auth,
        cloudant,
        discord,
        github_token,
        gitlab_token,
        ibm_cloud_iam,
        ibm_cos_hmac,
        jwt,
        mailchimp,
        npm,
        openai,
        private_key,
        pypi_token,
        sendgrid,
        slack,
        softlayer,
        square_oauth,
        stripe,
        telegram_token,
        twilio,
    )
    from detect_secrets.plugins.base import RegexBasedDetector

    modules = (
        artifactory, aws, azure_storage_key, basic_auth, cloudant, discord, github_token, gitlab_token,
        ibm_cloud_iam, ibm_cos_hmac, jwt, mailchimp, npm, openai, private_key, pypi_token, sendgrid, slack,
        softlayer, square_oauth, stripe, telegram_token, twilio,
    )  # fmt: skip
    detectors: list[Any] = []
    for module in modules:
        for value in vars(module).values():
            if (
                isinstance(value, type)
                and issubclass(value, RegexBasedDetector)
                and value is not RegexBasedDetector
                and value.__module__ == module.__name__
            ):
                detectors.append(value())
    return tuple(detectors)


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield str(key)
            yield from _strings(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _strings(item)


def scanned_lines(arguments: Any) -> list[str]:
    """The lines the secret scan reads: every string of ``arguments`` in order, the first 64 KB of them."""
    lines: list[str] = []
    budget = _MAX_SCANNED_CHARS
    for value in _strings(arguments):
        if budget <= 0:
            break
        text = value[:budget]
        budget -= len(text)
        lines.extend(text.splitlines() or [text])
    return lines


@functools.lru_cache(maxsize=1)
def _prefilters() -> tuple[tuple[Any, tuple[re.Pattern[str], ...]], ...]:
    """Each detector with its patterns compiled to search many lines joined by newlines at once.

    ``re.MULTILINE`` makes ``^`` and ``$`` match at each line's ends, as they do on the line alone; the patterns
    use no ``\\A`` or ``\\Z``. A line a pattern matches alone is then matched inside the joined text too, so a
    text with no match holds no line with one: the detector's slow per-line reading is skipped.
    """
    return tuple(
        (detector, tuple(re.compile(pattern.pattern, pattern.flags | re.MULTILINE) for pattern in detector.denylist))
        for detector in secret_detectors()
    )


def _joined_pieces(lines: list[str], size: int = _PIECE_CHARS) -> list[str]:
    """The lines joined by newlines, in pieces of about ``size`` characters cut between lines.

    One regex search holds the GIL until it returns: pieces keep each search short, so a scan on a worker thread
    never stalls the GUI thread for long. No line is cut, and no pattern spans lines, so nothing is missed.
    """
    pieces: list[str] = []
    start = length = 0
    for number, line in enumerate(lines):
        length += len(line) + 1
        if length >= size:
            pieces.append("\n".join(lines[start : number + 1]))
            start, length = number + 1, 0
    if start < len(lines):
        pieces.append("\n".join(lines[start:]))
    return pieces


def secret_kinds(arguments: Any) -> tuple[str, ...]:
    """Kinds of secret-looking values in ``arguments`` (e.g. "AWS Access Key"), by detect-secrets' regexes.

    Each detector reads line by line (its own ``analyze_line``), but only when one of its patterns matches
    somewhere in the scanned text: a 64 KB text with no secret costs a few regex searches, not ~20,000 calls.
    """
    lines = scanned_lines(arguments)
    pieces = _joined_pieces(lines)
    found: dict[str, tuple[int, int]] = {}  # kind -> (first line, detector order): the order a line-by-line scan
    for order, (detector, patterns) in enumerate(_prefilters()):
        if not any(pattern.search(piece) for pattern in patterns for piece in pieces):
            continue
        for number, line in enumerate(lines):
            if any(True for _ in detector.analyze_line(filename="arguments", line=line)):
                found[detector.secret_type] = min(found.get(detector.secret_type, (number, order)), (number, order))
                break
    return tuple(sorted(found, key=found.__getitem__))


def secret_reason(kind: str) -> str:
    return f"secret-looking value in the arguments ({kind})"


def with_secrets(risk: Risk, kinds: tuple[str, ...]) -> Risk:
    """``risk`` as ``assess(call, scan_secrets=False)`` gave it, with the secret scan's kinds added: the same
    level and reasons ``assess(call)`` gives. A secret makes a call medium risk at most, never high."""
    findings = Findings()
    findings.merge(risk)
    for kind in kinds:
        findings.add("medium", secret_reason(kind))
    return findings.risk()
