"""Shared builders for engine tests: ADK-shaped JSON for invocations, cases and eval sets, and a file writer."""

from __future__ import annotations

import gc
import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from evalbot.formats.jsonio import thaw
from tests.fakes.builders import Writer


def pytest_configure(config: pytest.Config) -> None:
    """Where ``PYTHONDONTWRITEBYTECODE`` is set (some CI images set it), write bytecode under ``.pytest_cache/pycache``
    instead (``PYTHONPYCACHEPREFIX``, inherited by the workers and by the commands the tests start): without it each
    of the suite's hundreds of ``python -m evalbot`` processes compiled evalbot from source again (0.18 s of CPU each)
    and each worker rewrote every test module's asserts again. Nothing is written beside the sources."""
    if os.environ.get("PYTHONDONTWRITEBYTECODE") and not os.environ.get("PYTHONPYCACHEPREFIX"):
        prefix = config.rootpath / ".pytest_cache" / "pycache"
        prefix.mkdir(parents=True, exist_ok=True)
        del os.environ["PYTHONDONTWRITEBYTECODE"]
        os.environ["PYTHONPYCACHEPREFIX"] = str(prefix)
        sys.dont_write_bytecode = False
        sys.pycache_prefix = str(prefix)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int | None:
    """How many workers ``-n auto`` (pyproject's addopts) starts: one per core (xdist's default, None here) for a run
    over a directory, the whole suite included; none, so the tests run in this process, when the command line names
    only test files or tests (``pytest tests/test_load.py``), where starting workers costs more than it saves.
    ``PYTEST_XDIST_AUTO_NUM_WORKERS`` or an explicit ``-n N`` decide instead."""
    if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS"):
        return None
    paths = [Path(config.invocation_params.dir, arg.split("::")[0]) for arg in config.args]
    return None if any(path.is_dir() for path in paths) else 0


def pytest_runtest_teardown(item: pytest.Item) -> None:
    """After each test, unfreeze what an in-process ``evalbot merge`` (``shard.merge.loading_parts``) or ``entry()``
    froze out of the cyclic collector: the command's own process keeps it frozen until it exits; this process goes
    on, and every later full collection would skip it (and ``jsonio.gc_paused`` would leave it frozen)."""
    if gc.get_freeze_count():
        thaw()


@pytest.fixture
def write(tmp_path: Path) -> Writer:
    """Write JSON (or raw ``str``/``bytes`` content) to ``tmp_path/name`` and return the path."""

    def _write(name: str, content: Any) -> Path:
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        elif isinstance(content, str):
            path.write_text(content, encoding="utf-8")
        else:
            path.write_text(json.dumps(content, ensure_ascii=False), encoding="utf-8")
        return path

    return _write
