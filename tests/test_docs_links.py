"""Every relative link and image in README.md and docs/*.md points at a file that exists, and every anchor at a
heading of that file (as GitHub names heading anchors), so moving a section between guides cannot strand a link."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest
from markdown_it import MarkdownIt
from markdown_it.token import Token

REPO = Path(__file__).resolve().parents[1]
PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
PARSER = MarkdownIt("commonmark").enable("table")


def _walk(tokens: list[Token]) -> Iterator[Token]:
    for token in tokens:
        yield token
        if token.children:
            yield from _walk(token.children)


def _plain_text(inline: Token) -> str:
    return "".join(child.content for child in inline.children or [] if child.type in ("text", "code_inline"))


def github_anchors(markdown: str) -> set[str]:
    """The anchors GitHub gives a page's headings: lower case, punctuation dropped, spaces as hyphens, -1 on repeats."""
    tokens = PARSER.parse(markdown)
    anchors: set[str] = set()
    seen: dict[str, int] = {}
    for index, token in enumerate(tokens):
        if token.type != "heading_open":
            continue
        slug = re.sub(r"[^\w\- ]", "", _plain_text(tokens[index + 1]).strip().lower()).replace(" ", "-")
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        anchors.add(slug if count == 0 else f"{slug}-{count}")
    return anchors


def relative_targets(markdown: str) -> list[str]:
    """Link and image targets that stay in the repository (no scheme, no host), in order."""
    targets = []
    for token in _walk(PARSER.parse(markdown)):
        target = token.attrs.get("href") if token.type == "link_open" else None
        if token.type == "image":
            target = token.attrs.get("src")
        if isinstance(target, str) and not urlsplit(target).scheme and not target.startswith("//"):
            targets.append(target)
    return targets


def _shown(file: Path) -> str:
    return str(file.relative_to(REPO)) if file.is_relative_to(REPO) else file.name


def broken_targets(page: Path) -> list[str]:
    problems = []
    for target in relative_targets(page.read_text(encoding="utf-8")):
        path_part, _, anchor = target.partition("#")
        file = (page.parent / unquote(path_part)).resolve() if path_part else page
        if not file.exists():
            problems.append(f"{target}: no file {_shown(file)}")
        elif anchor and file.suffix == ".md" and anchor not in github_anchors(file.read_text(encoding="utf-8")):
            problems.append(f"{target}: no heading #{anchor} in {_shown(file)}")
    return problems


@pytest.mark.parametrize("page", PAGES, ids=lambda page: str(page.relative_to(REPO)))
def test_every_relative_link_and_image_resolves(page: Path) -> None:
    assert broken_targets(page) == []


def test_the_checker_reports_a_missing_file_and_a_missing_heading(tmp_path: Path) -> None:
    (tmp_path / "guide.md").write_text("# Guide\n\n## Who is trusted, and what the `audit` proves\n", "utf-8")
    page = tmp_path / "page.md"
    page.write_text(
        "[ok](guide.md#who-is-trusted-and-what-the-audit-proves) [bad](guide.md#nope) ![pic](gone.png)\n"
        "[web](https://example.com/x.md) `[code](nowhere.md)`\n\n```md\n[fenced](nowhere.md)\n```\n",
        "utf-8",
    )
    problems = broken_targets(page)
    assert len(problems) == 2, problems
    assert problems[0].startswith("guide.md#nope: no heading")
    assert problems[1].startswith("gone.png: no file")


def test_the_readme_is_a_front_page() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= 350
    assert "make run" in readme and "make test" in readme
    assert any(target.startswith("docs/") and target.endswith(".png") for target in relative_targets(readme))
