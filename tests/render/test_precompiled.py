"""evalbot's templates loaded from their precompiled code (render.precompiled): the file is fresh, it is used only
for the text and settings it was made from, and what renders is the same either way."""

from __future__ import annotations

import json
import runpy
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jinja2
import pytest

from evalbot.render import html, precompiled
from evalbot.render.comment import CUSTOM_TEMPLATE, render_comment, render_summary
from evalbot.render.html import render_html
from tests.fakes.comparisons import LINKS, MARKER, small

ROOT = Path(__file__).resolve().parents[2]
MARKDOWN = ("comment.md.j2", "macros.md.j2", "summary.md.j2", "unmeasured.md.j2")
PAGE = ("report.html.j2", "report.css.j2", "report.js.j2")


@pytest.fixture(autouse=True)
def _fresh_caches() -> Iterator[None]:
    """Each test reads the table and builds the HTML environment afresh, and leaves them fresh for the others."""
    for cached in (precompiled.table, html.environment, html.asset):
        cached.cache_clear()
    yield
    for cached in (precompiled.table, html.environment, html.asset):
        cached.cache_clear()


def _outputs() -> tuple[str, str, str]:
    comparison = small()
    return (render_comment(comparison, marker=MARKER, links=LINKS), render_summary(comparison, links=LINKS),
            render_html(comparison))


def _compiling(monkeypatch: pytest.MonkeyPatch, allowed: tuple[str, ...] = ()) -> list[str]:
    """Record the names of the templates Jinja compiles from their text; compiling any but ``allowed`` fails."""
    compiled: list[str] = []
    original = jinja2.Environment.compile

    def spy(self: jinja2.Environment, source: str, name: str | None = None, *args: Any, **kwargs: Any) -> Any:
        compiled.append(str(name))
        if name not in allowed:
            raise AssertionError(f"{name} compiled from its text")
        return original(self, source, name, *args, **kwargs)

    monkeypatch.setattr(jinja2.Environment, "compile", spy)
    return compiled


def test_the_precompiled_file_is_fresh() -> None:
    """The shipped file holds the code Jinja generates now from every template of both environments (the script's
    --check; a stale file fails here, never at run time, where it is only ignored)."""
    script = runpy.run_path(str(ROOT / "scripts" / "precompile_templates.py"), run_name="check")
    assert script["main"](["precompile_templates.py", "--check"]) == 0
    assert sorted(precompiled.table()) == sorted(MARKDOWN + PAGE)


def test_evalbot_templates_render_without_compiling_their_text(monkeypatch: pytest.MonkeyPatch) -> None:
    """With the file fresh, the comment, the summary and the HTML page render without Jinja compiling any of
    evalbot's templates, and render exactly what the compiled templates render."""
    monkeypatch.setattr(precompiled, "PRECOMPILED", Path("/nonexistent/precompiled.json"))
    expected = _outputs()  # compiled from the text: no table
    monkeypatch.undo()
    precompiled.table.cache_clear()
    html.environment.cache_clear()
    html.asset.cache_clear()
    compiled = _compiling(monkeypatch)
    assert _outputs() == expected
    assert compiled == []


@pytest.mark.parametrize("stale", ["source", "key"])
def test_a_stale_entry_is_compiled_from_the_text(monkeypatch: pytest.MonkeyPatch, stale: str) -> None:
    """An entry made from another text (an edited template) or under other settings (another Jinja, another
    environment) is not used: the template is compiled from its text, and renders what it says, not the entry's
    code (here another template's)."""
    good = precompiled.table()
    forged = {name: {**entry, stale: "0" * 64} for name, entry in good.items()}
    forged["comment.md.j2"]["code"] = good["unmeasured.md.j2"]["code"]
    expected = render_comment(small(), marker=MARKER, links=LINKS)
    monkeypatch.setattr(precompiled, "table", lambda: forged)
    compiled = _compiling(monkeypatch, allowed=MARKDOWN)
    assert render_comment(small(), marker=MARKER, links=LINKS) == expected
    assert compiled == ["comment.md.j2", "macros.md.j2"]


def test_a_user_template_is_compiled_and_extends_the_precompiled_default(monkeypatch: pytest.MonkeyPatch) -> None:
    """A user's comment template never comes from the file: it is compiled from its text, while the default it
    extends is loaded precompiled."""
    compiled = _compiling(monkeypatch, allowed=(CUSTOM_TEMPLATE,))
    tpl = '{% extends "comment.md.j2" %}{% block verdict %}## Agent check: {{ c.gate.verdict }}\n{% endblock %}'
    text = render_comment(small(), marker=MARKER, template=tpl)
    assert compiled == [CUSTOM_TEMPLATE]
    assert "## Agent check: blocked" in text and "#### orders" in text


@pytest.mark.parametrize("content", ["", "not json", "[]", '{"templates": []}',
                                     '{"templates": {"comment.md.j2": {"key": 1, "source": "x", "code": "y"}}}'])
def test_an_unreadable_file_is_no_table(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, content: str) -> None:
    """A missing, truncated or malformed file (a broken install) gives no entry: every template is compiled, and
    the outputs are the same."""
    path = tmp_path / "precompiled.json"
    path.write_text(content, encoding="utf-8")
    expected = _outputs()
    precompiled.table.cache_clear()
    html.environment.cache_clear()
    html.asset.cache_clear()
    monkeypatch.setattr(precompiled, "PRECOMPILED", path)
    assert precompiled.table() == {}
    assert _outputs() == expected


def test_the_key_follows_the_settings_jinja_generates_code_from() -> None:
    """Environments that generate different code for the same text have different keys; the same settings, the
    same key."""
    base = {"trim_blocks": True, "lstrip_blocks": True}
    key = precompiled.compile_key(jinja2.Environment(**base))  # type: ignore[arg-type]
    assert key == precompiled.compile_key(jinja2.Environment(**base))  # type: ignore[arg-type]
    for other in ({"trim_blocks": False}, {"autoescape": True}, {"keep_trailing_newline": True},
                  {"finalize": str}, {"variable_start_string": "[["}):
        assert precompiled.compile_key(jinja2.Environment(**{**base, **other})) != key  # type: ignore[arg-type]
    assert precompiled.compile_key(jinja2.sandbox.SandboxedEnvironment(**base)) != key  # type: ignore[arg-type]
    assert json.loads(precompiled.PRECOMPILED.read_text(encoding="utf-8"))["jinja2"] == jinja2.__version__
