"""The documentation pages stay true to the code and to each other.

- README.md stays short (at most 200 lines), keeps its two-command quickstart in the shape .ci/run parses, and its
  sample comment is what the quickstart's command prints.
- docs/config.md has one row for every key of the config's ``evalbot`` section the code accepts (the keys are read
  from the code's model of the section, ``GatePolicy`` plus the non-policy settings), with the code's defaults, real
  CLI flags and real Action inputs.
- Every relative link between the pages points at a file that exists and, with ``#anchor``, at a heading there.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from ruamel.yaml import YAML

from evalbot.cli.commands import main
from evalbot.compare.baseline import DEFAULT_BASELINE_PATH
from evalbot.compare.gate import POLICY_KEYS, SETTINGS_KEYS, GatePolicy

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
PAGES = ["README.md", "SECURITY.md", "CONTRIBUTING.md", "CHANGELOG.md", *sorted(p.relative_to(ROOT).as_posix()
                                                                for p in (ROOT / "docs").glob("*.md"))]


# --- the README ---

def test_the_readme_is_short() -> None:
    assert len(README.splitlines()) <= 200


def quickstart() -> list[str]:
    """The quickstart block's commands, as .ci/run reads them (lines between the markers, fences and comments out)."""
    block = README[README.index("<!-- quickstart:begin -->") : README.index("<!-- quickstart:end -->")]
    return [line for line in block.splitlines()[1:] if not line.startswith(("<!--", "```")) and line.strip()]


def test_the_quickstart_is_two_commands_the_first_without_dev_extras() -> None:
    """.ci/run runs exactly two commands: the example (a fresh .venv, evalbot alone) and the test suite."""
    first, second = quickstart()
    assert first.startswith("python3 -m venv .venv && .venv/bin/python -m pip install -q -e . && .venv/bin/evalbot "
                            "compare ")
    assert "[dev]" not in first and "--judge-replay" in first
    assert '"[dev]"' in second or "'[dev]'" in second or ".[dev]" in second
    assert "pytest" in second
    said = re.search(r"takes about (\d+) minutes on 2 cores", " ".join(README.split()))  # the suite's duration, said
    assert said and int(said[1]) <= 5, "the README must say how long the suite takes (issue 39: at most 5 minutes)"


