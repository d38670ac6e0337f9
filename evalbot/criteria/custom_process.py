"""The process a custom metric runs in: started, spoken to and killed from here (the gate never imports its code).

A :class:`Worker` runs ``custom_worker.py`` with this interpreter, the gate's import path plus the repository roots,
and an environment without secrets (:func:`worker_environment`).  Every answer is awaited with a deadline; a worker
that does not answer in time is killed with every process it started, one that exits or answers with something that
is not the protocol is reported as such, and from then on the worker is gone (:class:`WorkerGone`).

On Linux the worker runs under ``custom_supervisor.py`` (a child subreaper that ends the whole tree, ``setsid``
daemons included, and starts the worker without capabilities), and the gate makes itself not dumpable before the
first worker starts (``PR_SET_DUMPABLE`` 0), so the metric cannot read the gate's ``/proc/PID/environ`` (the
Action's inputs, the GitHub token, the judge keys) nor ptrace it.  Elsewhere the worker is its own process group's
leader and the group is killed.
"""

from __future__ import annotations

import ctypes
import json
import os
import re
import selectors
import signal
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import IO, Any, NoReturn

from evalbot.criteria.custom_code import CodeIdentity
from evalbot.criteria.custom_supervisor import children_by_parent
from evalbot.redact import holds_secret

WORKER_SCRIPT = Path(__file__).with_name("custom_worker.py")
MAX_ANSWER_BYTES = 16 * 1024 * 1024
"""A longer answer line is not the protocol: the worker is killed."""
_STDERR_TAIL = 400
_STDERR_KEPT = 4 * _STDERR_TAIL
"""Bytes of the worker's stderr kept (its last; a metric printing gigabytes fills neither memory nor disk)."""
GATHER_S = 0.0005
STARTUP_S = 60.0
"""How long the worker's interpreter may take to start (not counted in the metric's timeout_seconds)."""
_SECRET_NAME = re.compile(
    r"TOKEN|SECRET|PASSW|CREDENTIAL|API_?KEY|ACCESS_?KEY|PRIVATE|AUTH|COOKIE|SESSION|(^|_)KEY$|(^|_)PAT$", re.I
)
_DROPPED_PREFIXES = ("ACTIONS_", "INPUT_", "EVALBOT_")
_DROPPED_NAMES = frozenset({"GITHUB_OUTPUT", "GITHUB_ENV", "GITHUB_PATH", "GITHUB_STATE", "GITHUB_STEP_SUMMARY"})
"""The runner's command files: a metric writing to them would set the step's outputs or the job's environment."""
SUPERVISOR_SCRIPT = Path(__file__).with_name("custom_supervisor.py")
SUPERVISED = sys.platform.startswith("linux")
"""Workers run under the supervisor (Linux: prctl and /proc)."""
KILL_WAIT_S = 15.0
"""How long the gate waits for the supervisor to end the worker's tree before killing its process group itself."""
PR_SET_DUMPABLE = 4
PR_SET_CHILD_SUBREAPER = 36
SWEEP_S = 5.0
"""How long the gate keeps ending escaped processes of a worker's tree (:func:`sweep_escaped`)."""
_undumpable = False
_subreaper = False
_supervisors: set[int] = set()
"""The pids of the live workers' supervisors (never swept)."""
_supervisors_lock = threading.Lock()


def _prctl(option: int, arg: int) -> bool:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return bool(libc.prctl(option, ctypes.c_ulong(arg), ctypes.c_ulong(0), ctypes.c_ulong(0),
                               ctypes.c_ulong(0)) == 0)
    except (OSError, AttributeError):
        return False


def gate_not_dumpable() -> bool:
    """Make this process not dumpable (Linux): its ``/proc/PID/environ``, ``mem`` and ``fd`` are then readable, and
    it can be ptraced, only with CAP_SYS_PTRACE, which the supervised worker never has.  It also becomes a child
    subreaper: a process of a worker's tree whose supervisor was killed comes back here, where
    :func:`sweep_escaped` ends it.  True once done."""
    global _undumpable, _subreaper
    if not _undumpable and SUPERVISED:
        _undumpable = _prctl(PR_SET_DUMPABLE, 0)
        _subreaper = _subreaper or _prctl(PR_SET_CHILD_SUBREAPER, 1)
    return _undumpable


