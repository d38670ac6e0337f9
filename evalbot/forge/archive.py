"""Size-capped, in-memory reading of downloaded artifact archives (untrusted data, never extracted to disk)."""

from __future__ import annotations

import io
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
    if isinstance(exc, NotImplementedError):
        return f"{exc} (only stored and deflated members are read)"
    if isinstance(exc, EOFError):
        return "its data is truncated"
    if isinstance(exc, zlib.error):
        return f"its compressed data is corrupt ({exc})"
    if isinstance(exc, zipfile.BadZipFile):
        return str(exc)
    return f"{type(exc).__name__}: {exc}"


def unzip_in_memory(data: bytes, max_bytes: int) -> dict[str, bytes]:
    """Files of a zip archive by member name; ValueError for odd paths, bombs or a non-zip."""
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except zipfile.BadZipFile as exc:
        raise ValueError("artifact is not a zip archive") from exc
    files: dict[str, bytes] = {}
    total = 0
    for info in archive.infolist():
        if info.is_dir():
            continue
        name = info.filename
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
        except (RuntimeError, NotImplementedError, zipfile.BadZipFile, zlib.error, EOFError, OSError) as exc:
            raise ValueError(f"artifact member {name!r} cannot be read: {_why(exc)}") from None
        if len(content) > info.file_size:
            raise ValueError(f"artifact member {name!r} is larger than its header says")
        files[name] = content
    return files
