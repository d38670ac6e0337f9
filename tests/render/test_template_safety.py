"""Comment templates: the context is plain data, and template paths stay inside the workspace."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from evalbot.errors import InputError
from evalbot.formats.lookalike import escape_lookalike
from evalbot.render import mdsafe
from evalbot.render.comment import Links, TemplateError, _context, comparison_data, plain, render_comment
from evalbot.render.context import CaseList, materialized
from evalbot.render.template_files import MAX_TEMPLATE_BYTES, comment_template_text
from evalbot.render.views import Limits
from tests.fakes.comparisons import MARKER, small

PLAIN = (str, int, float, bool, type(None))


def walk(value: Any, where: str = "context") -> None:
    """Fail on anything that is not a dict with string keys, a list or a scalar of exactly a plain type."""
    if isinstance(value, dict):
        assert type(value) is dict, where
        for k, v in value.items():
            assert type(k) is str, f"{where} key {k!r}"
            walk(v, f"{where}.{k}")
    elif isinstance(value, list | CaseList):  # a CaseList's items are made on access: each must be plain too
        assert type(value) in (list, CaseList), where
        for i, v in enumerate(value):
            walk(v, f"{where}[{i}]")
    else:
        assert isinstance(value, PLAIN) and (type(value) in PLAIN or type(value).__name__ == "Safe"), (
            f"{where} is a {type(value).__name__}"
        )


def test_template_context_holds_plain_data_only() -> None:
    """Every value a template can reach is a dict, list, string, number, bool or None (no model, no dataclass)."""
    c = small()
    context = _context(c, comparison_data(c), Limits(detailed=5, listed=5, text=100), marker=MARKER,
                       links=Links(), kind="comment")
    walk(context)
    assert context["c"]["gate"]["verdict"] == "blocked" and context["sections"][0]["cases"]


def test_comparison_data_is_the_plain_walk_of_its_dump() -> None:
    """comparison_data no longer walks the dump with ``plain``: pydantic's JSON mode must already give exactly what
    that walk gave, and only exact plain types, even when the models hold str/int subclasses, tuples or markup."""

    class Sneaky(str):
        def __html__(self) -> str:
            return str(self)

    c = small()
    c.alerts.append(Sneaky("**bold** @team <b>x</b>"))
    c.notes.append(mdsafe.Safe("[link](https://example.com)"))
    c.eval_sets[0].cases[0].reason = Sneaky("**why** <b>")
    data = materialized(comparison_data(c))
    walk(data)
    assert "Safe" not in repr({type(v).__name__ for v in _leaves(data)})
    expected = plain(c.model_dump(mode="json", exclude={"report": {"eval_sets"}}))
    for es in expected["eval_sets"]:  # the escaping comparison_data applies (ids here are visible: unchanged)
        for case in es["cases"]:
            assert case["eval_id"] == escape_lookalike(case["eval_id"])
    assert data == expected
    assert data["alerts"][-1] == "**bold** @team <b>x</b>" and type(data["alerts"][-1]) is str
    assert type(data["eval_sets"][0]["cases"][0]["reason"]) is str
    assert type(data["notes"][-1]) is str


def _leaves(value: Any) -> list[Any]:
    if isinstance(value, dict):
        return [leaf for v in value.values() for leaf in _leaves(v)]
    if isinstance(value, list):
        return [leaf for v in value for leaf in _leaves(v)]
    return [value]


def test_plain_refuses_objects() -> None:
    """An object that is not data is a bug (TypeError), never handed to a template."""
    with pytest.raises(TypeError):
        plain({"x": object()})
    with pytest.raises(TypeError):
        plain([Path(".")])


@pytest.mark.parametrize("call", [
    '{{ c.gate.parse_raw("x", allow_pickle=True) }}',
    "{{ c.policy.model_validate_json('{}') }}",
    "{{ sections[0].__class__ }}",
    "{{ limits.__dict__ }}",
])
def test_template_cannot_reach_methods(call: str) -> None:
    """Model methods and dunders are not there to call: rendering fails cleanly."""
    with pytest.raises(TemplateError):
        render_comment(small(), marker=MARKER, template=call)


def config_with(tmp_path: Path, raw: str) -> tuple[dict[str, Any], Path]:
    config = tmp_path / "evals" / "test_config.json"
    config.parent.mkdir(exist_ok=True)
    config.write_text("{}", encoding="utf-8")
    return {"comment_template": raw}, config


def refused(tmp_path: Path, raw: str, match: str) -> None:
    settings, config = config_with(tmp_path, raw)
    with pytest.raises(InputError, match=match) as info:
        comment_template_text(None, settings, config, root=tmp_path)
    assert info.value.pointer == "/evalbot/comment_template"


def test_absolute_and_parent_paths_are_refused(tmp_path: Path) -> None:
    """``/proc/self/environ`` and ``../..`` climbs are refused before anything is opened."""
    refused(tmp_path, "/proc/self/environ", "refused")
    refused(tmp_path, "../../../../proc/self/environ", "refused")
    refused(tmp_path, "sub/../../x.j2", "refused")
    with pytest.raises(InputError, match="refused"):
        comment_template_text("../x", {}, None, root=tmp_path, input_name="comment-template")


def test_symlink_leaving_the_workspace_is_refused(tmp_path: Path) -> None:
    """A template symlinked to a file outside the workspace (or to /proc/self/environ) is refused."""
    root = tmp_path / "ws"
    root.mkdir()
    outside = tmp_path / "secret.txt"
    outside.write_text("TOKEN=ghs_secret", encoding="utf-8")
    settings, config = config_with(root, "t.j2")
    (root / "evals" / "t.j2").symlink_to(outside)
    with pytest.raises(InputError, match="outside the workspace") as info:
        comment_template_text(None, settings, config, root=root)
    assert "ghs_secret" not in str(info.value)
    (root / "evals" / "e.j2").symlink_to("/proc/self/environ")
    with pytest.raises(InputError, match="outside the workspace"):
        comment_template_text(None, {"comment_template": "e.j2"}, config, root=root)


def test_symlink_inside_the_workspace_is_followed(tmp_path: Path) -> None:
    """A symlink that stays inside the workspace is fine."""
    settings, config = config_with(tmp_path, "t.j2")
    (tmp_path / "real.j2").write_text("hello {{ title }}", encoding="utf-8")
    (tmp_path / "evals" / "t.j2").symlink_to(tmp_path / "real.j2")
    assert comment_template_text(None, settings, config, root=tmp_path) == "hello {{ title }}"


def test_fifo_and_devices_are_refused_without_blocking(tmp_path: Path) -> None:
    """A FIFO would block a plain read forever; it is refused as not a regular file. So is a device."""
    settings, config = config_with(tmp_path, "pipe.j2")
    os.mkfifo(tmp_path / "evals" / "pipe.j2")
    with pytest.raises(InputError, match="not a regular file"):
        comment_template_text(None, settings, config, root=tmp_path)
    (tmp_path / "evals" / "null.j2").symlink_to("/dev/null")
    with pytest.raises(InputError, match="outside the workspace"):
        comment_template_text(None, {"comment_template": "null.j2"}, config, root=tmp_path)
    with pytest.raises(InputError, match="not a regular file"):
        comment_template_text("/dev/zero", {}, None, root=tmp_path)  # even a path the local user typed


def test_huge_and_binary_templates_are_refused(tmp_path: Path) -> None:
    settings, config = config_with(tmp_path, "big.j2")
    (tmp_path / "evals" / "big.j2").write_bytes(b"x" * (MAX_TEMPLATE_BYTES + 1))
    with pytest.raises(InputError, match="limit"):
        comment_template_text(None, settings, config, root=tmp_path)
    (tmp_path / "evals" / "bin.j2").write_bytes(b"\xff\xfe\x00")
    with pytest.raises(InputError, match="UTF-8"):
        comment_template_text(None, {"comment_template": "bin.j2"}, config, root=tmp_path)
    with pytest.raises(InputError, match="expected a path"):
        comment_template_text(None, {"comment_template": {"a": 1}}, config, root=tmp_path)
