"""Comment templates render within a time and work budget (evalbot.render.bounded; issue 24, item 6)."""

from __future__ import annotations

import threading
import time

import jinja2
import pytest

from evalbot.render.bounded import RenderBudget
from evalbot.render.comment import TemplateError, _render, environment


def _run(source: str, seconds: float = 1.0, **context: object) -> str:
    env = environment()
    env.budget = RenderBudget(seconds=seconds)
    env.loader = jinja2.DictLoader({"t.md.j2": source})
    return _render(env, "t.md.j2", context)


@pytest.mark.parametrize(("source", "message"), [
    ("{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}",
     "range() would yield more than 1,000,000 items"),
    ("{% for i in range(100000) %}{% for j in range(9) %}{{ j }}{% endfor %}{% endfor %}", "longer than 1 s"),
    ("{{ 'x' * 10**9 }}", "a repeated string or list longer than 1,000,000"),
    ("{{ [0] * 10**7 }}", "a repeated string or list longer than 1,000,000"),
    ("{{ 2 ** 100000000 }}", "exponentiation too large"),
    ("{{ n ** 5000 }}", "exponentiation too large"),
    ("{% set xs = [1] * 1000 %}{% for a in xs %}{% for b in xs %}{% for c in xs %}{% endfor %}{% endfor %}"
     "{% endfor %}", "longer than 1 s"),  # no hook runs in the innermost loop: the alarm stops it
])
def test_expensive_templates_fail_cleanly_and_quickly(source: str, message: str) -> None:
    started = time.monotonic()
    with pytest.raises(TemplateError, match="RenderLimit") as caught:
        _run(source, n=3)
    assert message in str(caught.value)
    assert time.monotonic() - started < 5


def test_ordinary_templates_are_untouched() -> None:
    assert _run("{{ range(3)|list }} {{ 2 ** 10 }} {{ 'ab' * 3 }} {{ [1] + [2] }} {{ 'a' + 'b' }}") == \
        "[0, 1, 2] 1024 ababab [1, 2] ab"
    assert _run("{% for i in range(1000) %}{% endfor %}{{ range(999000)|length }}") == "999000"


def test_off_the_main_thread_the_hooks_still_stop_a_render() -> None:
    """No SIGALRM there (Python delivers signals to the main thread): output, lookups and range steps check the
    clock."""
    result: list[BaseException | str] = []

    def work() -> None:
        try:
            result.append(_run("{% for i in range(100000) %}{% for j in range(9) %}{{ j }}{% endfor %}{% endfor %}"))
        except BaseException as exc:  # the assertion below looks at it
            result.append(exc)

    thread = threading.Thread(target=work)
    thread.start()
    thread.join(10)
    assert not thread.is_alive() and isinstance(result[0], TemplateError) and "longer than 1 s" in str(result[0])
