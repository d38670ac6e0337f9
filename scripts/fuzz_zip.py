"""Mutation fuzzer for evalbot.forge.archive.unzip_in_memory (the second stage's reader of a fork's artifact zip).

    PYTHONPATH=. python scripts/fuzz_zip.py [--runs 1000000] [--seed 1] [--save tests/data/zip_crashes]

Starts from valid archives (stored, deflated, bzip2 and LZMA members, several members, a zip64 extra, an archive
comment) and mutates them: random byte flips, overwritten 1/2/4-byte header fields at the offsets zipfile reads,
truncation, splices of two seeds, duplicated and removed ranges.  The contract under test: every input either
unpacks or raises ValueError (which the caller reports as "artifact unusable", exit 2).  Any other exception is a
crash; the first input of each distinct crash site is written to ``--save`` (named by its SHA-256) so the test suite
replays it (tests/forge/test_archive.py).  Prints the number of inputs run, the crashes and their sites.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import random
import struct
import sys
import time
import traceback
import warnings
import zipfile
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from evalbot.forge.archive import unzip_in_memory

CAP = 1 << 20
SIGNATURES = (b"PK\x03\x04", b"PK\x01\x02", b"PK\x05\x06", b"PK\x06\x06", b"PK\x06\x07", b"PK\x07\x08")
INTERESTING = (0, 1, 0x7F, 0x80, 0xFF, 0x100, 0x7FFF, 0x8000, 0xFFFF, 0x10000, 0x7FFFFFFF, 0xFFFFFFFF, 14, 20,
               45, 63, 99, 8, 12, 9, 93, 95, 98)


def seeds() -> list[bytes]:
    """Valid archives covering each compression method and the structures zipfile parses."""
    report = b'{"schema_version": 1, "eval_sets": [{"path": "a.test.json", "cases": []}]}' * 3
    out = []
    for method in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED, zipfile.ZIP_BZIP2, zipfile.ZIP_LZMA):
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w", compression=method) as archive:
            archive.writestr("report.json", report)
            archive.writestr("junit.xml", b"<testsuites/>")
        out.append(buf.getvalue())
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.comment = b"evalbot"
        archive.writestr("dir/", b"")
        with archive.open("report.json", "w", force_zip64=True) as member:
            member.write(report)
        info = zipfile.ZipInfo("extra.bin")
        info.extra = struct.pack("<HH4s", 0x5455, 4, b"\x01\x02\x03\x04")
        archive.writestr(info, b"x" * 40)
    out.append(buf.getvalue())
    return out


def offsets_of_fields(data: bytes) -> list[int]:
    """Offsets of every header field after each zip signature (where a mutation breaks parsing, not just data)."""
    found = []
    for sig in SIGNATURES:
        start = data.find(sig)
        while start != -1:
            found.extend(range(start + 4, min(start + 46, len(data))))
            start = data.find(sig, start + 1)
    return found or [0]


def mutate(rng: random.Random, data: bytes, pool: list[bytes]) -> bytes:
    buf = bytearray(data)
    for _ in range(rng.choice((1, 1, 1, 2, 3, 5))):
        if not buf:
            buf = bytearray(rng.choice(pool))
        choice = rng.random()
        if choice < 0.35:  # a header field set to an interesting value
            at = rng.choice(offsets_of_fields(bytes(buf)))
            width, fmt = rng.choice(((1, "<B"), (2, "<H"), (4, "<I")))
            value = rng.choice(INTERESTING) & ((1 << (8 * width)) - 1)
            if at + width <= len(buf):
                struct.pack_into(fmt, buf, at, value)
        elif choice < 0.6:  # random bytes flipped
            for _ in range(rng.randint(1, 4)):
                at = rng.randrange(len(buf))
                buf[at] ^= 1 << rng.randrange(8)
        elif choice < 0.7:  # a random byte anywhere
            buf[rng.randrange(len(buf))] = rng.randrange(256)
        elif choice < 0.78:  # truncated
            del buf[rng.randrange(len(buf)) :]
        elif choice < 0.86:  # a range removed
            a = rng.randrange(len(buf))
            del buf[a : a + rng.randint(1, 64)]
        elif choice < 0.93:  # a range duplicated
            a = rng.randrange(len(buf))
            piece = buf[a : a + rng.randint(1, 64)]
            buf[a:a] = piece
        else:  # spliced with another seed
            other = rng.choice(pool)
            cut = rng.randrange(len(buf))
            buf = buf[:cut] + other[rng.randrange(len(other)) :]
    return bytes(buf)


def site(exc: BaseException) -> str:
    frame = traceback.extract_tb(exc.__traceback__)[-1]
    return f"{type(exc).__name__} at {Path(frame.filename).name}:{frame.lineno}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1_000_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--save", type=Path, default=None, help="directory for the first input of each crash site")
    args = parser.parse_args()
    warnings.simplefilter("ignore")  # zipfile warns about duplicate names; not what is measured
    rng = random.Random(args.seed)
    pool = seeds()
    for s in pool:
        unzip_in_memory(s, CAP)  # the seeds themselves are valid
    corpus = list(pool)
    crashes: Counter[str] = Counter()
    outcomes: Counter[str] = Counter()
    saved: dict[str, bytes] = {}
    started = time.monotonic()
    for i in range(args.runs):
        data = mutate(rng, rng.choice(corpus), pool)
        try:
            unzip_in_memory(data, CAP)
            outcomes["unpacked"] += 1
            if len(corpus) < 2000 and rng.random() < 0.05:
                corpus.append(data)  # a mutant that still parses is a good parent
        except ValueError:
            outcomes["ValueError"] += 1
        except Exception as exc:  # the contract is broken: not ValueError
            where = site(exc)
            crashes[where] += 1
            saved.setdefault(where, data)
        if (i + 1) % 100_000 == 0:
            print(f"{i + 1} inputs, {sum(crashes.values())} crashes, {time.monotonic() - started:.0f} s", flush=True)
    print(f"runs: {args.runs}  outcomes: {dict(outcomes)}  crashes: {sum(crashes.values())}  "
          f"seconds: {time.monotonic() - started:.0f}")
    for where, count in crashes.most_common():
        print(f"  {count:7d}  {where}")
    if args.save and saved:
        args.save.mkdir(parents=True, exist_ok=True)
        for data in saved.values():
            (args.save / f"{hashlib.sha256(data).hexdigest()[:16]}.zip").write_bytes(data)
        print(f"saved {len(saved)} input(s) under {args.save}")
    return 1 if crashes else 0


if __name__ == "__main__":
    raise SystemExit(main())
