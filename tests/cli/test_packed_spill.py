"""compare's spill: the packed turns and verdicts of the cases its report keeps wait in an anonymous temporary file
(pipeline.PackedSpill, the core's SpillStore), read back when a render or the report file reaches them; and the
small details those cases' criteria share."""

from __future__ import annotations

import gc
import io
import json
import os
import tempfile
from pathlib import Path

import pytest

import evalbot.cli.compare as cli_compare
from evalbot.pipeline import READ_AHEAD, SPILL_BUFFER, PackedSpill
from evalbot.results import (
    CaseResult,
    EvalSetReport,
    InvocationScore,
    MetricResult,
    PackedScores,
    Report,
    TurnView,
    compacted,
    write_report_json,
)
from evalbot.turnpack import PackedTurns, spill
from tests.fakes.cli_project import cli, make_baseline, proj

__all__ = ["proj"]  # the fixture



def _chunks() -> list[bytes]:
    """Pieces of several sizes, some past the buffer (so some are written and some still pending), all distinct."""
    sizes = [1, 700_000, 5, SPILL_BUFFER + 3, 0, 400_000, 17, 900_000, 2]
    return [bytes((i * 7 + j) % 251 for j in range(n)) if n < 100 else bytes([i]) * n for i, n in enumerate(sizes)]


