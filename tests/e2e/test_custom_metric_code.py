"""Issue 37 row 2: what a custom metric's code is comes from the files, read by the gate, never from its worker.

Main's metric ``repo_metrics.checks.tools_used`` scores with a helper module it imports.  main's baseline is
measured with mode baseline on a push (the metric runs there); then the PR changes what the metric computes without
touching the function's text, the way an author loosening it would.  Each such PR must show the yardstick row
"custom metric code changed" and block as the other yardstick changes do; a PR that leaves the code alone must not.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable

import pytest

from tests.e2e.conftest import BASE_SHA, Action, measure_baseline, pull_request_event

CONFIG = "evals/test_config.json"
FUNCTION = "def tools_used(instance):\n    return {'tools_used': score(instance)}\n"
CHECKS = "from repo_metrics.helpers import score\n\n\n" + FUNCTION
HELPERS = "def score(instance):\n    return 1.0 if instance['predicted_trajectory'] else 0.0\n"
LENIENT = "def score(instance):\n    return 1.0\n"
ROW = "| shop / tools\\_used | custom metric code changed (repo\\_metrics.checks.tools\\_used) |"


def write(action: Action, path: str, text: str) -> None:
    target = action.workspace / path
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text, encoding="utf-8")


def main_tree(action: Action) -> None:
    """main's metric (a function calling a helper module) in the workspace and in main's config."""
    write(action, "repo_metrics/__init__.py", "")
    write(action, "repo_metrics/checks.py", CHECKS)
    write(action, "repo_metrics/helpers.py", HELPERS)
    config = json.loads((action.workspace / CONFIG).read_text(encoding="utf-8"))
    config["criteria"]["tools_used"] = 0.5
    config["custom_metrics"] = {"tools_used": {"code_config": {"name": "repo_metrics.checks.tools_used"}}}
    text = json.dumps(config)
    write(action, CONFIG, text)
    action.github.put_file(CONFIG, text, ref=BASE_SHA)


def edit_the_helper(action: Action) -> None:
    write(action, "repo_metrics/helpers.py", LENIENT)


def edit_a_helper_imported_relatively_inside_the_function(action: Action) -> None:
    write(action, "repo_metrics/checks.py", "def tools_used(instance):\n    from .helpers import score\n"
          "    return {'tools_used': score(instance)}\n")
    measure_baseline(action)  # main already had this shape
    write(action, "repo_metrics/helpers.py", LENIENT)


def edit_a_package_init_the_helper_runs(action: Action) -> None:
    write(action, "repo_metrics/helpers.py", "from repo_metrics.sub.tune import FACTOR\n\n\ndef score(instance):\n"
          "    return FACTOR * (1.0 if instance['predicted_trajectory'] else 0.0)\n")
    write(action, "repo_metrics/sub/__init__.py", "")
    write(action, "repo_metrics/sub/tune.py", "FACTOR = 1.0\n")
    measure_baseline(action)
    write(action, "repo_metrics/sub/__init__.py", "import builtins\nbuiltins.LENIENT = True\n")


def restore_the_helper_when_imported(action: Action) -> None:
    """The lenient helper puts main's text back on disk when the worker imports it (its lenient code is loaded)."""
    restore = f"\n\nimport pathlib\npathlib.Path(__file__).write_text({HELPERS!r})\n"
    write(action, "repo_metrics/helpers.py", LENIENT + restore)


def hijack_the_workers_hash(action: Action) -> None:
    """A new function body, and module-level code that makes the worker report main's function's hash (the
    worker hashed ``inspect.getsource(function)`` with its module-level ``_source_hash``)."""
    main_hash = hashlib.sha256(FUNCTION.encode()).hexdigest()[:16]
    write(action, "repo_metrics/checks.py", (
        "import __main__\n"
        f"__main__._source_hash = lambda function: {main_hash!r}\n\n\n"
        "def tools_used(instance):\n    return {'tools_used': 1.0}\n"))


