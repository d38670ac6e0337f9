"""Drive headless Chromium through the DevTools protocol over a pipe (``--remote-debugging-pipe``): no websocket, no
new dependency. Used by the HTML report's browser test and by bench/bench_html.py.

Chromium reads NUL-terminated JSON commands on file descriptor 3 and writes replies and events on 4.
"""

from __future__ import annotations

import base64
import json
import os
import select
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

CANDIDATES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "chrome")
FLAGS = (
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--disable-dev-shm-usage", "--hide-scrollbars", "--mute-audio",
)


def find_browser() -> str | None:
    """A Chromium binary: $EVALBOT_CHROMIUM, else the first of CANDIDATES on PATH."""
    explicit = os.environ.get("EVALBOT_CHROMIUM")
    if explicit:
        return explicit if Path(explicit).is_file() else None
    return next((found for name in CANDIDATES if (found := shutil.which(name))), None)


class DevToolsError(RuntimeError):
    """The browser answered a command with an error, closed the pipe, or did not answer in time."""


class Browser:
    """One headless Chromium with one page; ``call`` sends a command to that page and returns its result."""

    def __init__(self, binary: str, *, width: int = 1280, height: int = 900, timeout: float = 60.0) -> None:
        self.timeout = timeout
        self.profile = tempfile.mkdtemp(prefix="evalbot-chromium-")
        to_browser_r, self._to_browser = os.pipe()
        self._from_browser, from_browser_w = os.pipe()

        def wire() -> None:  # in the child: our pipe ends become its fds 3 (commands) and 4 (replies)
            commands, replies = os.dup(to_browser_r), os.dup(from_browser_w)  # neither may be clobbered below
            os.dup2(commands, 3)  # dup2 makes them inheritable; python's own pipe fds close on exec
            os.dup2(replies, 4)

        self.process = subprocess.Popen(
            [binary, *FLAGS, f"--user-data-dir={self.profile}", f"--window-size={width},{height}",
             "--remote-debugging-pipe", "about:blank"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            preexec_fn=wire, close_fds=False,
        )
        os.close(to_browser_r)
        os.close(from_browser_w)
        self._buffer = b""
        self._next = 0
        self.events: list[dict[str, Any]] = []
        self.session: str | None = None
        target = self.call("Target.createTarget", {"url": "about:blank"}, browser=True)["targetId"]
        self.session = self.call("Target.attachToTarget", {"targetId": target, "flatten": True}, browser=True)[
            "sessionId"]
        self.call("Page.enable")
        self.call("Runtime.enable")

    def _read_message(self, deadline: float) -> dict[str, Any]:
        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self._from_browser], [], [], left)[0]:
                raise DevToolsError("the browser did not answer in time")
            chunk = os.read(self._from_browser, 1 << 20)
            if not chunk:
                raise DevToolsError(f"the browser closed the pipe (exit code {self.process.poll()})")
            self._buffer += chunk
        raw, _, self._buffer = self._buffer.partition(b"\0")
        message: dict[str, Any] = json.loads(raw)
        return message

    def call(self, method: str, params: dict[str, Any] | None = None, *, browser: bool = False) -> dict[str, Any]:
        """Send ``method`` (to the page's session unless ``browser``) and wait for its result."""
        self._next += 1
        message: dict[str, Any] = {"id": self._next, "method": method, "params": params or {}}
        if not browser and self.session:
            message["sessionId"] = self.session
        os.write(self._to_browser, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + self.timeout
        while True:
            reply = self._read_message(deadline)
            if reply.get("id") == self._next:
                if "error" in reply:
                    raise DevToolsError(f"{method}: {reply['error']}")
                result: dict[str, Any] = reply.get("result", {})
                return result
            if "method" in reply:
                self.events.append(reply)

    def wait_event(self, method: str) -> dict[str, Any]:
        """The first event ``method`` received since the last wait (waiting for it if needed)."""
        deadline = time.monotonic() + self.timeout
        while True:
            for i, event in enumerate(self.events):
                if event.get("method") == method:
                    del self.events[: i + 1]
                    return event
            reply = self._read_message(deadline)
            if "method" in reply:
                self.events.append(reply)

    def open(self, url: str) -> None:
        """Navigate and wait for the load event."""
        self.events.clear()
        self.call("Page.navigate", {"url": url})
        self.wait_event("Page.loadEventFired")

    def evaluate(self, expression: str) -> Any:
        """The value of a JavaScript expression in the page (DevTools evaluation is not subject to the page's CSP)."""
        result = self.call("Runtime.evaluate", {"expression": expression, "returnByValue": True,
                                                "awaitPromise": True})
        if "exceptionDetails" in result:
            raise DevToolsError(f"{expression!r} raised {result['exceptionDetails']}")
        return result.get("result", {}).get("value")

    def screenshot(self, path: Path) -> None:
        """A PNG of the viewport."""
        data = self.call("Page.captureScreenshot", {"format": "png"})["data"]
        path.write_bytes(base64.b64decode(data))

    def close(self) -> None:
        try:
            self.call("Browser.close", browser=True)
        except DevToolsError:
            pass
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        os.close(self._to_browser)
        os.close(self._from_browser)
        shutil.rmtree(self.profile, ignore_errors=True)


@contextmanager
def browser(binary: str, **kwargs: Any) -> Iterator[Browser]:
    """A Browser closed (and its fresh profile removed) on exit."""
    b = Browser(binary, **kwargs)
    try:
        yield b
    finally:
        b.close()


def dump_dom(binary: str, url: str, timeout: float = 60.0) -> str:
    """The DOM after load, as ``chromium --headless --dump-dom`` prints it (a fresh profile, no network)."""
    profile = tempfile.mkdtemp(prefix="evalbot-chromium-")
    try:
        done = subprocess.run(
            [binary, *FLAGS, f"--user-data-dir={profile}", "--dump-dom", url],
            capture_output=True, text=True, timeout=timeout, check=True,
        )
        return done.stdout
    finally:
        shutil.rmtree(profile, ignore_errors=True)
