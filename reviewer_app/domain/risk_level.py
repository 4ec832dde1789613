"""A risk verdict (:class:`Risk`: a level and the reasons behind it) and :class:`Findings`, which collects one.

Why a module of its own: the path, shell, secret and call judgements each add findings; they share this type.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

RiskLevel = Literal["low", "medium", "high"]
_ORDER: dict[str, int] = {"low": 0, "medium": 1, "high": 2}


@dataclass(frozen=True, slots=True)
class Risk:
    """A risk level and the human reasons behind it (empty for low)."""

    level: RiskLevel = "low"
    reasons: tuple[str, ...] = ()

    @property
    def high(self) -> bool:
        return self.level == "high"

    def to_dict(self) -> dict[str, Any]:
        return {"level": self.level, "reasons": list(self.reasons)}


class Findings:
    """The reasons found so far and the highest level among them."""

    def __init__(self) -> None:
        self.level: RiskLevel = "low"
        self.reasons: list[str] = []

    def add(self, level: RiskLevel, reason: str) -> None:
        if _ORDER[level] > _ORDER[self.level]:
            self.level = level
        if reason not in self.reasons:
            self.reasons.append(reason)

    def merge(self, risk: Risk) -> None:
        for reason in risk.reasons:
            self.add(risk.level, reason)
        if _ORDER[risk.level] > _ORDER[self.level]:
            self.level = risk.level

    def risk(self) -> Risk:
        return Risk(self.level, tuple(self.reasons))
