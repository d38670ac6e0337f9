"""A readable diff of expected vs actual tool calls: which call is missing, extra, or called with other arguments.

Calls are aligned with difflib on (name, arguments); inside a changed stretch, calls with the same name are paired so
a changed argument shows as one call with an argument diff rather than a removal plus an addition.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from evalbot.results import ToolCallView

RowKind = Literal["same", "changed", "missing", "extra"]


@dataclass(frozen=True)
class ArgChange:
    """One argument that differs: its value on each side as compact JSON (None when absent)."""

    key: str
    expected: str | None
    actual: str | None


@dataclass(frozen=True)
class DiffRow:
    """One line of the diff; positions are 1-based indexes in the expected and actual call lists."""

    kind: RowKind
    expected: ToolCallView | None = None
    actual: ToolCallView | None = None
    expected_pos: int | None = None
    actual_pos: int | None = None
    changes: tuple[ArgChange, ...] = ()


_VALUE = json.JSONEncoder(ensure_ascii=False, sort_keys=True, separators=(", ", ": "), default=str)
_KEY = json.JSONEncoder(sort_keys=True, default=str)
"""Built once: ``json.dumps`` with options builds an encoder per call, a third of the time of a short value."""


def value_text(value: Any, limit: int = 120) -> str:
    """Compact JSON of an argument value (non-ASCII kept), cut to ``limit`` characters."""
    text = _VALUE.encode(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def call_text(call: ToolCallView, limit: int = 120) -> str:
    """``name(key=value, ...)`` with arguments in their recorded order."""
    args = call.args
    if isinstance(args, dict):
        inner = ", ".join(f"{k}={value_text(v, limit)}" for k, v in args.items())
    elif args is None:
        inner = ""
    else:
        inner = value_text(args, limit)
    return f"{call.name or '?'}({inner})"


def _key(call: ToolCallView) -> str:
    return _KEY.encode([call.name, call.args])


def arg_changes(expected: ToolCallView, actual: ToolCallView, limit: int = 120) -> tuple[ArgChange, ...]:
    """Top-level arguments that differ (missing, extra or other value); non-object args compare as a whole."""
    e, a = expected.args, actual.args
    if not isinstance(e, dict) or not isinstance(a, dict):
        if e == a:
            return ()
        return (ArgChange("(args)", value_text(e, limit), value_text(a, limit)),)
    out = []
    for key in dict.fromkeys([*e, *a]):
        if key not in a:
            out.append(ArgChange(key, value_text(e[key], limit), None))
        elif key not in e:
            out.append(ArgChange(key, None, value_text(a[key], limit)))
        elif e[key] != a[key]:
            out.append(ArgChange(key, value_text(e[key], limit), value_text(a[key], limit)))
    return tuple(out)


def _pair_block(exp: Sequence[tuple[int, ToolCallView]], act: Sequence[tuple[int, ToolCallView]]) -> list[DiffRow]:
    """Pair same-name calls in order (monotonically); the rest are missing or extra, kept in position order."""
    partner: dict[int, int] = {}
    start = 0
    for i, (_, e) in enumerate(exp):
        match = next((j for j in range(start, len(act)) if act[j][1].name == e.name), None)
        if match is not None:
            partner[i] = match
            start = match + 1
    rows: list[DiffRow] = []
    j = 0
    for i, (ei, e) in enumerate(exp):
        if i not in partner:
            rows.append(DiffRow("missing", expected=e, expected_pos=ei))
            continue
        p = partner[i]
        rows += [DiffRow("extra", actual=a, actual_pos=ai) for ai, a in act[j:p]]
        ai, a = act[p]
        rows.append(DiffRow("changed", e, a, ei, ai, arg_changes(e, a)))
        j = p + 1
    rows += [DiffRow("extra", actual=a, actual_pos=ai) for ai, a in act[j:]]
    return rows


def diff_calls(expected: Sequence[ToolCallView], actual: Sequence[ToolCallView]) -> list[DiffRow]:
    """Align the two call lists into same / changed / missing / extra rows, in order."""
    keys_e, keys_a = [_key(c) for c in expected], [_key(c) for c in actual]
    if keys_e == keys_a:  # the common case, without the matcher
        return [DiffRow("same", e, a, i, i) for i, (e, a) in enumerate(zip(expected, actual, strict=True), 1)]
    matcher = difflib.SequenceMatcher(a=keys_e, b=keys_a, autojunk=False)
    rows: list[DiffRow] = []
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op == "equal":
            rows += [
                DiffRow("same", expected[i], actual[j], i + 1, j + 1)
                for i, j in zip(range(i1, i2), range(j1, j2), strict=True)
            ]
        else:
            exp = [(i + 1, expected[i]) for i in range(i1, i2)]
            act = [(j + 1, actual[j]) for j in range(j1, j2)]
            rows += _pair_block(exp, act)
    return rows


def diff_text(rows: Sequence[DiffRow], *, max_rows: int = 50, value_limit: int = 120) -> str:
    """The diff as ``diff``-highlighted lines: ``-`` expected only, ``+`` actual only, two spaces when equal."""
    lines: list[str] = []
    for row in rows[:max_rows]:
        if row.kind == "same" and row.expected is not None:
            lines.append(f"  {row.expected_pos}. {call_text(row.expected, value_limit)}")
        elif row.kind == "missing" and row.expected is not None:
            lines.append(f"- {row.expected_pos}. {call_text(row.expected, value_limit)}    (missing)")
        elif row.kind == "extra" and row.actual is not None:
            lines.append(f"+ {row.actual_pos}. {call_text(row.actual, value_limit)}    (unexpected)")
        elif row.expected is not None and row.actual is not None:
            lines.append(f"- {row.expected_pos}. {call_text(row.expected, value_limit)}")
            lines.append(f"+ {row.actual_pos}. {call_text(row.actual, value_limit)}")
            for change in row.changes:
                lines.append(
                    f"    ↳ {change.key}: {change.expected or '(absent)'} → {change.actual or '(absent)'}"
                )
    if len(rows) > max_rows:
        lines.append(f"  … and {len(rows) - max_rows} more call(s)")
    if not rows:
        lines.append("  (no tool calls expected or made)")
    return "\n".join(lines)


def differs(rows: Sequence[DiffRow]) -> bool:
    """Whether any call differs."""
    return any(row.kind != "same" for row in rows)
