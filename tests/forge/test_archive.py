"""Size caps and path checks for untrusted artifact archives."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import pytest

from evalbot.forge.archive import join_capped, unzip_in_memory
from tests.forge.malformed_zips import BROKEN_DIRECTORY, MALFORMED

FUZZ_CRASHES = Path(__file__).resolve().parent.parent / "data" / "zip_crashes"


def make_zip(files: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, data in files.items():
            archive.writestr(name, data)
    return buf.getvalue()


def test_join_capped_stops_past_the_limit() -> None:
    """Chunks are joined until the cap, then ValueError."""
    assert join_capped([b"ab", b"cd"], 4) == b"abcd"
    with pytest.raises(ValueError, match="exceeds 3"):
        join_capped([b"ab", b"cd"], 3)


def test_members_come_back_by_name_directories_skipped() -> None:
    """Nested members keep their names; directory entries are not files."""
    data = make_zip({"a/report.json": b"{}", "b.txt": b"x"})
    assert unzip_in_memory(data, 100) == {"a/report.json": b"{}", "b.txt": b"x"}


@pytest.mark.parametrize("name", ["../x", "a/../../x", "/etc/passwd", "..\\x"])
def test_unsafe_names_are_refused(name: str) -> None:
    """Absolute and parent-directory member names are rejected."""
    with pytest.raises(ValueError, match="unsafe path"):
        unzip_in_memory(make_zip({name: b"x"}), 100)


def test_zip_bomb_is_refused_by_declared_size() -> None:
    """A small archive that inflates past the cap is refused."""
    with pytest.raises(ValueError, match="more than 1000"):
        unzip_in_memory(make_zip({"big": b"0" * 100_000}), 1000)


def test_not_a_zip() -> None:
    """Garbage bytes give a clear error."""
    with pytest.raises(ValueError, match="not a zip"):
        unzip_in_memory(b"hello", 100)


@pytest.mark.parametrize("kind", sorted(MALFORMED))
def test_malformed_members_are_value_errors(kind: str) -> None:
    """Each malformed kind is a ValueError naming the member (it was RuntimeError, NotImplementedError,
    BadZipFile, zlib.error or EOFError: exit 70 in the second stage)."""
    assert zipfile.ZipFile(io.BytesIO(MALFORMED[kind])).namelist() == ["report.json"]  # the archive itself opens
    with pytest.raises(ValueError, match=r"artifact member 'report\.json' cannot be read: "):
        unzip_in_memory(MALFORMED[kind], 1_000_000)


def test_the_malformed_builder_starts_from_a_valid_archive() -> None:
    """Without the damage, the same construction reads back (so each kind fails for its own reason)."""
    from tests.forge.malformed_zips import REPORT, _as_deflated, _raw_deflate

    assert unzip_in_memory(_as_deflated(_raw_deflate(REPORT), REPORT), 1_000_000) == {"report.json": REPORT}


@pytest.mark.parametrize("kind", sorted(BROKEN_DIRECTORY))
def test_a_broken_central_directory_is_a_value_error(kind: str) -> None:
    """zip version 9.9 (NotImplementedError from ZipFile()) and an empty member name (IndexError from is_dir())
    were exit 70 in the second stage; both are ValueError naming the defect."""
    with pytest.raises(ValueError, match=r"zip file version 9\.9|empty name"):
        unzip_in_memory(BROKEN_DIRECTORY[kind], 1_000_000)


def test_fuzzer_crash_inputs_are_value_errors() -> None:
    """Every input scripts/fuzz_zip.py found crashing the old reader (LZMAError, NotImplementedError, IndexError)
    either unpacks or is a ValueError now."""
    crashes = sorted(FUZZ_CRASHES.glob("*.zip"))
    assert len(crashes) >= 4
    for path in crashes:
        with pytest.raises(ValueError):
            unzip_in_memory(path.read_bytes(), 1_000_000)


def test_the_zip_fuzzer_finds_no_crash_in_a_short_run() -> None:
    """scripts/fuzz_zip.py (the 1,000,000-input campaign of issue 24) in miniature: 5,000 mutated archives, every
    one unpacks or is a ValueError."""
    import subprocess
    import sys

    script = Path(__file__).resolve().parents[2] / "scripts" / "fuzz_zip.py"
    done = subprocess.run([sys.executable, str(script), "--runs", "5000", "--seed", "7"], capture_output=True,
                          text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "runs: 5000" in done.stdout and "crashes: 0" in done.stdout
