"""Malformed zip archives, built byte by byte from a valid one: each kind breaks reading a member differently."""

from __future__ import annotations

import io
import struct
import zipfile
import zlib

REPORT = b'{"schema_version": 1, "eval_sets": []}' * 20


def _one_member(data: bytes, method: int = zipfile.ZIP_STORED) -> bytearray:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=method) as archive:
        archive.writestr("report.json", data)
    return bytearray(buf.getvalue())


def _patch(raw: bytearray, *, flags: int | None = None, method: int | None = None, crc: int | None = None,
           size: int | None = None, stored_size: int | None = None) -> bytes:
    """Set fields of the (only) member in both its local header and its central directory entry."""
    local, central = raw.index(b"PK\x03\x04"), raw.index(b"PK\x01\x02")
    values = (flags, method, crc, stored_size, size)
    for base, offsets in ((local, (6, 8, 14, 18, 22)), (central, (8, 10, 16, 20, 24))):
        for value, offset, fmt in zip(values, offsets, ("<H", "<H", "<I", "<I", "<I"), strict=True):
            if value is not None:
                struct.pack_into(fmt, raw, base + offset, value)
    return bytes(raw)


def _raw_deflate(data: bytes) -> bytes:
    squeeze = zlib.compressobj(9, zlib.DEFLATED, -15)
    return squeeze.compress(data) + squeeze.flush()


def _as_deflated(stream: bytes, data: bytes) -> bytes:
    """A member whose bytes are ``stream``, declared as deflated ``data`` (its size and CRC)."""
    return _patch(_one_member(stream), method=zipfile.ZIP_DEFLATED, crc=zlib.crc32(data), size=len(data))


def _lzma_corrupt() -> bytes:
    """An LZMA member whose compressed stream (after zipfile's 4-byte version/size prefix and the properties) is
    garbage: LZMAError while reading (issue 24's "LZMA member with corrupt data")."""
    raw = _one_member(REPORT, zipfile.ZIP_LZMA)
    local = raw.index(b"PK\x03\x04")
    start = local + 30 + struct.unpack_from("<H", raw, local + 26)[0] + struct.unpack_from("<H", raw, local + 28)[0]
    raw[start + 9 : start + 40] = b"\xff" * 31
    return bytes(raw)


def _central_field(raw: bytearray, offset: int, fmt: str, value: int) -> bytes:
    struct.pack_into(fmt, raw, raw.index(b"PK\x01\x02") + offset, value)
    return bytes(raw)


def _empty_name() -> bytes:
    """The central directory names the member with 0 bytes (its name length set to 0): zipfile's is_dir() raises
    IndexError on the empty name (issue 24's "central directory that raises IndexError")."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as archive:
        archive.writestr("r", REPORT)
    raw = bytearray(buf.getvalue())
    central = raw.index(b"PK\x01\x02")
    struct.pack_into("<H", raw, central + 28, 0)  # name length 0: the name's one byte becomes the "extra" field...
    struct.pack_into("<H", raw, central + 30, 1)  # ...of length 1, so the directory still parses
    return bytes(raw)


MALFORMED: dict[str, bytes] = {
    "encrypted flag": _patch(_one_member(REPORT), flags=0x1),
    "compression method 9 (deflate64)": _patch(_one_member(REPORT), method=9),
    "compression method 99 (AES)": _patch(_one_member(REPORT), method=99),
    "bad CRC": _patch(_one_member(REPORT), crc=zlib.crc32(REPORT) ^ 0xFFFF),
    "corrupt deflate": _as_deflated(b"\xff" * 64, REPORT),
    "truncated deflate stream": _as_deflated(_raw_deflate(REPORT)[:20], REPORT),
    # the member claims more stored bytes than the archive holds: reading runs out of data
    "truncated data": _patch(_one_member(REPORT), stored_size=10 * len(REPORT), size=10 * len(REPORT)),
    "corrupt LZMA data": _lzma_corrupt(),
}
"""Kind → archive bytes (every one has a readable central directory: the damage is in the member)."""

BROKEN_DIRECTORY: dict[str, bytes] = {
    "zip version 9.9": _central_field(_one_member(REPORT), 6, "<H", 99),  # "version needed to extract" 99
    "empty member name (IndexError)": _empty_name(),
}
"""Kind → archive bytes whose central directory zipfile opens or lists with an exception other than BadZipFile."""
