"""Size-capped, in-memory reading of downloaded artifact archives (untrusted data, never extracted to disk)."""

from __future__ import annotations

import io
import lzma
import zipfile
import zlib
from collections.abc import Iterable


def join_capped(chunks: Iterable[bytes], max_bytes: int) -> bytes:
    """Concatenate ``chunks``; ValueError as soon as the total passes ``max_bytes``."""
    buf = bytearray()
    for chunk in chunks:
        buf.extend(chunk)
        if len(buf) > max_bytes:
            raise ValueError(f"download exceeds {max_bytes} bytes")
    return bytes(buf)


def _why(exc: BaseException) -> str:
    if isinstance(exc, RuntimeError) and "encrypted" in str(exc):
        return "it is encrypted"
    if isinstance(exc, NotImplementedError) and "compression" in str(exc):
        return f"{exc} (only stored, deflated, bzip2 and LZMA members are read)"
    if isinstance(exc, EOFError):
        return "its data is truncated"
    if isinstance(exc, (zlib.error, lzma.LZMAError)):
        return f"its compressed data is corrupt ({exc})"
    if isinstance(exc, zipfile.BadZipFile):
        return str(exc)
    return f"{type(exc).__name__}: {exc}"


def unzip_in_memory(data: bytes, max_bytes: int) -> dict[str, bytes]:
    """Files of a zip archive by member name; ValueError for odd paths, bombs, a non-zip or any defect.

    The archive is untrusted data and zipfile reports its defects with many exception types (BadZipFile, but also
    NotImplementedError for "zip file version 9.9", LZMAError for a corrupt LZMA member, struct.error, IndexError,
    UnicodeDecodeError, OverflowError...): every exception raised while zipfile parses it is a ValueError here, so
    the caller reports "artifact unusable" (exit 2), never an evalbot bug.  scripts/fuzz_zip.py checks this.
    """
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except zipfile.BadZipFile as exc:
        raise ValueError("artifact is not a zip archive") from exc
    except Exception as exc:  # any other defect of the central directory (see the docstring)
        raise ValueError(f"artifact's zip directory is unusable: {_why(exc)}") from None
    files: dict[str, bytes] = {}
    total = 0
    for info in archive.infolist():
        name = info.filename
        if not name:
            raise ValueError("artifact has a member with an empty name")
        if name.endswith("/"):
            continue  # a directory entry (zipfile's own is_dir() fails on an empty name)
        if name.startswith(("/", "\\")) or ".." in name.replace("\\", "/").split("/"):
            raise ValueError(f"artifact member {name!r} has an unsafe path")
        total += info.file_size
        if total > max_bytes:
            raise ValueError(f"artifact unpacks to more than {max_bytes} bytes")
        # Read at most the declared size + 1 so a lying header cannot inflate past the cap. Reading to the end
        # checks the CRC; each malformed kind (encrypted, an unsupported compression method such as deflate64 or
        # AES, a bad CRC, a corrupt or truncated deflate stream) raises its own exception type.
        try:
            with archive.open(info) as member:
                content = member.read(info.file_size + 1)
        except Exception as exc:  # each defect of a member has its own type (see the docstring)
            raise ValueError(f"artifact member {name!r} cannot be read: {_why(exc)}") from None
        if len(content) > info.file_size:
            raise ValueError(f"artifact member {name!r} is larger than its header says")
        files[name] = content
    return files