def test_spill_gives_back_each_piece_written_or_pending(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every piece reads back as given, in any order, whether written to the file or still in the buffer; the file
    has no name in its folder."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    spill = PackedSpill()
    pieces = _chunks()
    starts = [spill.put(p) for p in pieces]
    assert None not in starts and spill._written > 0 and spill._pending
    assert list(tmp_path.iterdir()) == []
    for piece, start in reversed(list(zip(pieces, starts, strict=True))):
        assert start is not None and spill.get(start, len(piece)) == piece


def test_spill_file_is_closed_once_nothing_holds_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    spill = PackedSpill()
    assert spill.put(b"x" * (SPILL_BUFFER + 1)) == 0
    fd = spill._fd
    assert fd is not None and os.fstat(fd).st_size == SPILL_BUFFER + 1
    del spill
    gc.collect()
    with pytest.raises(OSError):
        os.fstat(fd)


def test_a_spill_that_cannot_be_made_keeps_the_turns_in_memory(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """No temporary folder to write in: put refuses, and a kept case's turns stay held, unchanged."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "missing"))
    spill = PackedSpill()
    assert spill.put(b"abc") is None
    case = CaseResult(eval_id="c", status="failed", turns=PackedTurns.of([TurnView(user="hi", actual_response="no")]))
    compacted(case, spill)
    assert case.turns._store is None and isinstance(case.turns._packed, bytes)
    assert case.turns[0].actual_response == "no"


def test_a_spill_whose_name_cannot_be_removed_is_not_used(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The file must have no name while the turns are in it: when its name cannot be removed at once, it is closed
    and removed (a second try), and the spill keeps nothing (the turns stay in memory)."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    real, tries = os.unlink, []

    def unlink(path: str) -> None:
        tries.append(path)
        if len(tries) == 1:
            raise PermissionError(13, "Permission denied", path)
        real(path)

    monkeypatch.setattr(os, "unlink", unlink)
    spill = PackedSpill()
    assert spill.put(b"abc") is None and spill._fd is None and spill._broken
    assert len(tries) == 2 and list(tmp_path.iterdir()) == []
    assert spill.put(b"def") is None and len(tries) == 2


def test_a_full_disk_keeps_what_was_not_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A write that fails (here /dev/full: no space left) loses nothing: the pieces not written stay readable from
    memory, and later pieces are refused (they stay with their cases)."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    spill = PackedSpill()
    first = b"a" * (SPILL_BUFFER + 1)
    assert spill.put(first) == 0 and spill._written == len(first)
    assert spill._fd is not None
    full = os.open("/dev/full", os.O_WRONLY)
    try:
        real, spill._fd = spill._fd, full
        pending = b"b" * SPILL_BUFFER
        start = spill.put(pending)
        assert start == len(first) and spill._broken
        assert spill.put(b"later") is None
        spill._fd = real
        assert spill.get(0, len(first)) == first and spill.get(len(first), len(pending)) == pending
    finally:
        os.close(full)


def test_compare_spills_the_kept_turns_and_writes_the_same(proj: Path, capsys: pytest.CaptureFixture[str],
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """compare gives its report a PackedSpill: the failing cases' turns are written there, and the comment (which
    shows the changed argument, read from the turns) and the report are the same as with the turns held in memory
    (no temporary folder: the spill refuses every piece)."""
    make_baseline(capsys)
    made: list[PackedSpill] = []

    class Watched(PackedSpill):
        def __init__(self) -> None:
            super().__init__()
            made.append(self)

    monkeypatch.setattr(cli_compare, "PackedSpill", Watched)
    argv = ["compare", "evals", "--actuals", "runs/pr.json", "--comment", "out/c.md", "--report", "out/r.json"]
    code, _, _ = cli(capsys, *argv)
    assert code == 1 and len(made) == 1 and made[0]._written + len(made[0]._pending) > 0
    comment, report = (proj / "out/c.md").read_text(), (proj / "out/r.json").read_text()
    assert "↳ amount: 25 → 250" in comment
    monkeypatch.setattr(tempfile, "tempdir", str(proj / "missing"))
    code, _, _ = cli(capsys, *argv)
    assert code == 1 and made[1]._broken and not made[1]._pending
    assert (proj / "out/c.md").read_text() == comment and (proj / "out/r.json").read_text() == report
    turns = json.loads(report)["eval_sets"][0]["cases"]
    assert any(c["turns"] for c in turns)


def test_packed_turns_in_a_store_read_serialise_and_copy_as_held_ones(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """Turns written to a store hold only where they are, and read, compare, serialise and copy as held turns."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    views = [TurnView(invocation_id=f"t{i}", user="hi " * i, actual_response="日本語", expected_tool_calls=None)
             for i in range(3)]
    held = PackedTurns.of(views)
    spilled = PackedTurns.of(views)
    spill(PackedSpill(), [spilled])
    assert isinstance(spilled._packed, int) and spilled._store is not None
    assert spilled == held and held == spilled and spilled.same_packing(held) and list(spilled) == views
    assert len(spilled) == 3 and spilled[1] == views[1] and spilled[1:] == views[1:]
    a = CaseResult(eval_id="c", status="failed", turns=held)
    b = CaseResult(eval_id="c", status="failed", turns=spilled)
    assert a.model_dump_json() == b.model_dump_json() and a.model_dump() == b.model_dump()
    assert b.model_copy(deep=True).turns is spilled and b.model_copy(deep=True) == a


def _case(i: int) -> CaseResult:
    scores = [InvocationScore(invocation_id=f"c{i}-t{t}", score=t / 2, status="passed" if t else "failed",
                              details={"votes": {"yes": t, "no": 2 - t}} if t else None) for t in range(3)]
    return CaseResult(eval_id=f"c{i}", status="failed", metrics={
        "judged": MetricResult(score=0.5, status="failed", threshold=1.0, per_invocation=scores, reason="why"),
        "count": MetricResult(status="informational", per_invocation=scores[:1], details={"value": float(i % 2)}),
    }, turns=PackedTurns.of([TurnView(invocation_id=f"c{i}-t0", user=f"hi {i} " * 150, actual_response="no")]))


