"""A script run as a new process forked from a prewarmed one: the end-to-end tests' way to start entrypoint.py.

Each action run in tests/e2e is a process of its own: its environment is exactly the runner's variables the test
gives, its working directory the workspace, its stdout and stderr pipes the test reads, its stdin ``/dev/null``, its
exit code the script's (``-N`` when signal N killed it), and the script runs as ``__main__`` with ``sys.argv`` and
``sys.path[0]`` as ``python SCRIPT`` sets them. What it skips is the interpreter's start and the imports of what
every run loads (evalbot, pydantic, PyGithub, google-genai): the process is forked from a server started once per
test process, with the same interpreter, the startup environment of a run (no ``PYTHON*``, ``LANG`` or ``LC_*``),
and those modules imported, then frozen out of the garbage collector (``gc.freeze``, so that a run neither scans nor
copies them). An action run of tests/e2e costs about 0.3 s of CPU so, 1.1 s as a fresh interpreter.

A forked process is not a fresh one in a few ways, and tests that depend on them start a fresh process
(``@pytest.mark.fresh_process``; tests/e2e/conftest.py does so as well when ``PYTHON`` or ``ENTRYPOINT`` is not the
default, e.g. a ``ulimit`` wrapper): ``/proc/PID/environ`` and ``/proc/PID/cmdline`` show the server's start, not
the run's variables; the time to the first log line leaves out the interpreter's start; all runs of a server share
one string hash seed. ``EVALBOT_E2E_FRESH=1`` starts every run as a fresh process.

A forked run's ``time.sleep`` waits a hundredth of any wait of half a second or more: the retry backoffs of an outage
(GitHub's 1 + 2 + 4 + 8 + 16 s before a run fails closed) pass in 0.3 s, shorter waits (polling ticks) are untouched.
What the run does and prints is the same (it logs the full wait it asked for); a fresh process waits in real time.
"""

from __future__ import annotations

import atexit
import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import IO

SERVER = r"""
import json, os, runpy, socket, sys, threading

sock = socket.socket(fileno=int(sys.argv[1]))
script, launch, preload = sys.argv[2], json.loads(sys.argv[3]), json.loads(sys.argv[4])
sys.path[0] = os.path.dirname(os.path.abspath(script))  # what `python SCRIPT` puts first
# What the interpreter's start added to the environment (PEP 538's LC_CTYPE), as it adds it in a fresh run.
started = {k: v for k, v in os.environ.items() if k not in launch}
for name in preload:
    try:
        __import__(name)
    except ModuleNotFoundError:  # a module renamed or an extra not installed: the run imports what it needs itself
        pass
if threading.active_count() != 1:
    sock.send(json.dumps({"error": f"{threading.active_count()} threads after the imports: forking is unsafe"}).encode())
    sys.exit(1)
import gc
sys.stdout.flush()
sys.stderr.flush()
# What the imports made stays out of every run's collections (and its pages shared, not copied); through evalbot's
# freeze_for_good when it is loaded, so that its gc_paused leaves it frozen rather than releasing it into the runs'.
freeze = getattr(sys.modules.get("evalbot.formats.jsonio"), "freeze_for_good", gc.freeze)
freeze()
sock.send(json.dumps({"ready": os.getpid()}).encode())
while True:
    message, fds, _, _ = socket.recv_fds(sock, 1 << 20, 2)
    if not message:
        break
    request = json.loads(message)
    pid = os.fork()
    if pid == 0:
        sock.close()
        os.dup2(fds[0], 1)
        os.dup2(fds[1], 2)
        for fd in fds:  # stdin stays the server's, /dev/null
            os.close(fd)
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update({**started, **request["env"]})
        import time
        _sleep = time.sleep  # waits of half a second or more (retry backoffs) pass 100 times faster, see above
        time.sleep = lambda seconds: _sleep(seconds / 100 if seconds >= 0.5 else seconds)
        sys.argv = [script]
        runpy.run_path(script, run_name="__main__")
        sys.exit(0)  # the script ended without sys.exit: exit 0, as the interpreter does
    for fd in fds:
        os.close(fd)
    sock.send(json.dumps({"pid": pid}).encode())
    _, status, usage = os.wait4(pid, 0)
    sock.send(json.dumps({"code": os.waitstatus_to_exitcode(status), "cpu": usage.ru_utime + usage.ru_stime}).encode())
"""

STARTUP_VARIABLES = ("PYTHON", "LANG", "LC_")
"""Variables that change how the interpreter starts: a run whose environment sets one starts a fresh process."""


