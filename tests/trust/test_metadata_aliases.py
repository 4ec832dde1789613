"""The cloud metadata service reached by another name: a DNS name that is its alias (``instance-data`` on AWS,
``metadata.google.internal``) or that a wildcard DNS service turns into its address (``fd00-ec2--254.sslip.io`` is
``fd00:ec2::254``, ``100-100-100-200.nip.io`` Alibaba's ``100.100.100.200``) is judged as the address is: high.
Judged by the address the name stands for, not by its text.

A name that resolves elsewhere cannot be known without DNS (which Reviewer does not ask): a fetch of it is not
settled by Reviewer itself, only by a rule that covers it, as any fetch."""

from __future__ import annotations

from pathlib import Path

import pytest

from reviewer_app.domain.rules import Rule, ToolCall, evaluate
from tests.trust.test_wildcards_and_recursive_reads import NOW, home, judged_high

__all__ = ["home"]  # the fixture, used by name below

ALIASES = [
    "http://instance-data/latest/meta-data/iam/security-credentials/",
    "http://instance-data.ec2.internal/latest/meta-data/",
    "http://fd00-ec2--254.sslip.io/latest/meta-data/",
    "http://fd00-ec2-0-0-0-0-0-254.sslip.io/latest/api/token",
    "http://0-0-0-0-0-ffff-a9fe-a9fe.sslip.io/latest/meta-data/",
    "http://100-100-100-200.nip.io/latest/meta-data/ram/security-credentials/",
    "http://100.100.100.200.sslip.io/latest/meta-data/",
    "http://app.100.100.100.200.nip.io/latest/",
    "http://app-646464c8.nip.io/latest/",
    "http://169.254.169.254.nip.io/latest/meta-data/",
    "http://169-254-169-254.sslip.io/latest/meta-data/",
    "http://169.254.169.254.xip.io/latest/meta-data/",
    "http://a9fea9fe.nip.io/latest/meta-data/",
    "http://metadata.google.internal./computeMetadata/v1/",
    "http://metadata/computeMetadata/v1/",
]


@pytest.mark.parametrize("url", ALIASES)
def test_a_name_that_stands_for_the_metadata_service_is_judged_high(home: Path, url: str) -> None:
    assert judged_high("WebFetch", {"url": url, "prompt": "x"}, home / "ws"), url
    assert judged_high("Bash", {"command": f"curl -s {url}"}, home / "ws"), url


ELSEWHERE = [
    "http://10-0-0-5.nip.io/health",
    "http://app.192.168.1.20.sslip.io/",
    "http://docs.example.com/latest/meta-data/",
    "http://attacker.example/",  # may resolve to 169.254.169.254: only DNS would say
]


@pytest.mark.parametrize("url", ELSEWHERE)
def test_a_name_that_resolves_elsewhere_is_asked_unless_a_rule_covers_it(home: Path, url: str) -> None:
    assert not judged_high("WebFetch", {"url": url, "prompt": "x"}, home / "ws"), url
    call = ToolCall("WebFetch", {"url": url, "prompt": "x"}, cwd=str(home / "ws"))
    assert evaluate([], call, NOW) is None  # nothing settles it by itself: the operator is asked
    host = url.split("/")[2]
    other = evaluate([Rule("allow", "WebFetch(domain:other.example)", created_at=NOW)], call, NOW)
    assert other is None
    named = evaluate([Rule("allow", f"WebFetch(domain:{host})", created_at=NOW)], call, NOW)
    assert named is not None and named.effect == "allow"
