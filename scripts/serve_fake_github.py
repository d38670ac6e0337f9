"""Serve the project's fake GitHub (tests/fakes) for scripts/container_smoke.sh: the bundled example's PR.

Publishes examples/.evalbot/baseline.json at the PR's base commit, opens PR #7, writes a pull_request event for
that PR to WORKFLOW_DIR/event.json and the server's port to WORKFLOW_DIR/port, then serves until SIGTERM/SIGINT.
On exit it writes WORKFLOW_DIR/github.json: every request (method, path, operation, status), the comments and
any OpenAPI contract violations, so the smoke test can check what the container did.

    python scripts/serve_fake_github.py WORKFLOW_DIR
"""

from __future__ import annotations

import json
import signal
import sys
import threading
from pathlib import Path
from types import FrameType

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.fakes.fake_github import FakeGitHub, Pull  # noqa: E402  (after the path fix-up)

REPO = "octo-org/shop-agent"
BASE_SHA = "b" * 40
HEAD_SHA = "c" * 40
NUMBER = 7


def pull_request_event() -> dict[str, object]:
    """The recorded pull_request payload, pointed at PR #7 of the fake repository."""
    payload = json.loads((ROOT / "tests" / "data" / "events" / "pull_request.json").read_text(encoding="utf-8"))
    payload["repository"]["full_name"] = REPO
    payload["repository"]["default_branch"] = "main"
    pr = payload["pull_request"]
    pr["number"] = payload["number"] = NUMBER
    pr["base"].update(sha=BASE_SHA, ref="main")
    pr["head"].update(sha=HEAD_SHA, ref="feature", label=f"{REPO.split('/')[0]}:feature")
    pr["head"]["repo"]["full_name"] = REPO
    return dict(payload)


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    out = Path(argv[0])
    out.mkdir(parents=True, exist_ok=True)
    stop = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    with FakeGitHub(repo=REPO) as fake:
        fake.put_file(".evalbot/baseline.json", (ROOT / "examples/.evalbot/baseline.json").read_bytes(), ref=BASE_SHA)
        fake.add_pull(Pull(NUMBER, HEAD_SHA, BASE_SHA))
        (out / "event.json").write_text(json.dumps(pull_request_event()), encoding="utf-8")
        (out / "port").write_text(str(fake.port), encoding="utf-8")
        while not stop.wait(0.2):
            pass
        state = {
            "requests": [
                {"method": e.method, "path": e.path, "operation": e.operation, "status": e.status}
                for e in fake.exchanges
            ],
            "comments": [{"id": c.id, "login": c.login, "body": c.body} for c in fake.comments_on(NUMBER)],
            "violations": fake.violations,
        }
    (out / "github.json").write_text(json.dumps(state, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
