"""Random forgeries of a part file, for the tests that check a fast reading path against the whole one."""

from __future__ import annotations

from hypothesis import strategies as st


def forged(part: bytes, data: st.DataObject) -> bytes:
    """``part`` with one random change: a byte changed, bytes inserted (line breaks, brackets, quotes, half a UTF-8
    sequence) or cut, or a line duplicated, dropped or swapped with another."""
    lines = part.split(b"\n")
    kind = data.draw(st.sampled_from(["byte", "insert", "cut", "dup", "drop", "swap"]))
    at = data.draw(st.integers(0, len(part) - 1))
    if kind == "byte":
        return part[:at] + bytes([data.draw(st.integers(0, 255))]) + part[at + 1:]
    if kind == "insert":
        return part[:at] + data.draw(st.sampled_from([b"\n", b",", b"]}", b'"', b"\\", b"{", b" ", b"\xc3"])) + part[at:]
    if kind == "cut":
        return part[:at] + part[at + data.draw(st.integers(1, 200)):]
    i, j = (data.draw(st.integers(0, len(lines) - 1)) for _ in range(2))
    if kind == "dup":
        lines.insert(i, lines[j])
    elif kind == "drop":
        del lines[i]
    else:
        lines[i], lines[j] = lines[j], lines[i]
    return b"\n".join(lines)
