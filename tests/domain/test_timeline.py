from __future__ import annotations

from reviewer_app.domain.timeline import BlockEvent, BlockKind, BlockOp, fold_events, waiting_spans


def event(seq: int, block: str, kind: BlockKind, op: BlockOp, data: dict, ts: int = 0, parent: str | None = None):
    return BlockEvent(block, kind, op, data, "s", "i", ts or seq * 10, parent_id=parent, seq=seq)


def test_fold_applies_deltas_and_patches_in_seq_order() -> None:
    events = [
        event(4, "t1", BlockKind.TOOL_USE, BlockOp.PATCH, {"status": "running"}),
        event(1, "x", BlockKind.TEXT, BlockOp.APPLY, {"content": "Hel"}),
        event(2, "x", BlockKind.TEXT, BlockOp.DELTA, {"content": "lo"}),
        event(3, "t1", BlockKind.TOOL_USE, BlockOp.APPLY, {"name": "run_shell", "status": "pending"}),
        event(5, "t1", BlockKind.TOOL_USE, BlockOp.PATCH, {"status": "success", "result": "ok", "duration_ms": 7}),
        event(6, "h", BlockKind.HITL, BlockOp.APPLY, {"hitl_id": "h1"}, ts=100, parent="t1"),
        event(7, "h", BlockKind.HITL, BlockOp.PATCH, {"status": "decided", "resolved_ms": 400}, ts=400),
    ]
    blocks = fold_events(events)
    assert [b.block_id for b in blocks] == ["x", "t1", "h"]
    assert blocks[0].data == {"content": "Hello"}
    assert blocks[1].data == {"name": "run_shell", "status": "success", "result": "ok", "duration_ms": 7}
    assert blocks[1].children == ["h"] and blocks[2].parent_id == "t1"
    assert waiting_spans(blocks) == [(100, 400)]
    # the input events are not mutated by folding
    assert events[3].data == {"name": "run_shell", "status": "pending"}


def test_fold_tolerates_a_patch_without_apply() -> None:
    [block] = fold_events([event(9, "lost", BlockKind.TOOL_USE, BlockOp.PATCH, {"status": "error"})])
    assert block.data == {"status": "error"}