def edit_a_declared_data_file(action: Action) -> None:
    """main's helper reads a weight from a data file its entry declares in ``data_files``; the PR edits the data."""
    write(action, "repo_metrics/helpers.py", "import json, pathlib\n\n\ndef score(instance):\n"
          "    weight = json.loads(pathlib.Path(__file__).with_name('weights.json').read_text())['w']\n"
          "    return weight if instance['predicted_trajectory'] else 0.0\n")
    write(action, "repo_metrics/weights.json", '{"w": 1.0}')
    config = json.loads((action.workspace / CONFIG).read_text(encoding="utf-8"))
    config["custom_metrics"]["tools_used"]["data_files"] = ["repo_metrics/*.json"]
    write(action, CONFIG, json.dumps(config))
    action.github.put_file(CONFIG, json.dumps(config), ref=BASE_SHA)
    measure_baseline(action)
    write(action, "repo_metrics/weights.json", '{"w": 0.5}')


def edit_the_function(action: Action) -> None:
    """The honest control: the function itself changes (a same-repo PR with a real custom metric change)."""
    write(action, "repo_metrics/checks.py", CHECKS.replace("score(instance)}", "min(1.0, score(instance) + 0.5)}"))


CHANGES: list[Callable[[Action], None]] = [
    edit_the_helper, edit_a_helper_imported_relatively_inside_the_function, edit_a_package_init_the_helper_runs,
    restore_the_helper_when_imported, hijack_the_workers_hash, edit_a_declared_data_file, edit_the_function,
]


@pytest.mark.parametrize("change", CHANGES, ids=[c.__name__ for c in CHANGES])
def test_changed_metric_code_is_a_yardstick_change_that_blocks(
        action: Action, change: Callable[[Action], None]) -> None:
    main_tree(action)
    measure_baseline(action)
    change(action)
    run = action.run("pull_request", pull_request_event(), inputs={"actuals": "actuals/good.json"})
    (comment,) = action.github.comments_on(7)
    headline = comment.body.splitlines()[1]
    assert run.code == 1, comment.body + run.stderr
    assert run.outputs["verdict"] == "blocked", run.outputs
    assert headline.startswith("### ❌ evalbot: blocked: ⚠️ 1 yardstick change not accepted (shop / tools\\_used: "
                               "custom metric code changed (repo\\_metrics.checks.tools\\_used))"), headline
    assert ROW in comment.body, comment.body


def test_unchanged_metric_code_compares_as_before(action: Action) -> None:
    """The control: the same files in the PR (a new process, a new checkout) are the same code: no yardstick row."""
    main_tree(action)
    measure_baseline(action)
    run = action.run("pull_request", pull_request_event(), inputs={"actuals": "actuals/good.json"})
    (comment,) = action.github.comments_on(7)
    assert run.code == 0, comment.body + run.stderr
    assert comment.body.splitlines()[1].startswith("### ✅ evalbot: no regressions"), comment.body
    assert "Yardstick" not in comment.body


def test_committed_bytecode_of_a_helper_is_never_run(action: Action) -> None:
    """The PR leaves the sources alone and commits ``repo_metrics/__pycache__/helpers.<tag>.pyc``, an unchecked
    hash-based pyc (Python loads it without looking at the source) that scores 0.0: the worker compiles the source
    the gate hashed instead, so the scores are main's and nothing regresses (before: every case regressed to 0.0,
    the code identity unchanged)."""
    import py_compile
    import sys

    main_tree(action)
    measure_baseline(action)
    forged = action.workspace.parent / "forged_helpers.py"
    forged.write_text("def score(instance):\n    return 0.0\n", encoding="utf-8")
    cache = action.workspace / "repo_metrics" / "__pycache__" / f"helpers.{sys.implementation.cache_tag}.pyc"
    cache.parent.mkdir(exist_ok=True)
    py_compile.compile(str(forged), cfile=str(cache), invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH)
    run = action.run("pull_request", pull_request_event(), inputs={"actuals": "actuals/good.json"})
    (comment,) = action.github.comments_on(7)
    assert run.code == 0, comment.body + run.stderr
    assert comment.body.splitlines()[1].startswith("### ✅ evalbot: no regressions"), comment.body
