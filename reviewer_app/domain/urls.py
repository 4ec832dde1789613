"""Where a URL really goes, as the agent host sees it, for ``WebFetch(domain:…)`` rules.

Why: Claude Code parses URLs with Node's WHATWG parser; Python's ``urlsplit`` disagrees with it about where the
host ends (``https://evil.com\\@good.com/`` is ``evil.com`` to Node, ``good.com`` to Python). The host is read
here with ada-url, the C++ parser Node itself uses. An allow matches only a *plain* URL: ``http``/``https``, an
ASCII host name written exactly as the parser reads it, no userinfo, no backslash, no percent-encoding, no
default-breaking port, no IP literal or ``localhost``, no punycode (IDN confusables), no trailing dot, no
whitespace or control characters. Anything else is asked. A deny or ask matches the host as the host parses it
(and, belt and braces, as Python does).

Public API: ``url_in_domain(url, domain, *, plain_only) -> bool``, ``host_of(url) -> str | None``,
``plain_host(url) -> str | None``.
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

_PLAIN = re.compile(r"(?i)^(https?)://([a-z0-9.-]+)(?::([0-9]{1,5}))?(?=[/?#]|$)[\x21-\x7e]*$")
_DEFAULT_PORTS = {"http": "80", "https": "443"}
_LABEL = re.compile(r"^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$")


def host_of(url: str) -> str | None:
    """The host as WHATWG parses it (lower case, IDN as punycode, IPv4 in dotted form), or None."""
    import ada_url  # a C extension: cheap, imported only when a domain rule meets a URL

    try:
        host = ada_url.parse_url(url)["hostname"]
    except ValueError:
        return None
    return str(host) or None


def plain_host(url: str) -> str | None:
    """The host of a URL nobody could read two ways, or None (see the module docstring for what is plain)."""
    match = _PLAIN.match(url)
    if match is None:
        return None
    scheme, written, port = match.group(1).lower(), match.group(2).lower(), match.group(3)
    if port is not None and port != _DEFAULT_PORTS[scheme]:
        return None
    labels = written.split(".")
    if any(not _LABEL.match(label) or label.startswith("xn--") for label in labels):
        return None  # empty labels (a trailing dot, ".."), punycode, leading/trailing hyphens
    if labels[-1].isdigit() or re.fullmatch(r"0x[0-9a-f]*", labels[-1]) or written == "localhost":
        return None  # WHATWG reads a host ending in a number as an IPv4 address
    return written if host_of(url) == written else None


def url_in_domain(url: str, domain: str, *, plain_only: bool) -> bool:
    """Whether ``url`` goes to ``domain`` or a subdomain. ``plain_only`` (an allow): only a plain URL matches.
    Otherwise (a deny or ask): the host as WHATWG or Python reads it, a trailing dot ignored."""
    if plain_only:
        host = plain_host(url)
        return host is not None and _within(host, domain)
    hosts = {host_of(url)}
    try:
        hosts.add(urlsplit(url).hostname)
    except ValueError:
        pass
    return any(host is not None and _within(host.rstrip("."), domain) for host in hosts)


def _within(host: str, domain: str) -> bool:
    return bool(host) and (host == domain or host.endswith("." + domain))