def _marks(pid: int | str) -> tuple[str, int] | None:
    """A process's ``NoNewPrivs`` and ``CapBnd`` (None when it is gone)."""
    found: dict[str, str] = {}
    try:
        with open(f"/proc/{pid}/status", encoding="ascii", errors="replace") as status:
            for line in status:
                key, _, value = line.partition(":")
                found[key] = value.strip()
    except OSError:
        return None
    try:
        bounding = int(found.get("CapBnd", "") or "0", 16)
    except ValueError:
        bounding = -1
    return found.get("NoNewPrivs", "0"), bounding


def sweep_escaped() -> int:
    """End every process of a worker's tree that escaped its supervisor (the metric killed it): such a process is
    re-parented to the gate (a subreaper) and carries what the supervisor locked, which it cannot undo
    (``no_new_privs``, an empty capability bounding set) where the gate does not.  Returns how many were killed."""
    gate = _marks("self") if _subreaper else None
    if gate is None:
        return 0
    me, killed = os.getpid(), 0
    deadline = time.monotonic() + SWEEP_S
    while time.monotonic() < deadline:
        tree = children_by_parent(zombies=True)
        with _supervisors_lock:
            live = set(_supervisors)
        escaped = []
        for pid in tree.get(me, []):
            marks = None if pid in live else _marks(pid)
            if marks is not None and ((marks[0] == "1" and gate[0] != "1") or (marks[1] == 0 and gate[1] != 0)):
                escaped.append(pid)
        if not escaped:
            return killed
        stack = list(escaped)
        while stack:
            pid = stack.pop()
            stack += tree.get(pid, [])
            try:
                os.kill(pid, signal.SIGKILL)
                killed += 1
            except OSError:
                pass
        for pid in escaped:  # the gate's children now: reap them
            try:
                os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                pass
        time.sleep(0.005)
    return killed


def worker_environment(env: Mapping[str, str]) -> dict[str, str]:
    """``env`` without what a metric must not see: GitHub's runtime tokens and URLs (``ACTIONS_*``), the Action's
    inputs (``INPUT_*``, which hold the github-token and judge keys), evalbot's own settings, the runner's command
    files (``GITHUB_OUTPUT``, ``GITHUB_ENV``, ``GITHUB_PATH``, ``GITHUB_STATE``, ``GITHUB_STEP_SUMMARY``), every
    variable whose name looks like a credential (``GITHUB_TOKEN``, ``GOOGLE_API_KEY``, ``*_SECRET*``,
    ``*PASSWORD*``, ...) and every variable holding a registered secret value."""
    return {
        name: value for name, value in env.items()
        if not name.upper().startswith(_DROPPED_PREFIXES) and name.upper() not in _DROPPED_NAMES
        and not _SECRET_NAME.search(name) and not holds_secret(value)
    }


def worker_path(roots: Sequence[Path]) -> list[Path]:
    """The worker's import path: the gate's (``''`` is its working directory), then the repository ``roots``
    appended, so a repository file never shadows a package (the gate reads the metric's code along the same path:
    criteria.custom_code)."""
    path = [p or os.getcwd() for p in sys.path]
    path += [str(r) for r in roots if str(r) not in path]
    return [Path(p) for p in path]


class WorkerGone(Exception):
    """The worker exited, crashed, hung (and was killed) or broke the protocol; the message says which."""

    def __init__(self, message: str, hung: bool = False) -> None:
        super().__init__(message)
        self.hung = hung


