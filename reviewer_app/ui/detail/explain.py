"""The detail pane's "why, what, effects" section for the selected request (issue 26).

The database part (the record, rules, session waivers, workspace) is read on the backend's DB thread and the
disk part (effects) computed on a worker thread; the Qt thread only renders. A preview is bound to the hash of
the arguments it was computed for: the pane asks again when that hash changes (an edit), and every few seconds
a worker checks whether the paths it looked at changed (then the section says it is stale and recomputes on a
click).
"""

from __future__ import annotations

import asyncio
import html
import time
from collections.abc import Callable, Coroutine
from typing import Any

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtWidgets import QHBoxLayout, QLabel, QPushButton, QTextBrowser, QVBoxLayout, QWidget

from reviewer_app.domain.sanitize import terminal_safe
from reviewer_app.hitl import SQLHITLBackend
from reviewer_app.preview.describe import item_facts, network_text
from reviewer_app.preview.request import NOTHING_NAMED, RequestPreview, preview_inputs
from reviewer_app.ui.common import theme

STALE_CHECK_MS = 3000


def _text(value: object) -> str:
    """Escaped for rich text, controls made visible (an agent's text cannot hide or reorder what is shown)."""
    return html.escape(terminal_safe(str(value)))


def why_html(preview: RequestPreview) -> str:
    """The one-line-per-reason "why" for the header."""
    reasons = "".join(f"<li>{_text(reason)}</li>" for reason in preview.why)
    return f"<b>Why you are asked</b><ul style='margin-top:0; margin-bottom:0'>{reasons}</ul>"


def body_html(preview: RequestPreview, stale: list[str], *, diff_on_tab: bool = False) -> str:
    """What it does (segment by segment) and what it will touch, stamped with when it was computed.

    ``diff_on_tab``: the pane shows the write's diff on its Diff tab (write_file), so it is not repeated here: at
    1,024 x 640 this section has a few lines, the tab the whole pane, a monospace, coloured, scrolling view."""
    muted = theme.current().muted.name()
    danger = theme.current().danger.name()
    parts: list[str] = []
    if preview.segments:
        parts.append("<b>What it does</b><ol style='margin-top:0'>")
        for segment in preview.segments:
            colour = "" if segment.known else f" style='color:{danger}'"
            parts.append(f"<li><code{colour}>{_text(segment.text)}</code><br>{_text(segment.explanation)}</li>")
        parts.append("</ol>")
    if preview.description:
        parts.append(f"<p><i>Description — the agent's own words, not checked:</i> {_text(preview.description)}</p>")
    stamp = time.strftime("%H:%M:%S", time.localtime(preview.computed_at))
    parts.append(
        f"<b>What it will touch</b> <span style='color:{muted}'>computed {stamp} in "
        f"{preview.effects.elapsed_ms:.0f} ms for sha256 {preview.args_sha256[:12]}…</span>"
    )
    if stale:
        changed = ", ".join(_text(path) for path in stale[:3])
        parts.append(f"<p style='color:{danger}'><b>Stale:</b> {changed} changed after this was computed.</p>")
    rows: list[str] = []
    effects = preview.effects
    for kind in ("deletes", "writes", "reads"):
        for item in getattr(effects, kind):
            style = f" style='color:{danger}'" if kind == "deletes" or item.get("inside_workspace") is False else ""
            rows.append(
                f"<li><b{style}>{kind}</b> <code>{_text(item['path'])}</code> "
                f"<span style='color:{muted}'>{_text(item_facts(item))}</span></li>"
            )
            if item.get("diff") and diff_on_tab:
                rows.append(f"<li style='list-style:none; color:{muted}'>the diff is on the Diff tab</li>")
            elif item.get("diff"):
                diff = terminal_safe(str(item["diff"][:4000]), keep_newlines=True)  # lines stay lines
                rows.append(f"<pre>{html.escape(diff)}</pre>")
    for item in effects.network:
        rows.append(f"<li><b>network</b> {_text(network_text(item))}</li>")
    for item in effects.executes:
        code = f" <code>{_text(item['code'][:400])}</code>" if item.get("code") else ""
        rows.append(f"<li><b style='color:{danger}'>executes</b> {_text(item['what'])}{code}</li>")
    if rows:
        parts.append(f"<ul style='margin-top:0'>{''.join(rows)}</ul>")
    else:
        parts.append(f"<p>{_text(preview.touches() or NOTHING_NAMED)}</p>")
    if effects.notes:
        notes = "".join(f"<li>{_text(note)}</li>" for note in effects.notes)
        parts.append(f"<p style='color:{muted}'>Not computed:</p><ul>{notes}</ul>")
    return "".join(parts)


