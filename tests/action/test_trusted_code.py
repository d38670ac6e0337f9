"""action.trusted_code: git's blob ids, computed without git, and what is refused before any request."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from evalbot.action.trusted_code import blob_sha, unverified_metric_code
from evalbot.pipeline import load_inputs
from tests.fakes.forge import ScriptedForge


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
@pytest.mark.parametrize("data", [b"", b"def m(instance):\n    return {}\n", bytes(range(256)) * 3])
def test_blob_ids_are_gits(tmp_path: Path, data: bytes) -> None:
    path = tmp_path / "f"
    path.write_bytes(data)
    done = subprocess.run(["git", "hash-object", str(path)], capture_output=True, text=True, check=True)
    assert blob_sha(data) == done.stdout.strip()


def _repo(root: Path, module: str) -> Path:
    (root / ".git").mkdir(parents=True)
    (root / "pkg").mkdir()
    (root / "pkg" / "__init__.py").write_text("", encoding="utf-8")
    (root / "pkg" / "m.py").write_text(module, encoding="utf-8")
    (root / "evals").mkdir()
    (root / "evals" / "s.evalset.json").write_text(json.dumps({"eval_set_id": "s", "eval_cases": [
        {"eval_id": "c", "conversation": [{"invocation_id": "i", "user_content": {"parts": [{"text": "q"}]}}]}]}),
        encoding="utf-8")
    (root / "evals" / "test_config.json").write_text(json.dumps({
        "criteria": {"mine": 0.5}, "custom_metrics": {"mine": {"code_config": {"name": "pkg.m.m"}}}}),
        encoding="utf-8")
    return root


def test_matching_files_pass_and_the_first_difference_is_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = _repo(tmp_path / "ws", "def m(instance):\n    return {'mine': 1.0}\n")
    monkeypatch.chdir(root)
    loaded = load_inputs([str(root / "evals")])
    served = {"pkg/__init__.py": blob_sha(b""), "pkg/m.py": blob_sha((root / "pkg" / "m.py").read_bytes())}

    class Served(ScriptedForge):
        def file_sha(self, path: str, *, ref: str) -> str | None:
            return served.get(path)

    assert unverified_metric_code(loaded, root, Served(), "d" * 40) is None
    served["pkg/m.py"] = blob_sha(b"something else")
    problem = unverified_metric_code(loaded, root, Served(), "d" * 40)
    assert problem is not None and problem.startswith("pkg/m.py (code of pkg.m.m) in this checkout differs from the "
                                                      "file of commit dddddddddddd"), problem
    del served["pkg/m.py"]
    problem = unverified_metric_code(loaded, root, Served(), "d" * 40)
    assert problem is not None and "is not in commit dddddddddddd" in problem


def test_code_outside_the_workspace_is_not_checked_nor_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A symbolic link in the checkout to a module elsewhere: refused before any request."""
    root = _repo(tmp_path / "ws", "X = 1\n")
    elsewhere = tmp_path / "elsewhere.py"
    elsewhere.write_text("def m(instance):\n    return {'mine': 1.0}\n", encoding="utf-8")
    (root / "pkg" / "m.py").unlink()
    (root / "pkg" / "m.py").symlink_to(elsewhere)
    monkeypatch.chdir(root)
    forge = ScriptedForge(file_sha=AssertionError("no request expected"))
    problem = unverified_metric_code(load_inputs([str(root / "evals")]), root, forge, "d" * 40)
    assert problem is not None and "is outside the workspace" in problem, problem