class Worker:
    """One custom metric's worker process."""

    def __init__(self, function_path: str, roots: Sequence[Path], env: Mapping[str, str] | None = None,
                 readable: Sequence[str] = ()) -> None:
        self.function_path = function_path
        self._buffer = b""
        self._lines: deque[bytes] = deque()
        self.gone: str | None = None
        gate_not_dumpable()
        self.supervised = SUPERVISED
        command = [sys.executable, "-E", "-s", str(WORKER_SCRIPT)]
        if self.supervised:
            command = [sys.executable, "-E", "-s", str(SUPERVISOR_SCRIPT), str(os.getpid()), str(WORKER_SCRIPT)]
        with _supervisors_lock:
            self.proc = subprocess.Popen(
                command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                env=worker_environment(os.environ if env is None else env), start_new_session=True,
            )
            if self.supervised:
                _supervisors.add(self.proc.pid)
        self._stderr = _Tail(self.proc.stderr, _STDERR_KEPT)
        self._hello = {"function": function_path, "sys_path": [str(p) for p in worker_path(roots)],
                       "roots": sorted({os.path.realpath(r) for r in roots}), "readable": sorted(readable)}

    def start(self, timeout_s: float, what: str) -> dict[str, Any]:
        """Import the function in the worker; its answer (``contract`` ... or ``error``)."""
        ready = self.receive(STARTUP_S, f"starting the process for {self.function_path}")
        if ready != {"ready": True}:
            self._fail(f"{what}: the worker's first answer is not evalbot's protocol")
        self._write(self._hello, timeout_s, what)
        return self.receive(timeout_s, what)

    def send_items(self, items: Sequence[dict[str, Any]], timeout_s: float, what: str) -> None:
        """Ask for one answer per item (read them with :meth:`receive`)."""
        self._write({"items": list(items)}, timeout_s, what)

    def _write(self, message: dict[str, Any], timeout_s: float, what: str) -> None:
        if self.gone is not None:
            raise WorkerGone(self.gone)
        assert self.proc.stdin is not None
        data = memoryview((json.dumps(message) + "\n").encode())
        fd = self.proc.stdin.fileno()
        os.set_blocking(fd, False)
        deadline = time.monotonic() + timeout_s
        with selectors.DefaultSelector() as selector:
            selector.register(fd, selectors.EVENT_WRITE)
            while data:
                left = deadline - time.monotonic()
                if left <= 0 or not selector.select(left):
                    self._fail(f"{what} did not return within {timeout_s:g} s (timeout_seconds)", hung=True)
                try:
                    data = data[os.write(fd, data):]
                except BlockingIOError:
                    continue
                except (BrokenPipeError, OSError):
                    self._fail(self._exit_message(what))

    def receive(self, timeout_s: float, what: str) -> dict[str, Any]:
        """The next answer line, waited for at most ``timeout_s``; WorkerGone (the worker killed) otherwise."""
        if self.gone is not None:
            raise WorkerGone(self.gone)
        if not self._lines:
            self._read_lines(timeout_s, what)
        line = self._lines.popleft()
        try:
            answer = json.loads(line)
        except (ValueError, RecursionError):  # not JSON, or nested past Python's recursion limit
            answer = None
        if not isinstance(answer, dict):
            self._fail(f"{what}: the worker answered {line[:80]!r}, not evalbot's protocol (something in the metric's "
                       "process wrote to evalbot's channel)")
        return answer

    def _read_lines(self, timeout_s: float, what: str) -> None:
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        deadline = time.monotonic() + timeout_s
        with selectors.DefaultSelector() as selector:
            selector.register(fd, selectors.EVENT_READ)
            while not self._lines:
                if len(self._buffer) > MAX_ANSWER_BYTES:
                    self._fail(f"{what}: the worker answered more than {MAX_ANSWER_BYTES} bytes without a line end "
                               "(not evalbot's protocol)")
                left = deadline - time.monotonic()
                if left <= 0 or not selector.select(left):
                    self._fail(f"{what} did not return within {timeout_s:g} s (timeout_seconds)", hung=True)
                if GATHER_S:  # let the answers being written gather: fewer wake-ups of both processes
                    time.sleep(GATHER_S)
                chunk = os.read(fd, 1 << 20)
                if not chunk:
                    self._fail(self._exit_message(what))
                *lines, self._buffer = (self._buffer + chunk).split(b"\n")
                self._lines.extend(lines)

    def _exit_message(self, what: str) -> str:
        try:
            code = self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            code = None
        if code is not None and code < 0:
            how = f"was killed by signal {signal.Signals(-code).name if -code in signal.valid_signals() else -code}"
        else:
            how = f"exited with code {code}" if code is not None else "closed its output"
        tail = self._stderr_tail()
        return f"{what}: the custom metric's process {how} before answering" + (f" (its last output: {tail})"
                                                                                 if tail else "")

    def _stderr_tail(self) -> str:
        text = self._stderr.last().decode("utf-8", "replace")
        return " ".join("".join(c if c.isprintable() else " " for c in text).split())[-_STDERR_TAIL:]

    def _fail(self, message: str, hung: bool = False) -> NoReturn:
        self.kill()
        self.gone = message
        raise WorkerGone(message, hung=hung)

    def kill(self) -> None:
        """Kill the worker and everything it started, and wait for it: the supervisor ends the whole tree (on
        SIGTERM); unsupervised, or if the supervisor does not end in time, the process group is killed."""
        if self.supervised and self.proc.poll() is None:
            try:
                self.proc.send_signal(signal.SIGTERM)
                self.proc.wait(KILL_WAIT_S)
            except (OSError, subprocess.TimeoutExpired):
                pass
        if self.proc.poll() is None:
            try:  # the group too: a process the metric started must not outlive it
                os.killpg(self.proc.pid, signal.SIGKILL)
            except OSError:
                pass
        self.proc.wait()
        if self.supervised:
            with _supervisors_lock:
                _supervisors.discard(self.proc.pid)
            sweep_escaped()
        for stream in (self.proc.stdin, self.proc.stdout):
            if stream is not None:
                try:
                    stream.close()
                except OSError:
                    pass
        self.gone = self.gone or f"{self.function_path}: the custom metric's process was stopped"

    def close(self) -> None:
        """Stop the worker (its work is done)."""
        self.kill()

    def __del__(self) -> None:
        if getattr(self, "proc", None) is not None and self.proc.poll() is None:
            self.kill()


