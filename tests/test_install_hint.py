"""An error about a missing optional extra prints the install command that fits how evalbot was installed.

The installation is found as Python finds it: a ``*.dist-info`` folder with its ``METADATA`` and, when pip wrote one,
its ``direct_url.json`` (PEP 610), made here in a temporary folder for each way of installing.
"""

from __future__ import annotations

import json
import re
import shlex
import sys
from pathlib import Path
from typing import Any

import pytest

from evalbot import __version__
from evalbot.errors import REPOSITORY, install_command, install_hint


def dist_info(folder: Path, direct_url: dict[str, Any] | str | None, version: str = "0.3.1") -> list[str]:
    """An evalbot installation's metadata in ``folder``, as pip leaves it; the search path that finds it."""
    meta = folder / f"evalbot-{version}.dist-info"
    meta.mkdir(parents=True)
    (meta / "METADATA").write_text(f"Metadata-Version: 2.1\nName: evalbot\nVersion: {version}\n", encoding="utf-8")
    (meta / "INSTALLER").write_text("pip\n", encoding="utf-8")
    if direct_url is not None:
        text = direct_url if isinstance(direct_url, str) else json.dumps(direct_url)
        (meta / "direct_url.json").write_text(text, encoding="utf-8")
    return [str(folder)]


def requirement(command: str) -> list[str]:
    """The command's arguments after ``-m pip install``, as a shell splits them."""
    words = shlex.split(command)
    assert words[:4] == [sys.executable, "-m", "pip", "install"], command
    return words[4:]


def test_a_clone_installed_in_place_gets_an_editable_install_of_the_same_clone(tmp_path: Path) -> None:
    clone = tmp_path / "my clone"  # a space: the path is quoted
    path = dist_info(tmp_path / "site", {"url": clone.as_uri(), "dir_info": {"editable": True}})
    assert requirement(install_hint("openai", path)) == ["-e", f"{clone}[openai]"]


def test_a_clone_installed_as_a_copy_gets_the_same_folder(tmp_path: Path) -> None:
    path = dist_info(tmp_path / "site", {"url": "file:///src/evalbot", "dir_info": {}})
    assert requirement(install_hint("adk", path)) == ["/src/evalbot[adk]"]


@pytest.mark.parametrize(("vcs", "expected"), [
    ({"vcs": "git", "requested_revision": "v0", "commit_id": "a" * 40}, "@v0"),  # the tag the user asked for
    ({"vcs": "git", "commit_id": "b" * 40}, "@" + "b" * 40),  # no tag asked: the commit installed
])
def test_a_git_install_gets_the_same_repository_and_revision(tmp_path: Path, vcs: dict[str, str],
                                                             expected: str) -> None:
    path = dist_info(tmp_path / "site", {"url": "https://github.com/me/evalbot-fork", "vcs_info": vcs})
    assert requirement(install_hint("openai", path)) == [
        f"evalbot[openai] @ git+https://github.com/me/evalbot-fork{expected}"]


def test_an_archive_install_gets_the_same_archive(tmp_path: Path) -> None:
    url = "https://example.com/dist/evalbot-0.3.1-py3-none-any.whl"
    path = dist_info(tmp_path / "site", {"url": url, "archive_info": {"hashes": {"sha256": "0" * 64}}})
    assert requirement(install_hint("openai", path)) == [f"evalbot[openai] @ {url}"]


def test_an_index_install_gets_the_same_version(tmp_path: Path) -> None:
    path = dist_info(tmp_path / "site", None)
    assert requirement(install_hint("adk", path)) == ["evalbot[adk]==0.3.1"]


@pytest.mark.parametrize("garbage", ["{not json", "[1, 2]", '{"url": 5}'])
def test_an_unreadable_direct_url_is_not_trusted(tmp_path: Path, garbage: str) -> None:
    """A broken or odd direct_url.json gives the release tag's line, never a crash or a made-up path."""
    path = dist_info(tmp_path / "site", garbage)
    hint = install_hint("openai", path)
    assert requirement(hint) in (["evalbot[openai]==0.3.1"], [f"evalbot[openai] @ git+{REPOSITORY}@v0"])


def test_a_clones_build_metadata_is_not_taken_for_the_installation(tmp_path: Path) -> None:
    """Run from a clone's top folder, ``evalbot.egg-info`` (left there by the editable build) comes first on the
    path; the installation is the one an installer recorded further along (found in the real venv of a clone: the
    hint said ``evalbot[openai]==0.1.0``, an index install, instead of the clone)."""
    clone = tmp_path / "clone"
    egg = clone / "evalbot.egg-info"
    egg.mkdir(parents=True)
    (egg / "PKG-INFO").write_text("Metadata-Version: 2.1\nName: evalbot\nVersion: 0.3.1\n", encoding="utf-8")
    site = dist_info(tmp_path / "site", {"url": clone.as_uri(), "dir_info": {"editable": True}})
    assert requirement(install_hint("openai", [str(clone), *site])) == ["-e", f"{clone}[openai]"]
    # the build metadata alone: no installation, so the running source tree's or the release tag's line
    alone = requirement(install_hint("openai", [str(clone)]))
    assert alone[0] == "-e" or alone == [f"evalbot[openai] @ git+{REPOSITORY}@v{__version__.split('.')[0]}"]


def test_not_installed_from_a_source_tree_gets_that_tree_and_elsewhere_the_release_tag() -> None:
    assert install_command("openai", direct_url=None, installed=False, version="2.4.0", python="py",
                           source_root=Path("/src/evalbot")) == 'py -m pip install -e "/src/evalbot[openai]"'
    # the Action's image: the source copied, not installed, no pyproject.toml beside it
    assert install_command("adk", direct_url=None, installed=False, version="2.4.0", python="py") == \
        f'py -m pip install "evalbot[adk] @ git+{REPOSITORY}@v2"'


def test_the_hint_of_this_environment_follows_its_installation() -> None:
    """Here: whatever this test environment is (an editable clone in CI and the quickstart), the hint runs this
    interpreter's pip and names the extra; the release tag's line matches the docs' install line."""
    hint = install_hint("openai")
    assert requirement(hint)[-1].endswith("[openai]") or "evalbot[openai]" in requirement(hint)[-1]
    tagged = install_command("openai", direct_url=None, installed=False, version=__version__, python="python")
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    assert re.sub(r"^python -m pip install ", "", tagged) in readme
