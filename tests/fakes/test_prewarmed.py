"""The prewarmed server's runs look, from inside and from the test, as a fresh ``python SCRIPT`` does: the same
environment, arguments, ``sys.path[0]``, working directory, ``__name__``, stdin, output and exit codes; one run's
changes never reach the next."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fakes import prewarmed

pytestmark = pytest.mark.skipif(not prewarmed.forkable({}), reason="needs fork and SCM_RIGHTS (POSIX)")

SCRIPT = """
import json, os, sys
import email.utils as preloaded  # imported by the server: a run may change it, the next must not see that
seen = {"argv": sys.argv, "path0": sys.path[0], "cwd": os.getcwd(), "name": __name__, "stdin": sys.stdin.read(),
        "env": dict(os.environ), "mark": getattr(preloaded, "MARK", None), "encoding": sys.stdout.encoding}
preloaded.MARK = "changed by an earlier run"
print(json.dumps(seen), flush=True)
print("to stderr", file=sys.stderr)
what = os.environ.get("DO", "")
if what == "exit":
    sys.exit(3)
if what == "raise":
    raise ValueError("boom")
if what == "kill":
    os.kill(os.getpid(), 9)
"""


@pytest.fixture(scope="module", autouse=True)
def _end_the_servers() -> Iterator[None]:
    yield
    prewarmed.close_all()


@pytest.fixture(scope="module")
def script(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("prewarmed") / "script.py"
    path.write_text(SCRIPT, encoding="utf-8")
    return path


def fresh(script: Path, env: dict[str, str], cwd: Path) -> tuple[int, str, str]:
    done = subprocess.run([sys.executable, str(script)], env=env, cwd=cwd, capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=60)
    return done.returncode, done.stdout, done.stderr


def forked(script: Path, env: dict[str, str], cwd: Path) -> tuple[int, str, str]:
    child = prewarmed.server(sys.executable, str(script), ["email.utils"]).start(env, cwd)
    out, err = child.communicate(60)
    assert child.returncode is not None
    return child.returncode, out, err


@pytest.mark.parametrize("do", ["", "exit", "raise", "kill"])
def test_a_forked_run_is_seen_as_a_fresh_one(script: Path, tmp_path: Path, do: str) -> None:
    env = {"PATH": "/usr/bin:/bin", "DO": do, "SECRET": "s3cret"}  # no HOME: the server has one
    results = [run(script, env, tmp_path) for run in (fresh, forked, forked)]
    (code, out, err), *others = results
    assert code == {"": 0, "exit": 3, "raise": 1, "kill": -9}[do]
    seen = json.loads(out)
    assert seen["argv"] == [str(script)] and seen["path0"] == str(script.parent) and seen["name"] == "__main__"
    assert seen["cwd"] == str(tmp_path) and seen["stdin"] == "" and seen["mark"] is None
    assert {k: v for k, v in seen["env"].items() if k in env} == env
    for other_code, other_out, other_err in others:
        assert (other_code, json.loads(other_out)) == (code, seen)  # the same environment, exactly; no MARK
        assert other_err.splitlines()[0] == err.splitlines()[0] == "to stderr"
        if do == "raise":
            assert other_err.splitlines()[-1] == err.splitlines()[-1] == "ValueError: boom"


def test_a_run_whose_environment_changes_the_interpreters_start_is_not_forked() -> None:
    assert prewarmed.forkable({"PATH": "/bin", "INPUT_X": "1"})
    assert not any(prewarmed.forkable({name: "1"}) for name in ("PYTHONPATH", "LANG", "LC_ALL", "PYTHONHASHSEED"))


def test_a_run_that_outlives_its_timeout_is_killed(tmp_path: Path) -> None:
    hang = tmp_path / "hang.py"
    hang.write_text("import time\nprint('started', flush=True)\ntime.sleep(300)\n", encoding="utf-8")
    server = prewarmed.server(sys.executable, str(hang), [])
    child = server.start({"PATH": "/usr/bin:/bin"}, tmp_path)
    assert child.stdout.readline() == "started\n"
    with pytest.raises(subprocess.TimeoutExpired):
        child.communicate(0.5)
    with pytest.raises(ProcessLookupError):
        os.kill(child.pid, 0)
    again = server.start({"PATH": "/usr/bin:/bin", "X": "1"}, tmp_path)  # the next run gets its own reply
    assert again.stdout.readline() == "started\n"
    os.kill(again.pid, 9)
    assert again.communicate(30) == ("", "") and again.returncode == -9


def test_long_waits_pass_a_hundred_times_faster_and_short_ones_are_kept(tmp_path: Path) -> None:
    """A retry backoff (here 20 s) takes a hundredth of it; a polling tick (0.2 s) keeps its length; the CPU the
    run used is counted."""
    path = tmp_path / "waits.py"
    path.write_text("import json, time\nfor wait in (20.0, 0.2):\n    t = time.monotonic()\n    time.sleep(wait)\n"
                    "    print(json.dumps([wait, time.monotonic() - t]))\n", encoding="utf-8")
    before = prewarmed.CHILD_CPU
    code, out, err = forked(path, {}, tmp_path)
    assert code == 0, err
    waited = dict(json.loads(line) for line in out.splitlines())
    assert 0.2 <= waited[20.0] < 2.0 and waited[0.2] >= 0.2
    assert prewarmed.CHILD_CPU > before