class _Tail:
    """The last ``keep`` bytes of a stream, read as they come by a thread that closes it at its end (the worker's
    stderr: a pipe, so what the metric prints is never stored past them)."""

    def __init__(self, stream: IO[bytes] | None, keep: int) -> None:
        self._keep = keep
        self._data = b""
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._drain, args=(stream,), name="evalbot-worker-stderr", daemon=True)
        self._thread.start()

    def _drain(self, stream: IO[bytes] | None) -> None:
        if stream is None:
            return
        with stream:
            try:
                while chunk := os.read(stream.fileno(), 1 << 16):
                    with self._lock:
                        self._data = (self._data + chunk)[-self._keep:]
            except OSError:
                pass

    def last(self) -> bytes:
        """What was kept, once the stream ended (waited for briefly: a process the worker started may hold it)."""
        self._thread.join(timeout=1.0)
        with self._lock:
            return self._data


Started = tuple[Worker, dict[str, Any]]
"""A worker that has imported its function, and its answer to the import (``contract``, ``where``)."""


class WorkerPool:
    """A run's custom-metric workers, shared by its eval sets: one live worker per function and import path, so a
    metric's module (and what it imports, such as google-adk) is imported once per run, not once per eval set.

    Each worker still runs out of process with the stripped environment; only its start is shared.  Calls to one
    worker are serialized by :meth:`lock`.  A worker that is gone (hung and killed, crashed, broke the protocol) is
    never handed out again: the next :meth:`get` starts a new one, so one eval set's failure does not skip the metric
    in the others.  :meth:`close` stops every worker (the end of the run)."""

    def __init__(self) -> None:
        self._workers: dict[tuple[str, ...], Started] = {}
        self._identities: dict[tuple[str, ...], CodeIdentity] = {}
        self._locks: dict[tuple[str, ...], threading.Lock] = {}
        self._guard = threading.Lock()

    def lock(self, key: tuple[str, ...]) -> threading.Lock:
        """The lock held while talking to ``key``'s worker."""
        with self._guard:
            return self._locks.setdefault(key, threading.Lock())

    def identity(self, key: tuple[str, ...], compute: Callable[[], CodeIdentity]) -> CodeIdentity:
        """``key``'s code identity (criteria.custom_code), computed once per run."""
        with self._guard:
            if key not in self._identities:
                self._identities[key] = compute()
            return self._identities[key]

    def get(self, key: tuple[str, ...], start: Callable[[], Started]) -> Started:
        """``key``'s live worker, started with ``start`` when there is none (its errors propagate)."""
        with self._guard:
            found = self._workers.get(key)
            if found is not None and found[0].gone is None and found[0].proc.poll() is None:
                return found
            if found is not None:
                found[0].close()
            started = start()
            self._workers[key] = started
            return started

    def close(self) -> None:
        """Stop every worker (the run is over)."""
        with self._guard:
            workers, self._workers = list(self._workers.values()), {}
        for worker, _ in workers:
            worker.close()
