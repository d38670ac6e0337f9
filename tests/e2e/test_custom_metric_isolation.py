"""Issue 37 row 10: a custom metric cannot read the gate's secrets, write the runner's command files, or leave a
process behind.

Through entrypoint.py with real subprocesses: the metric module (repository code, run in the first stage of a
same-repo pull request) reads every ``/proc/PID/environ`` it can, looks at its own environment, and starts processes
in new sessions (``setsid sleep 300``, and one abandoned by its shell). It reads its ancestors' environments (other
processes on the machine are not the run's). Before, it read the gate's
``INPUT_GITHUB-TOKEN``, ``INPUT_JUDGE-API-KEY`` and ``INPUT_JUDGE-CACHE-KEY`` from ``/proc/$PPID/environ``, had
``GITHUB_OUTPUT`` / ``GITHUB_ENV`` / ``GITHUB_STEP_SUMMARY`` in its environment, and its ``setsid`` children
outlived the run.
"""

from __future__ import annotations

import json
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.conftest import CONFIG, Action, make_baseline, pull_request_event
from tests.fakes.fake_github import APP_TOKEN

# The metric reads its ancestors' /proc/PID/environ: the gate's must be the run's own, as only a fresh process has it.
pytestmark = pytest.mark.fresh_process
linux_only = pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="needs /proc (Linux)")
CACHE_KEY = "workflow-cache-key-0123456789"

SPY = """
import json, os, pathlib, subprocess, tempfile

OUT = pathlib.Path(__file__).with_name("seen.json")
SECRETS = {secrets!r}


def ancestors():
    pid = os.getppid()
    while pid > 1:
        yield pid
        stat = open(f"/proc/{{pid}}/stat", "rb").read()
        pid = int(stat[stat.rfind(b")") + 2:].split()[1])


def look():
    leaked, denied = [], 0
    for name in ancestors():  # the supervisor (if any), the gate, the test runner...
        try:
            text = open(f"/proc/{{name}}/environ", "rb").read().decode("utf-8", "replace")
        except OSError:
            denied += 1
            continue
        leaked += [s for s in SECRETS if s in text]
        leaked += [v.split("=")[0] for v in text.split("\\0") if v.startswith("INPUT_")]
    mine = sorted(k for k in os.environ if k.startswith(("INPUT_", "GITHUB_OUTPUT", "GITHUB_ENV", "GITHUB_PATH",
                                                         "GITHUB_STATE", "GITHUB_STEP_SUMMARY", "GITHUB_TOKEN")))
    return sorted(set(leaked)), mine, denied


def tools_used(instance):
    leaked, mine, denied = look()
    pids = []
    if not OUT.exists():
        pids.append(subprocess.Popen(["setsid", "sleep", "300"]).pid)
        abandoned = pathlib.Path(tempfile.mkdtemp()) / "abandoned.pid"  # scratch files: not in the repository
        subprocess.run(["sh", "-c", f"setsid sleep 301 >/dev/null 2>&1 & echo $! > {{abandoned}}"], check=True)
        pids.append(int(abandoned.read_text()))
        OUT.write_text(json.dumps({{"leaked": leaked, "env": mine, "pids": pids, "worker": os.getpid()}}))
    return {{"tools_used": 1.0}}
"""


def spy_metric(action: Action, source: str) -> Path:
    """The metric ``repo_metrics.checks.tools_used`` with ``source`` as its module; returns its folder."""
    folder = action.workspace / "repo_metrics"
    folder.mkdir()
    (folder / "__init__.py").write_text("", encoding="utf-8")
    (folder / "checks.py").write_text(source, encoding="utf-8")
    config_path = action.workspace / CONFIG
    config = json.loads(config_path.read_text(encoding="utf-8"))
    config["criteria"]["tools_used"] = 0.5
    config["custom_metrics"] = {"tools_used": {"code_config": {"name": "repo_metrics.checks.tools_used"}}}
    config_path.write_text(json.dumps(config), encoding="utf-8")
    return folder


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            text = stat.read()
    except OSError:
        return False
    return text[text.rfind(b")") + 2:].split()[0] != b"Z"


@pytest.fixture
def started() -> Iterator[list[int]]:
    """The pids the metric started (stopped here if the test fails with them alive)."""
    pids: list[int] = []
    yield pids
    for pid in pids:
        if _alive(pid):
            os.kill(pid, signal.SIGKILL)


