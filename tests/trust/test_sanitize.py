"""Secrets never reach output or storage; terminal control sequences never reach a terminal raw."""

from __future__ import annotations

from reviewer_app.domain.sanitize import REDACTED, redact_secrets, redact_url, terminal_safe


def test_known_key_is_redacted_wherever_it_appears() -> None:
    key = "local-dev-key-3f9a1c"
    body = f'{{"error": "bad request", "echo": {{"headers": {{"authorization": "Bearer {key}"}}}}, "k": "{key}"}}'
    cleaned = redact_secrets(body, [key])
    assert key not in cleaned and REDACTED in cleaned


def test_header_shapes_and_key_shapes_are_redacted_without_knowing_the_key() -> None:
    samples = [
        "Authorization: Bearer abcdefghijklmnop123",
        "authorization=Basic dXNlcjpwYXNz",
        "x-api-key: s3cr3tvalue99",
        "https://api.example/v1?api_key=topsecret123&x=1",
        "key sk-proj-abcdefghijklmnopqrstuvwx in the text",
        "token ghp_abcdefghijklmnopqrstuvwxyz0123456789",
        "AKIAABCDEFGHIJKLMNOP",
    ]
    for sample in samples:
        cleaned = redact_secrets(sample)
        assert REDACTED in cleaned, sample
    assert "abcdefghijklmnop123" not in redact_secrets(samples[0])
    assert "topsecret123" not in redact_secrets(samples[3])


def test_url_userinfo_is_redacted() -> None:
    assert redact_url("https://alice:hunter2@models.example/v1") == f"https://{REDACTED}@models.example/v1"
    assert redact_url("postgresql+psycopg://ci:pw@db/reviews") == f"postgresql+psycopg://{REDACTED}@db/reviews"
    assert "hunter2" not in redact_secrets("connect to https://alice:hunter2@models.example failed")


def test_plain_text_is_left_alone() -> None:
    text = "wrote 12 bytes to notes.txt; tokens used: 42"
    assert redact_secrets(text) == text


def test_escape_sequences_are_made_visible() -> None:
    hidden = "rm -rf ~ \x1b[8mecho harmless\x1b[0m"
    shown = terminal_safe(hidden)
    assert "\x1b" not in shown and "\\x1b[8m" in shown
    assert terminal_safe("ls\rrm -rf /") == "ls\\x0drm -rf /"
    assert terminal_safe("a\u202eb") == "a\\u202eb"
    assert terminal_safe("tab\tok") == "tab\tok"
    assert terminal_safe("two\nlines") == "two\\x0alines"
    assert terminal_safe("two\nlines", keep_newlines=True) == "two\nlines"


def test_json_output_stays_json_and_hides_nothing() -> None:
    import json

    from reviewer_app.domain.sanitize import json_terminal_safe

    value = {"command": "ls \u202e\x9b;rm", "lines": "a\nb\x1b[8m"}
    text = json_terminal_safe(json.dumps(value, indent=2, ensure_ascii=False))
    assert json.loads(text) == value
    assert "\u202e" not in text and "\x9b" not in text and "\x1b" not in text