def test_the_sample_comment_is_what_the_quickstart_prints(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    """Each line of the README's abridged comment is a line of the comment the quickstart's command writes."""
    sample = README[README.index("<!-- comment-sample:begin -->") : README.index("<!-- comment-sample:end -->")]
    lines = [line.removeprefix(">").strip() for line in sample.splitlines()[1:]]
    lines = [line.replace("**", "") for line in lines if line and not line.startswith("```")]
    assert len(lines) >= 6
    args = quickstart()[0].split(".venv/bin/evalbot ", 1)[1].split()
    monkeypatch.chdir(ROOT)
    assert main([*args, "--comment", str(tmp_path / "c.md")], env={}) == 1
    capsys.readouterr()
    comment = (tmp_path / "c.md").read_text(encoding="utf-8")
    shown = {" ".join(re.sub(r"</?(?:b|summary|details)[^>]*>", "", line).replace("**", "").split())
             for line in comment.splitlines()}
    missing = [line for line in lines if " ".join(line.split()) not in shown]
    assert missing == [], "README's sample comment differs from the example's comment"


# --- docs/config.md ---

def config_rows(page: str | None = None) -> dict[str, list[str]]:
    """The rows of docs/config.md's key table (or of ``page``), by key."""
    page = (ROOT / "docs" / "config.md").read_text(encoding="utf-8") if page is None else page
    table = page[page.index("<!-- config-keys:begin -->") : page.index("<!-- config-keys:end")]
    rows = [line for line in table.splitlines() if line.startswith("| `")]
    out: dict[str, list[str]] = {}
    for row in rows:
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", row.strip().strip("|"))]
        key = cells[0].strip("`")
        assert key not in out, f"docs/config.md lists {key} twice"
        out[key] = cells
    return out


def unlisted(rows: dict[str, list[str]]) -> list[str]:
    """The keys the code accepts that ``rows`` lack."""
    return sorted(SETTINGS_KEYS - set(rows))


def test_config_page_lists_every_key_the_code_accepts() -> None:
    """Derived from the code: the section's model (GatePolicy's fields) plus the settings that are not policy."""
    assert set(GatePolicy.model_fields) == POLICY_KEYS and POLICY_KEYS < SETTINGS_KEYS
    rows = config_rows()
    assert unlisted(rows) == [], "keys the code accepts but docs/config.md does not list"
    assert sorted(set(rows) - SETTINGS_KEYS) == [], "keys docs/config.md lists but the code refuses"
    for cells in rows.values():
        assert len(cells) == 5 and all(cells), cells


def test_config_page_defaults_are_the_codes() -> None:
    rows = config_rows()
    for key in POLICY_KEYS:
        default = GatePolicy.model_fields[key].get_default(call_default_factory=True)
        shown = re.match(r"`([^`]+)`", rows[key][1])
        assert shown is not None and json.loads(shown.group(1)) == default, (key, rows[key][1], default)
    assert rows["baseline_path"][1] == f'`"{DEFAULT_BASELINE_PATH}"`'


def test_config_page_flags_and_inputs_exist(capsys: pytest.CaptureFixture[str]) -> None:
    helps = ""
    for command in ("run", "baseline", "compare", "merge"):
        with pytest.raises(SystemExit):
            main([command, "--help"], env={})
        helps += capsys.readouterr().out
    inputs = set(YAML(typ="safe").load((ROOT / "action.yml").read_text(encoding="utf-8"))["inputs"])
    flags = {f for cells in config_rows().values() for f in re.findall(r"`(--[a-z-]+)`", cells[3])}
    named = {i for cells in config_rows().values() for i in re.findall(r"`([a-z-]+)`", cells[4])}
    assert len(flags) >= 8 and len(named) >= 8
    assert sorted(f for f in flags if not re.search(rf"(?<![\w-]){re.escape(f)}(?![\w-])", helps)) == []
    assert sorted(named - inputs) == []


def test_a_missing_key_is_named() -> None:
    """The check is not vacuous: a page without a row for a key the code accepts fails, naming the key."""
    page = (ROOT / "docs" / "config.md").read_text(encoding="utf-8")
    without = "\n".join(line for line in page.splitlines() if not line.startswith("| `rerun_flipped`"))
    assert unlisted(config_rows(page)) == []
    assert unlisted(config_rows(without)) == ["rerun_flipped"]


# --- links between the pages ---

def anchors(text: str) -> set[str]:
    """GitHub's anchors for a page's headings (lowercased, punctuation dropped, spaces to hyphens)."""
    text = re.sub(r"^```.*?^```", "", text, flags=re.M | re.S)
    found = set()
    for heading in re.findall(r"^#{1,6} (.+)$", text, re.M):
        slug = re.sub(r"[^\w\- ]", "", heading.strip().lower().replace("`", "")).replace(" ", "-")
        found.add(slug)
    return found


def broken_links(file: Path) -> list[str]:
    """The relative links of ``file`` whose target file or ``#anchor`` does not exist."""
    text = file.read_text(encoding="utf-8")
    broken = []
    for target in re.findall(r"\]\(([^)\s]+)\)", re.sub(r"^```.*?^```", "", text, flags=re.M | re.S)):
        if re.match(r"[a-z]+:", target):
            continue
        path, _, anchor = target.partition("#")
        linked = file.parent / path if path else file
        if not linked.exists():
            broken.append(f"{target}: no such file")
        elif anchor and linked.suffix == ".md" and anchor not in anchors(linked.read_text(encoding="utf-8")):
            broken.append(f"{target}: no heading with that anchor")
    return broken


@pytest.mark.parametrize("page", PAGES)
def test_relative_links_resolve(page: str) -> None:
    assert broken_links(ROOT / page) == []


def test_a_broken_link_is_found(tmp_path: Path) -> None:
    (tmp_path / "other.md").write_text("# Other page\n\n## The `x` flag, in short\n", encoding="utf-8")
    page = tmp_path / "page.md"
    page.write_text("[a](other.md#the-x-flag-in-short) [b](other.md#nope) [c](missing.md) [d](#here) "
                    "[e](https://example.com/#x)\n\n## Here\n\n```sh\n[f](nowhere.md)\n```\n", encoding="utf-8")
    assert broken_links(page) == ["other.md#nope: no heading with that anchor", "missing.md: no such file"]
