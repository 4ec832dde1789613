"""Which releases of an outside framework an adapter knows, checked before it touches the framework.

Why: the adapters reach into framework internals (a middleware hook, a hook event, a module-level prompt
function) that change between releases without notice. An adapter on a release it was never tried with could
let a call run unreviewed, so it refuses with one clear sentence instead.
"""

from __future__ import annotations

import re
from importlib.metadata import PackageNotFoundError, version

_RELEASE = re.compile(r"^(\d+(?:\.\d+)*)")


class UnsupportedFrameworkVersion(RuntimeError):
    """The installed framework is missing or a release this adapter was not built for."""


def require_version(distribution: str, minimum: str, below: str) -> str:
    """The installed version of ``distribution`` when ``minimum <= version < below``; else a clear error."""
    try:
        installed = version(distribution)
    except PackageNotFoundError:
        raise UnsupportedFrameworkVersion(
            f"{distribution} is not installed: pip install '{distribution}>={minimum},<{below}'"
        ) from None
    parsed = release_of(installed)
    if parsed is None or not release_of(minimum) <= parsed < release_of(below):  # type: ignore[operator]
        raise UnsupportedFrameworkVersion(
            f"Reviewer's {distribution} adapter supports {distribution} >={minimum},<{below}; "
            f"{installed} is installed (its approval hooks may differ): install a supported release "
            "or a Reviewer that knows this one"
        )
    return installed


def release_of(text: str) -> tuple[int, ...] | None:
    """``"0.14.0rc1"`` → ``(0, 14, 0)``: the release numbers compared (a pre-release counts as its release)."""
    match = _RELEASE.match(text.strip())
    if match is None:
        return None
    numbers = tuple(int(part) for part in match.group(1).split("."))
    while len(numbers) > 1 and numbers[-1] == 0:  # 1.0 == 1.0.0
        numbers = numbers[:-1]
    return numbers
