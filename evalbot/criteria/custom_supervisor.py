"""The custom-metric worker's supervisor (Linux): the process between the gate and the worker, which runs no
repository code and makes sure every process the metric starts ends with it (see criteria.custom_process).

evalbot runs this file as a script (``python -E -s custom_supervisor.py GATE_PID WORKER_SCRIPT``) with the scrubbed
environment; it needs the standard library only.  It

* becomes a *child subreaper* (``PR_SET_CHILD_SUBREAPER``): a process the metric starts and then abandons (a
  ``setsid`` daemon, a double fork) is re-parented here, never to init, so it stays a descendant that can be found;
* asks for ``SIGTERM`` when the gate dies (``PR_SET_PDEATHSIG``), so a gate killed from outside still ends the tree;
* locks the worker out of privileges before starting it: no capabilities for uid 0 across ``execve``
  (``SECBIT_NOROOT``, locked, and an empty bounding set; a root worker keeps its uid, so it reads and writes the
  files root owns, but cannot ptrace nor read another process's ``/proc/PID/environ``: the gate is not dumpable),
  no ambient capabilities, ``PR_SET_NO_NEW_PRIVS`` (no set-user-ID program gives them back);
* starts the worker with its own stdin, stdout and stderr (the gate's pipes) and ``PR_SET_PDEATHSIG``
  ``SIGKILL``, then closes its own copies, so the gate sees the worker's end of file;
* when the worker exits, or on ``SIGTERM`` (the gate's kill), kills every descendant (found through ``/proc`` by
  parent pid, abandoned ones included) with ``SIGKILL``, reaps them until it has no child left, and exits as the worker
  did (its exit code, or the same signal).
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
import time

PR_SET_PDEATHSIG = 1
PR_CAPBSET_DROP = 24
PR_SET_SECUREBITS = 28
PR_SET_CHILD_SUBREAPER = 36
PR_SET_NO_NEW_PRIVS = 38
PR_CAP_AMBIENT = 47
PR_CAP_AMBIENT_CLEAR_ALL = 4
SECURE_BITS = (1 << 0) | (1 << 1) | (1 << 6) | (1 << 7)
"""SECBIT_NOROOT, SECBIT_NOROOT_LOCKED, SECBIT_NO_CAP_AMBIENT_RAISE, SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED."""
KILL_SECONDS = 10.0
"""How long the supervisor keeps killing and reaping descendants before giving up."""

try:
    _libc: ctypes.CDLL | None = ctypes.CDLL(None, use_errno=True)
except OSError:  # no C library to call prctl with: the worker still runs, supervised as far as /proc allows
    _libc = None


def _prctl(option: int, arg: int = 0, arg3: int = 0) -> bool:
    if _libc is None:
        return False
    return bool(_libc.prctl(option, ctypes.c_ulong(arg), ctypes.c_ulong(arg3), ctypes.c_ulong(0),
                            ctypes.c_ulong(0)) == 0)


def _lock_down() -> None:
    """What the worker inherits across execve: no capabilities, none to regain (best effort without privileges)."""
    _prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL)
    if os.geteuid() == 0:
        _prctl(PR_SET_SECUREBITS, SECURE_BITS)
        for cap in range(64):
            _prctl(PR_CAPBSET_DROP, cap)  # EINVAL past the kernel's last capability
    _prctl(PR_SET_NO_NEW_PRIVS, 1)


def children_by_parent(*, zombies: bool) -> dict[int, list[int]]:
    """Each process's children, by parent pid (read from ``/proc/PID/stat``; zombies left out unless ``zombies``).
    Empty without ``/proc``.  Shared with criteria.custom_process (this file imports nothing of evalbot)."""
    children: dict[int, list[int]] = {}
    try:
        names = os.listdir("/proc")
    except OSError:
        names = []
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as stat:
                text = stat.read()
        except OSError:
            continue
        fields = text[text.rfind(b")") + 2:].split()
        if len(fields) > 1 and (zombies or fields[0] != b"Z"):
            children.setdefault(int(fields[1]), []).append(int(name))
    return children


def _descendants(root: int) -> list[int]:
    """Every live process below ``root``, by parent pid (without ``/proc`` none: only the worker itself can be found,
    and its process group is killed by the gate)."""
    children = children_by_parent(zombies=False)
    found: list[int] = []
    stack = [root]
    while stack:
        for child in children.get(stack.pop(), []):
            found.append(child)
            stack.append(child)
    return found


def _reap() -> bool:
    """Reap every child that has exited; False once there is no child left."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return False
        if pid == 0:
            return True


def end_tree() -> None:
    """Kill every descendant and reap until no child is left (or KILL_SECONDS pass)."""
    me = os.getpid()
    deadline = time.monotonic() + KILL_SECONDS
    while time.monotonic() < deadline:
        for pid in _descendants(me):
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        if not _reap():
            return
        time.sleep(0.005)


def _exit_as(status: int) -> None:
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        signal.signal(number, signal.SIG_DFL)
        os.kill(os.getpid(), number)
    os._exit(os.waitstatus_to_exitcode(status) if not os.WIFSIGNALED(status) else 1)


def main() -> None:
    """Start the worker and supervise it until it ends, then end everything it started."""
    gate, script = int(sys.argv[1]), sys.argv[2]
    _prctl(PR_SET_CHILD_SUBREAPER, 1)
    _prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    if os.getppid() != gate:  # the gate died before the line above
        os._exit(1)

    def stop(number: int, frame: object) -> None:
        end_tree()
        os._exit(128 + number)

    signal.signal(signal.SIGTERM, stop)
    _lock_down()
    me = os.getpid()
    worker = os.fork()
    if worker == 0:
        try:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            _prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
            if os.getppid() != me:
                os._exit(1)
            os.execv(sys.executable, [sys.executable, "-E", "-s", script])
        finally:
            os._exit(127)
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)  # the worker holds the gate's pipes; the gate sees their end when the worker's tree is gone
    os.dup2(null, 1)
    os.close(null)
    while True:
        pid, status = os.waitpid(-1, 0)
        if pid == worker:
            break
    end_tree()
    _exit_as(status)


if __name__ == "__main__":
    main()
