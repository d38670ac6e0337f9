"""criteria.custom_code: a custom metric's code as the gate reads it from the files (nothing imported or run).

Each test writes a small repository and checks which files the identity covers and that it changes exactly when one
of them does; hostile files (a FIFO, a device, a symbolic link out of the repository, unparseable or deeply nested
source, an import cycle) are hashed or named without hanging or crashing.
"""

from __future__ import annotations

import os
import sys
import threading
from pathlib import Path

import pytest

from evalbot.criteria.custom_code import CodeIdentity, code_identity
from evalbot.criteria.custom_process import worker_path


def identity(root: Path, module: str = "pkg.metric") -> CodeIdentity:
    return code_identity(module, worker_path([root]), [root])


def write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    write(root, {
        "pkg/__init__.py": "",
        "pkg/metric.py": "import json, os.path\nfrom pkg.helpers import score\nfrom . import weights\n"
                         "from .helpers import score as again\n\ndef m(instance):\n    return score(instance)\n",
        "pkg/helpers.py": "import importlib\n\ndef score(instance):\n    tool = importlib.import_module('tools.t')\n"
                          "    return tool.VALUE\n",
        "pkg/weights.py": "W = 1\n",
        "tools/t.py": "VALUE = 1.0\n",
        "unrelated.py": "X = 1\n",
    })
    return root


def test_the_module_and_every_repository_file_it_imports(repo: Path) -> None:
    found = identity(repo)
    assert found.files == (  # tools/: a namespace package
        "pkg/__init__.py", "pkg/helpers.py", "pkg/metric.py", "pkg/weights.py", "tools/", "tools/t.py")
    assert not any("json" in f or "os" in f for f in found.files)  # the standard library is the environment's


@pytest.mark.parametrize("changed", ["pkg/__init__.py", "pkg/helpers.py", "pkg/weights.py", "tools/t.py"])
def test_any_imported_file_changes_it(repo: Path, changed: str) -> None:
    before = identity(repo)
    (repo / changed).write_text((repo / changed).read_text(encoding="utf-8") + "\n# edited\n", encoding="utf-8")
    assert identity(repo).sha256 != before.sha256


def test_other_files_and_the_checkout_folder_do_not(repo: Path, tmp_path: Path) -> None:
    before = identity(repo)
    (repo / "unrelated.py").write_text("X = 2\n", encoding="utf-8")
    assert identity(repo) == before
    moved = tmp_path / "elsewhere"
    repo.rename(moved)
    assert identity(moved) == before  # paths are relative to the repository root


def test_an_installed_module_of_the_same_name_shadows_and_is_not_hashed(repo: Path) -> None:
    write(repo, {"pkg/metric.py": "import pytest\n\ndef m(instance):\n    return 1\n", "pytest.py": "X = 1\n"})
    assert identity(repo).files == ("pkg/__init__.py", "pkg/metric.py")


def test_a_missing_module_is_named(tmp_path: Path) -> None:
    found = identity(tmp_path, "nowhere.metric")
    assert found.files == ("<module>",)
    assert found != identity(tmp_path, "elsewhere.metric")


def test_an_import_cycle_and_a_module_beside_the_importer(repo: Path) -> None:
    write(repo, {"pkg/weights.py": "import pkg.metric\nimport sibling\n", "pkg/sibling.py": "import pkg.weights\n"})
    assert "pkg/sibling.py" in identity(repo).files


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_a_fifo_a_device_and_a_link_out_of_the_repository(repo: Path, tmp_path: Path) -> None:
    """A helper that is a FIFO (nobody writes it: reading would hang), a link to /dev/zero (endless) and a link to a
    file outside the repository (hashed by its bytes, named where it sits)."""
    (repo / "pkg" / "helpers.py").unlink()
    os.mkfifo(repo / "pkg" / "helpers.py")
    (repo / "pkg" / "weights.py").unlink()
    (repo / "pkg" / "weights.py").symlink_to("/dev/zero")
    outside = tmp_path / "outside.py"
    outside.write_text("VALUE = 1\n", encoding="utf-8")
    (repo / "tools" / "t.py").unlink()
    (repo / "pkg" / "metric.py").write_text(
        (repo / "pkg" / "metric.py").read_text(encoding="utf-8") + "import pkg.linked\n", encoding="utf-8")
    (repo / "pkg" / "linked.py").symlink_to(outside)
    result: list[CodeIdentity] = []
    thread = threading.Thread(target=lambda: result.append(identity(repo)), daemon=True)
    thread.start()
    thread.join(20)
    assert result, "reading the metric's code hung"
    assert {"pkg/helpers.py", "pkg/weights.py", "pkg/linked.py"} <= set(result[0].files)
    outside.write_text("VALUE = 2\n", encoding="utf-8")
    assert identity(repo).sha256 != result[0].sha256


def test_unparseable_and_deeply_nested_source_is_hashed_not_followed(repo: Path) -> None:
    write(repo, {"pkg/helpers.py": "def (:\n", "pkg/weights.py": "x = " + "(" * 200_000 + ")" * 200_000 + "\n"})
    found = identity(repo)
    assert "pkg/helpers.py" in found.files and "tools/t.py" not in found.files
    before = found.sha256
    write(repo, {"pkg/helpers.py": "def (:\n# edited\n"})
    assert identity(repo).sha256 != before


def test_reading_imports_nothing(repo: Path) -> None:
    marker = repo / "imported"
    write(repo, {"pkg/helpers.py": f"open({str(marker)!r}, 'w').close()\n"})
    modules = set(sys.modules)
    identity(repo)
    assert not marker.exists() and not {m for m in set(sys.modules) - modules if m.startswith(("pkg", "tools"))}


def test_declared_data_files_hostile_matches(repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A FIFO and a link out of the repository matched by a data_files glob are not hashed nor readable (no hang);
    a glob matching more than MAX_FILES paths is named in the identity and makes none of them readable."""
    import evalbot.criteria.custom_code as custom_code

    data = repo / "pkg" / "data"
    data.mkdir()
    (data / "w.txt").write_text("1", encoding="utf-8")
    os.mkfifo(data / "pipe.txt")
    outside = tmp_path / "outside.txt"
    outside.write_text("secret", encoding="utf-8")
    (data / "link.txt").symlink_to(outside)
    got = code_identity("pkg.metric", worker_path([repo]), [repo], ["pkg/data/*.txt"])
    assert "data:pkg/data/w.txt" in got.files and not any("pipe" in f or "link" in f for f in got.files)
    assert str((data / "w.txt").resolve()) in got.paths and str(outside) not in got.paths
    for i in range(5):
        (data / f"more{i}.txt").write_text(str(i), encoding="utf-8")
    monkeypatch.setattr(custom_code, "MAX_FILES", 4)
    flooded = code_identity("pkg.metric", worker_path([repo]), [repo], ["pkg/data/*.txt"])
    assert "<data truncated>" in flooded.files and not any(f.startswith("data:") for f in flooded.files)
    assert not any("/data/" in p for p in flooded.paths)
