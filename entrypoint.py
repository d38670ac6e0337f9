"""Container entry point of the evalbot GitHub Action: hand the environment to the package, exit with its code."""

import os
import sys
import time


def main() -> int:
    """Print the first log line before the heavy imports, then run the action."""
    started = time.perf_counter()
    print(f"evalbot: starting ({os.environ.get('GITHUB_EVENT_NAME') or 'no event'})", flush=True)
    from evalbot.action.main import run  # pydantic, PyGithub and google-genai load after the first line

    return run(dict(os.environ), started=started)


if __name__ == "__main__":
    sys.exit(main())