def test_kept_cases_spill_turns_and_verdicts_in_one_piece_and_write_the_same(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A kept case's turns and packed verdicts go to the store in one piece; the cases read, compare and serialise
    as cases held in memory, in report order (through the read-ahead window) and out of it (re-read)."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    store = PackedSpill()
    puts: list[int] = []
    put = store.put
    monkeypatch.setattr(store, "put", lambda data: puts.append(len(data)) or put(data))
    count = 1500  # about 1.7 MB: past the write buffer (some written, some pending) and many read-ahead windows
    held = [compacted(_case(i)) for i in range(count)]
    kept = [compacted(_case(i), store) for i in range(count)]
    assert len(puts) == count and store._written > READ_AHEAD and store._pending
    for case in kept:
        assert isinstance(case.turns._packed, int)
        assert all(isinstance(m.per_invocation, PackedScores) and isinstance(m.per_invocation._packed, int)
                   for m in case.metrics.values())

    def written(cases: list[CaseResult]) -> str:
        out = io.StringIO()
        write_report_json(Report(eval_sets=[EvalSetReport(eval_set_id="s", path="p", status="failed",
                                                          cases=cases)]), out)
        return out.getvalue()

    assert written(kept) == written(held) == written([_case(i) for i in range(count)])
    for i in (count - 1, 0, count // 2, 1):  # out of order: each read outside the window reads it again
        assert kept[i] == held[i] == _case(i) and kept[i].model_dump_json() == _case(i).model_dump_json()
        assert kept[i].metrics["judged"].per_invocation[1].details == {"votes": {"yes": 1, "no": 1}}


def test_kept_cases_share_equal_small_details(tmp_path: Path) -> None:
    """Equal small details of kept cases' criteria are one object (same keys, order, types and values); different
    ones, differently typed ones (1 vs 1.0 vs True) and large ones are not shared; the JSON is unchanged."""
    cases = [compacted(_case(i)) for i in range(4)]
    details = [c.metrics["count"].details for c in cases]
    assert details[0] is details[2] and details[1] is details[3] and details[0] is not details[1]
    assert details[0] == {"value": 0.0} and details[1] == {"value": 1.0}
    odd = [compacted(CaseResult(eval_id="x", status="passed", metrics={"m": MetricResult(
        status="informational", details=d)})).metrics["m"].details
        for d in ({"value": 1}, {"value": True}, {"value": 1.0}, {"b": 1, "a": 2}, {"a": 2, "b": 1})]
    assert len({id(d) for d in odd}) == 5 and [list(d) for d in odd[3:]] == [["b", "a"], ["a", "b"]]
    big = {"rationale": "x" * 500}
    first, second = (compacted(CaseResult(eval_id="x", status="passed", metrics={"m": MetricResult(
        status="informational", details=dict(big))})).metrics["m"].details for _ in range(2))
    assert first == second == big and first is not second


def test_shared_details_changed_in_place_are_not_given_to_later_cases() -> None:
    """Code holding a kept case may change its criterion's details in place (evalbot does not): a later case with
    the details the first one had gets its own, not the changed object, even when they compare equal (1 == 1.0)."""
    def kept(details: dict[str, object]) -> dict[str, object] | None:
        return compacted(CaseResult(eval_id="x", status="passed", metrics={"m": MetricResult(
            status="informational", details=details)})).metrics["m"].details

    first = kept({"value": 7.5, "unit": "s"})
    assert first is not None and kept({"value": 7.5, "unit": "s"}) is first
    first["value"] = 7  # changed in place, now a different value
    later = kept({"value": 7.5, "unit": "s"})
    assert later is not first and later == {"value": 7.5, "unit": "s"}
    first["value"] = 7.5
    first.pop("unit")
    first["unit"] = "s"  # equal again, same key order
    assert kept({"value": 7.5, "unit": "s"}) is later
    as_int = kept({"value": 3, "n": 1})
    as_int_then_float = dict(as_int or {})
    assert as_int is not None
    as_int["value"] = 3.0  # equal to 3 for Python, but written as 3.0
    fresh = kept({"value": 3, "n": 1})
    assert fresh is not as_int and fresh == as_int_then_float
    assert '"value":3,' in CaseResult(eval_id="x", status="passed", metrics={"m": MetricResult(
        status="informational", details=fresh)}).model_dump_json()