@linux_only
def test_a_metric_reads_no_secret_and_leaves_no_process(action: Action, baseline_text: str, started: list[int]) -> None:
    folder = spy_metric(action, SPY.format(secrets=[APP_TOKEN, "fake-gemini-key", CACHE_KEY]))
    make_baseline(action, baseline_text)
    inputs = {"actuals": "actuals/good.json", "judge-cache": "cache/judge", "judge-cache-key": CACHE_KEY}
    run = action.run("pull_request", pull_request_event(), inputs=inputs)
    seen = json.loads((folder / "seen.json").read_text(encoding="utf-8"))
    started += seen["pids"]
    assert run.code == 0, run.stdout + run.stderr  # the metric was scored: its process ran
    assert seen["leaked"] == [], f"the metric read the gate's environment: {seen['leaked']}"
    assert seen["env"] == [], f"the metric's environment holds {seen['env']}"
    deadline = time.monotonic() + 10
    while any(_alive(pid) for pid in seen["pids"]) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert [pid for pid in seen["pids"] if _alive(pid)] == [], "a process the metric started outlived the run"
    assert not _alive(seen["worker"])


@linux_only
def test_the_processes_end_with_the_worker_not_with_the_gate(tmp_path: Path, started: list[int]) -> None:
    """The same metric through the worker directly: closing the worker (the gate still running) ends the
    ``setsid`` children too."""
    from evalbot.criteria.custom import Definition, start_worker

    (tmp_path / ".git").mkdir()
    (tmp_path / "repo_metrics").mkdir()
    (tmp_path / "repo_metrics" / "__init__.py").write_text("", encoding="utf-8")
    (tmp_path / "repo_metrics" / "checks.py").write_text(SPY.format(secrets=[]), encoding="utf-8")
    worker, _ = start_worker(Definition("repo_metrics.checks.tools_used"), [tmp_path])
    try:
        worker.send_items([{"what": "call", "arg": {}}], 30, "call")
        assert worker.receive(30, "call") == {"value": {"tools_used": 1.0}}
        seen = json.loads((tmp_path / "repo_metrics" / "seen.json").read_text(encoding="utf-8"))
        started += seen["pids"]
        assert all(_alive(pid) for pid in seen["pids"])  # running while the worker runs
    finally:
        worker.close()
    deadline = time.monotonic() + 10
    while any(_alive(pid) for pid in seen["pids"]) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert [pid for pid in seen["pids"] if _alive(pid)] == []


def test_the_worker_environment_has_no_command_file_nor_secret() -> None:
    from evalbot.criteria.custom_process import worker_environment

    env = {"PATH": "/usr/bin", "HOME": "/home/x", "GITHUB_WORKSPACE": "/w", "GITHUB_OUTPUT": "/o", "GITHUB_ENV": "/e",
           "GITHUB_PATH": "/p", "GITHUB_STATE": "/s", "GITHUB_STEP_SUMMARY": "/m", "GITHUB_TOKEN": "t",
           "INPUT_GITHUB-TOKEN": "t", "INPUT_JUDGE-API-KEY": "k", "GOOGLE_API_KEY": "k", "OPENAI_API_KEY": "k",
           "ACTIONS_RUNTIME_TOKEN": "r", "EVALBOT_JUDGE_CACHE_KEY": "c"}
    assert worker_environment(env) == {"PATH": "/usr/bin", "HOME": "/home/x", "GITHUB_WORKSPACE": "/w"}


PARRICIDE = """
import os, pathlib, signal, subprocess, time

def tools_used(instance):
    out = pathlib.Path(__file__).with_name("pids")
    child = subprocess.Popen(["setsid", "sleep", "300"])
    out.write_text(f"{child.pid} {os.getpid()}")
    time.sleep(0.2)
    os.kill(os.getppid(), signal.SIGKILL)  # the supervisor: its subreaper and kill-on-exit go with it
    time.sleep(30)
    return 1.0
"""


@linux_only
def test_a_metric_that_kills_its_supervisor_still_leaves_no_process(tmp_path: Path, started: list[int]) -> None:
    """The metric starts ``setsid sleep 300`` and kills the process above it: the worker dies with it, its child is
    re-parented to the gate (a subreaper too) and the gate ends it, marked as the worker's by the privileges it
    cannot regain (no_new_privs, an empty capability bounding set)."""
    from evalbot.criteria.custom import Definition, start_worker
    from evalbot.criteria.custom_process import WorkerGone

    (tmp_path / ".git").mkdir()
    (tmp_path / "repo_metrics").mkdir()
    (tmp_path / "repo_metrics" / "__init__.py").write_text("", encoding="utf-8")
    (tmp_path / "repo_metrics" / "checks.py").write_text(PARRICIDE, encoding="utf-8")
    worker, _ = start_worker(Definition("repo_metrics.checks.tools_used"), [tmp_path])
    try:
        worker.send_items([{"what": "call", "arg": {}}], 20, "call")
        with pytest.raises(WorkerGone):
            worker.receive(20, "call")
    finally:
        worker.close()
    pids = [int(p) for p in (tmp_path / "repo_metrics" / "pids").read_text().split()]
    started += pids
    deadline = time.monotonic() + 10
    while any(_alive(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert [pid for pid in pids if _alive(pid)] == [], "a process the metric started outlived it"
