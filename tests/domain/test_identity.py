"""The recorded reviewer on a database that knows the login: the login first, the asserted name only a label."""

from __future__ import annotations

import pytest

from reviewer_app.domain.identity import is_recorded_as, recorded_reviewer


@pytest.mark.parametrize(
    ("name", "recorded"),
    [
        (None, "alice"),
        ("", "alice"),
        ("alice", "alice"),
        ("Alice Smith", "alice (Alice Smith)"),
        ("bob", "alice (bob)"),  # another reviewer's name is a label under alice, never bob
        ("alicebob", "alice (alicebob)"),  # a name the login merely starts is not the login
        ("system:expiry", "alice/system:expiry"),
        ("session-rule:7", "alice/session-rule:7"),
        ("rule:allow-tools", "alice/rule:allow-tools"),
        ("alice (Alice Smith)", "alice (Alice Smith)"),  # already recorded under this login: unchanged
        ("alice/system:expiry", "alice/system:expiry"),
    ],
)
def test_a_name_is_recorded_under_the_login(name: str | None, recorded: str) -> None:
    assert recorded_reviewer("alice", name) == recorded
    assert is_recorded_as("alice", recorded)
    assert recorded_reviewer("alice", recorded) == recorded  # idempotent: store and backend may both apply it


@pytest.mark.parametrize("recorded", ["bob", "alicebob", "alice(x)", "Alice", "alice:system", " alice", "bob (alice)"])
def test_other_names_are_not_the_login(recorded: str) -> None:
    assert not is_recorded_as("alice", recorded)