class ExplainSection(QWidget):
    """Why the selected request was asked (``why_label``, for the header) and what it does and touches.

    Signals:
        computed(str): a preview for this request id is shown.
    """

    computed = Signal(str)

    def __init__(
        self,
        backend: SQLHITLBackend,
        spawn: Callable[[Coroutine[Any, Any, Any]], Any],
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self.setObjectName("explainSection")
        self.setAccessibleName("What it does and what it will touch")
        self.backend = backend
        self._spawn = spawn
        self._generation = 0
        self._key: tuple[str, str] | None = None
        self._secrets: tuple[str, ...] | None = None
        self._checking = False
        self._diff_on_tab = False
        self.preview: RequestPreview | None = None
        self.stale: list[str] = []
        self.why_label = QLabel()
        self.why_label.setObjectName("whyLabel")
        self.why_label.setAccessibleName("Why you are asked")
        self.why_label.setTextFormat(Qt.TextFormat.RichText)
        self.why_label.setWordWrap(True)
        self.why_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.view = QTextBrowser()
        self.view.setObjectName("explainView")
        self.view.setAccessibleName("What it does and what it will touch")
        self.view.setOpenLinks(False)
        self.recompute_button = QPushButton("Recompute")
        self.recompute_button.setObjectName("recomputeButton")
        self.recompute_button.setToolTip("Compute what it will touch again, from the disk as it is now")
        self.recompute_button.clicked.connect(self.recompute)
        self.recompute_button.hide()
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.view, 1)
        bar = QHBoxLayout()
        bar.addStretch(1)
        bar.addWidget(self.recompute_button)
        layout.addLayout(bar)
        self._stale_timer = QTimer(self, interval=STALE_CHECK_MS)
        self._stale_timer.timeout.connect(self._check_stale)
        self._stale_timer.start()
        self.clear()

    def clear(self) -> None:
        """Nothing selected (or a run): forget the preview."""
        self._generation += 1
        self._key = None
        self.preview = None
        self.stale = []
        self.why_label.clear()
        self.why_label.hide()
        self.view.clear()
        self.recompute_button.hide()

    def keep_only(self, hitl_id: str | None) -> None:
        """Another request (or none) is about to be shown: forget a preview that is not of ``hitl_id``."""
        if self._key is None or self._key[0] != hitl_id:
            self.clear()

    def show_request(
        self, hitl_id: str, digest: str, secrets: tuple[str, ...] | None = None, *, diff_on_tab: bool = False
    ) -> None:
        """Show the preview of ``hitl_id`` for the arguments hashing to ``digest``; computed again only when the
        request or the hash changed. ``secrets``: the secret scan of these arguments, when the pane has it;
        ``diff_on_tab``: the pane shows a write's diff on its own tab (not repeated here)."""
        if self._key == (hitl_id, digest):
            return
        self._diff_on_tab = diff_on_tab
        self._key = (hitl_id, digest)
        self._secrets = secrets
        self._start(hitl_id)

    def recompute(self) -> None:
        if self._key is not None:
            self._start(self._key[0])

    def _start(self, hitl_id: str) -> None:
        self._generation += 1
        generation = self._generation
        self.view.setHtml("<p><i>Working out why, what and what it will touch…</i></p>")
        self._spawn(self._compute(generation, hitl_id, self._secrets))

    async def _compute(self, generation: int, hitl_id: str, secrets: tuple[str, ...] | None) -> None:
        try:
            inputs = await self.backend.preview_inputs(hitl_id)
            preview = await asyncio.to_thread(preview_inputs, inputs, secrets=secrets) if inputs is not None else None
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # the preview is advice: a failure is said, never fatal
            if generation == self._generation:
                self.view.setHtml(f"<p>Could not compute the preview: {_text(exc)}</p>")
            return
        if generation != self._generation:
            return
        if preview is None:
            self.view.setHtml("<p>This request no longer exists.</p>")
            return
        self.preview = preview
        self.stale = []
        self._render()
        self.computed.emit(hitl_id)

    def _render(self) -> None:
        preview = self.preview
        if preview is None:
            return
        self.why_label.setText(why_html(preview))
        self.why_label.show()
        self.view.setHtml(body_html(preview, self.stale, diff_on_tab=self._diff_on_tab))
        self.recompute_button.setVisible(bool(self.stale))

    def _check_stale(self) -> None:
        preview = self.preview
        if preview is None or self._checking or self.stale or not self.isVisible():
            return
        self._checking = True
        self._spawn(self._stale_check(self._generation, preview))

    async def _stale_check(self, generation: int, preview: RequestPreview) -> None:
        try:
            changed = await asyncio.to_thread(preview.effects.stale)
        finally:
            self._checking = False
        if generation == self._generation and changed:
            self.stale = changed
            self._render()