def forkable(env: dict[str, str]) -> bool:
    """Whether a run with this environment starts as the server did (else it needs a fresh process)."""
    return os.name == "posix" and hasattr(socket, "send_fds") and not any(k.startswith(STARTUP_VARIABLES) for k in env)


class Child:
    """One forked run, used as the tests use ``subprocess.Popen(..., stdout=PIPE, stderr=PIPE, text=True)``."""

    def __init__(self, server: Server, pid: int, stdout: IO[str], stderr: IO[str]) -> None:
        self.server, self.pid, self.stdout, self.stderr = server, pid, stdout, stderr
        self.returncode: int | None = None

    def communicate(self, timeout: float) -> tuple[str, str]:
        """The rest of stdout and all of stderr once the process has exited; kills it after ``timeout`` seconds."""
        texts: dict[str, str] = {}
        readers = [threading.Thread(target=lambda n=name, f=f: texts.__setitem__(n, f.read()), daemon=True)
                   for name, f in (("out", self.stdout), ("err", self.stderr))]
        for reader in readers:
            reader.start()
        deadline = time.monotonic() + timeout
        for reader in readers:
            reader.join(max(0.0, deadline - time.monotonic()))
        reply = self.server.receive(max(0.1, deadline - time.monotonic()))
        if reply is None or any(reader.is_alive() for reader in readers):
            os.kill(self.pid, signal.SIGKILL)
            self.server.receive(30)  # its exit code, so that the next run's reply is the next run's
            raise subprocess.TimeoutExpired([self.server.script], timeout)
        self.returncode = int(reply["code"])
        global CHILD_CPU
        CHILD_CPU += float(reply.get("cpu", 0.0))  # type: ignore[arg-type]
        self.stdout.close()
        self.stderr.close()
        return texts["out"], texts["err"]


class Server:
    """The prewarmed process of one test process: ``start`` forks a run of ``script`` from it."""

    def __init__(self, python: str, script: str, preload: list[str]) -> None:
        self.script = script
        self.home = home = Path(tempfile.mkdtemp(prefix="evalbot-prewarmed-"))
        launch = {"PATH": "/usr/bin:/bin", "HOME": str(home)}
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.sock = ours
        self.log = home / "server.log"
        with open(self.log, "wb") as log:
            self.process = subprocess.Popen(
                [python, "-c", SERVER, str(theirs.fileno()), script, json.dumps(launch), json.dumps(preload)],
                env=launch, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=log,
                pass_fds=[theirs.fileno()])
        theirs.close()
        ready = self.receive(300)
        if not ready or "ready" not in ready:
            self.close()
            raise RuntimeError(f"the prewarmed server did not start: {ready}; {self.log.read_text(errors='replace')}")

    def receive(self, timeout: float) -> dict[str, object] | None:
        self.sock.settimeout(timeout)
        try:
            message = self.sock.recv(1 << 16)
        except TimeoutError:
            return None
        if not message:
            raise RuntimeError(f"the prewarmed server ended: {self.log.read_text(errors='replace')}")
        reply: dict[str, object] = json.loads(message)
        return reply

    def start(self, env: dict[str, str], cwd: Path) -> Child:
        """Fork a run with exactly ``env`` as its environment and ``cwd`` as its working directory."""
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        try:
            socket.send_fds(self.sock, [json.dumps({"env": env, "cwd": str(cwd)}).encode()], [out_w, err_w])
        finally:
            os.close(out_w)
            os.close(err_w)
        reply = self.receive(60)
        if reply is None or "pid" not in reply:
            raise RuntimeError(f"the prewarmed server did not fork: {reply}; {self.log.read_text(errors='replace')}")
        return Child(self, int(reply["pid"]), open(out_r, encoding=None), open(err_r, encoding=None))

    def close(self) -> None:
        self.sock.close()  # the server ends at the end of its socket
        try:
            self.process.wait(30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        shutil.rmtree(self.home, ignore_errors=True)


_servers: dict[tuple[str, str], Server] = {}
CHILD_CPU = 0.0
"""CPU seconds the forked runs of this test process used, as their ``wait4`` reported (for profiling the suite)."""


def server(python: str, script: str, preload: list[str]) -> Server:
    """This test process's server for ``python script`` (started on first use; :func:`close_all` ends it)."""
    key = (python, script)
    if key not in _servers:
        _servers[key] = Server(python, script, preload)
        if len(_servers) == 1:
            atexit.register(close_all)
    return _servers[key]


def close_all() -> None:
    while _servers:
        _servers.popitem()[1].close()


def fresh_everywhere() -> bool:
    return os.environ.get("EVALBOT_E2E_FRESH", "") not in ("", "0")

