"""``WebFetch(domain:…)`` rules judge the URL exactly as the host does (WHATWG, the parser Node uses: ada-url).

Python's ``urlsplit`` and the host disagree about where the host ends (backslashes, userinfo): an allow for
``good.com`` let Claude fetch ``https://evil.com\\@good.com/``. An ambiguous URL never matches an allow; a deny
still matches on the host as the host parses it. The differential part runs the engine against ada-url over a
corpus of tricky URLs and generated ones: no URL whose real host is outside the rule's domain is ever allowed.
"""

from __future__ import annotations

import ada_url
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reviewer_app.domain.rules import Rule, ToolCall, evaluate

NOW = 1_000_000.0


def verdict(effect: str, domain: str, url: str) -> str | None:
    found = evaluate([Rule(effect, f"WebFetch(domain:{domain})", created_at=NOW)], fetch(url), NOW)  # type: ignore[arg-type]
    return found.effect if found is not None else None


def fetch(url: str) -> ToolCall:
    return ToolCall("WebFetch", {"url": url, "prompt": "summarise"}, cwd="/w")


def host_of(url: str) -> str | None:
    """The host as the agent host (Node, WHATWG) sees it."""
    try:
        return str(ada_url.parse_url(url)["hostname"])
    except ValueError:
        return None


def within(host: str | None, domain: str) -> bool:
    return host is not None and (host == domain or host.endswith("." + domain))


AMBIGUOUS = [
    "https://evil.com\\@good.com/",
    "https://evil.com\\.good.com/",
    "https://good.com@evil.com/",
    "https://user:pw@good.com/",
    "https://good.com:8443/",
    "https://good.com./",
    "https://docs.good.com../",
    "https://ex%61mple.good.com/",
    "https://good%2Ecom/",
    "https://xn--gd-ufa.good.com/",
    "https://gооd.com/",  # Cyrillic o
    "https://docs.gооd.com/",
    "https://127.0.0.1/",
    "https://[::1]/",
    "https://localhost/",
    "http://0x7f.1/",
    "https:/good.com/",
    "https:\\\\good.com/",
    " https://good.com/",
    "https://good.com\t/",
    "https://go\nod.com/",
    "ftp://good.com/",
    "javascript://good.com/%0aalert(1)",
    "//good.com/",
    "good.com/path",
]


@pytest.mark.parametrize("url", AMBIGUOUS)
def test_an_ambiguous_url_never_matches_an_allow(url: str) -> None:
    assert verdict("allow", "good.com", url) is None
    assert verdict("allow", "localhost", url) is None or url == "https://localhost/"


def test_the_backslash_attack_host_parses_evil_com() -> None:
    url = "https://evil.com\\@good.com/"
    assert host_of(url) == "evil.com"
    assert verdict("allow", "good.com", url) is None
    assert verdict("deny", "evil.com", url) == "deny"  # deny matches on the host as the host parses it
    assert verdict("ask", "evil.com", url) == "ask"


@pytest.mark.parametrize(
    "url", ["https://good.com@evil.com/", "https://EVIL.com./x", "https://ev%69l.com/", "https://a.evil.com:444/"]
)
def test_deny_catches_the_real_host_whatever_the_spelling(url: str) -> None:
    assert verdict("deny", "evil.com", url) == "deny"


@pytest.mark.parametrize(
    "url", ["https://good.com/", "https://docs.good.com/a?b=c#d", "http://good.com/x", "https://GOOD.com:443/"]
)
def test_plain_urls_are_still_allowed(url: str) -> None:
    assert verdict("allow", "good.com", url) == "allow"


def test_a_domain_rule_for_an_ip_or_localhost_matches_only_plainly() -> None:
    assert verdict("allow", "localhost", "http://localhost:3000/") is None  # an unusual port is asked
    assert verdict("deny", "127.0.0.1", "http://0x7f.1/") == "deny"


# -- differential: the engine against ada-url ----------------------------------------------------------------

PIECES = [
    "good.com", "evil.com", "docs.good.com", "good.com.evil.com", "evilgood.com", "@", ":", "\\", "/", ".", "..",
    "%2e", "%40", "%5c", "#", "?", "[", "]", "::1", "127.0.0.1", "0x7f.1", "localhost", "xn--", "о", "\t", " ",
    "user", ":443", ":8080", "%", "\u3002", "\uff0e", "GOOD.COM",
]  # fmt: skip


# Built once: a composite that builds its strategies in each draw spends most of the test validating them again.
SCHEMES = st.sampled_from(["https://", "http://", "https:", "https:/", "https:\\\\", "HTTPS://", "ftp://", ""])
BODIES = st.lists(st.sampled_from(PIECES), min_size=1, max_size=7)
ENDINGS = st.sampled_from(["", "/", "/x", "?q", "#f"])


@st.composite
def tricky_urls(draw: st.DrawFn) -> str:
    return draw(SCHEMES) + "".join(draw(BODIES)) + draw(ENDINGS)


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tricky_urls(), st.sampled_from(["good.com", "docs.good.com", "com", "localhost"]))
def test_no_generated_url_whose_real_host_escapes_the_domain_is_allowed(url: str, domain: str) -> None:
    effect = verdict("allow", domain, url)
    if effect == "allow":
        assert within(host_of(url), domain), (url, host_of(url))
    if within(host_of(url), domain):
        assert verdict("deny", domain, url) == "deny", url


CORPUS = [*AMBIGUOUS, "https://good.com/", "https://a.b.good.com/", "https://good.com:443/", "http://good.com:80/"]


@pytest.mark.parametrize("url", CORPUS)
def test_corpus_allow_implies_the_reference_host_is_inside(url: str) -> None:
    if verdict("allow", "good.com", url) == "allow":
        assert within(host_of(url), "good.com")
