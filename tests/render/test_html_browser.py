"""The HTML report in real headless Chromium: rendered DOM, filters with and without JavaScript, search, and a
hostile ``<script>`` in an agent answer that must not run. Skipped (with the reason) when no Chromium is installed;
.ci/run installs Debian's ``chromium`` when apt is available. ``EVALBOT_CHROMIUM`` picks a binary.

A screenshot is saved under the test's tmp directory; ``EVALBOT_HTML_SCREENSHOT=PATH`` also copies it there (that
is how docs/html-report.png is made).
"""

from __future__ import annotations

import json
import os
import random
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from evalbot.compare.delta import compare
from evalbot.compare.model import Comparison
from evalbot.render.html import CHART_HEIGHT, CHART_WIDTH, render_html
from tests.fakes.chromium import Browser, browser, dump_dom, find_browser
from tests.fakes.comparisons import REFUND, small
from tests.fakes.reports import RESP, TRAJ, case, eval_set, metric, report, turn

BINARY = find_browser()
pytestmark = pytest.mark.skipif(BINARY is None, reason="no Chromium found (apt-get install chromium, or set "
                                "EVALBOT_CHROMIUM to a Chrome/Chromium binary)")
ATTACK = ('<script>document.title="pwned";document.documentElement.setAttribute("data-pwned","1")</script>'
          '<img src=x onerror="document.documentElement.setAttribute(\'data-pwned\',\'2\')">')


def page_with_attack() -> str:
    """The small comparison plus a failing case whose agent answer carries a script and an onerror handler."""
    c = small()
    attacked = report(eval_set("attack", [case("hostile_answer", {TRAJ: metric(0.0), RESP: metric(0.1, 0.6)}, turns=[
        turn(expected_calls=REFUND, actual_calls=REFUND[:1], actual_response=ATTACK)])]))
    extra = compare(current=attacked, baseline=None, policy=c.policy).eval_sets
    return render_html(c.model_copy(update={"eval_sets": [*c.eval_sets, *extra]}))


@pytest.fixture
def report_file(tmp_path: Path) -> Path:
    path = tmp_path / "report.html"
    path.write_text(page_with_attack(), encoding="utf-8")
    return path


@pytest.fixture
def chrome() -> Iterator[Browser]:
    assert BINARY is not None
    with browser(BINARY, width=1280, height=1000) as b:
        yield b


VISIBLE = ("JSON.stringify(Array.from(document.querySelectorAll('.case'))"
           ".filter(c => getComputedStyle(c).display !== 'none').map(c => c.querySelector('.cid').textContent))")


def visible(chrome: Browser) -> list[str]:
    import json

    return list(json.loads(chrome.evaluate(VISIBLE)))


def test_dump_dom_shows_the_regression_the_diff_and_the_filters(report_file: Path) -> None:
    """What --dump-dom prints after load: the regressed case, the argument diff, the filters, the attack as text."""
    assert BINARY is not None
    dom = dump_dom(BINARY, report_file.as_uri())
    assert 'class="case c-regressed t-regressed t-failing" open=""' in dom
    assert '<span class="cid">refund_damaged</span>' in dom
    assert "<code>amount</code>: <del>25.0</del> → <ins>250.0</ins>" in dom
    for key in ("all", "regressed", "fixed", "failing", "inconclusive"):
        assert f'<label for="f-{key}" class="fl" id="l-{key}">' in dom
    assert "data-pwned" not in dom.split("<body>")[0] and "<title>evalbot: blocked" in dom
    assert "&lt;script&gt;document.title=\"pwned\"" in dom
    assert '<input type="search" id="q"' in dom and 'id="q" placeholder="Search cases (id, text, tool)…" ' \
        'aria-label="Search cases">' in dom  # our script (allowed by its hash) un-hid the search box


def test_filters_search_and_the_attack_in_a_live_page(report_file: Path, chrome: Browser, tmp_path: Path) -> None:
    chrome.open(report_file.as_uri())
    assert chrome.evaluate("document.title").startswith("evalbot: blocked")
    assert chrome.evaluate("document.documentElement.getAttribute('data-pwned')") is None
    assert "<script>document.title" in chrome.evaluate(
        "Array.from(document.querySelectorAll('pre.a')).map(p => p.textContent).join('\\n')")
    everything = ["refund_damaged", "store_hours", "gift_card", "track_package", "cancel", "hostile_answer"]
    assert visible(chrome) == everything
    clicks = {"regressed": ["refund_damaged"], "fixed": ["track_package"], "inconclusive": ["store_hours"],
              "failing": ["refund_damaged", "store_hours", "gift_card", "hostile_answer"], "all": everything}
    for key, shown in clicks.items():
        chrome.evaluate(f"document.getElementById('l-{key}').click()")
        assert visible(chrome) == shown, key
    # the search box (the optional script) narrows the list; words must all match
    chrome.evaluate("var q = document.getElementById('q'); q.value = 'REFUND 250'; "
                    "q.dispatchEvent(new Event('input'))")
    deadline = time.monotonic() + 5
    while visible(chrome) != ["refund_damaged"] and time.monotonic() < deadline:
        time.sleep(0.05)
    assert visible(chrome) == ["refund_damaged"]
    assert chrome.evaluate("document.getElementById('qn').textContent") == "1 of 6 match"
    chrome.evaluate("q.value = ''; q.dispatchEvent(new Event('input'))")
    deadline = time.monotonic() + 5
    while chrome.evaluate("document.getElementById('qn').textContent") and time.monotonic() < deadline:
        time.sleep(0.05)
    assert len(visible(chrome)) == 6
    chrome.evaluate("document.getElementById('l-regressed').click(); document.activeElement.blur(); "
                    "window.scrollTo(0, 0)")
    shot = tmp_path / "html-report.png"
    chrome.call("Emulation.setDeviceMetricsOverride", {"width": 1280, "height": 1000, "deviceScaleFactor": 1,
                                                       "mobile": False})
    chrome.screenshot(shot)
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 10_000
    if os.environ.get("EVALBOT_HTML_SCREENSHOT"):
        shutil.copyfile(shot, os.environ["EVALBOT_HTML_SCREENSHOT"])


def test_filters_work_with_javascript_off(report_file: Path, chrome: Browser) -> None:
    """Radio buttons and CSS alone: the filters work, the search box (script-only) stays hidden."""
    chrome.call("Emulation.setScriptExecutionDisabled", {"value": True})
    chrome.open(report_file.as_uri())
    assert chrome.evaluate("document.getElementById('q').hidden") is True
    chrome.call("Emulation.setScriptExecutionDisabled", {"value": False})  # DevTools may evaluate; the page may not
    assert chrome.evaluate("document.getElementById('q').hidden") is True
    chrome.evaluate("document.getElementById('l-inconclusive').click()")
    assert visible(chrome) == ["store_hours"]


def test_the_csp_blocks_a_script_that_escaping_missed(tmp_path: Path, chrome: Browser) -> None:
    """Defence in depth: a script element spliced into the page (as if escaping had failed) does not run, nor does
    an inline handler, while the page's own hashed script still does."""
    page = page_with_attack().replace(
        "</main>", '<script>document.title="csp-bypassed"</script><img src=x onerror="document.title=\'csp-img\'">'
        "</main>", 1)
    path = tmp_path / "spliced.html"
    path.write_text(page, encoding="utf-8")
    chrome.open(path.as_uri())
    assert chrome.evaluate("document.title").startswith("evalbot: blocked")
    assert chrome.evaluate("document.getElementById('q').hidden") is False


def test_trend_charts_render_as_svg_with_hostile_names(tmp_path: Path, chrome: Browser) -> None:
    """The sparklines are real SVG in the browser (laid out, with an accessible name from their title), and markup
    in an eval set's or criterion's name stays text: no element, no script, nothing loaded."""
    import json

    from evalbot.results import Report
    from tests.fakes.reports import criterion, main_refreshes

    evil = ATTACK.replace("pwned", "pwned-trend")

    def run(resp: float, failing: bool) -> Report:
        return report(eval_set(evil, [case("c1", {TRAJ: metric(0.0 if failing else 1.0), evil: metric(resp, 0.5)}),
                                      case("c2", {TRAJ: metric(1.0), evil: metric(resp, 0.5)})],
                               criteria=[criterion(TRAJ), criterion(evil, 0.5)]))

    main = main_refreshes([run(0.4 + i / 20, failing=i % 2 == 1) for i in range(12)])
    path = tmp_path / "trend.html"
    path.write_text(render_html(compare(current=run(0.3, failing=False), baseline=main, policy=small().policy)),
                    encoding="utf-8")
    chrome.open(path.as_uri())
    found = json.loads(chrome.evaluate("""JSON.stringify(Array.from(document.querySelectorAll('svg.spark')).map(s => {
        const box = s.getBoundingClientRect();
        return {ns: s.namespaceURI, w: box.width, h: box.height, title: s.querySelector(':scope > title').textContent,
                dots: s.querySelectorAll('circle.pt').length, now: s.querySelectorAll('circle.now').length,
                thr: s.querySelectorAll('line.thr').length, inner: s.getBBox().width};
    }))"""))
    assert len(found) == 2
    for chart in found:
        assert chart["ns"] == "http://www.w3.org/2000/svg" and chart["w"] == CHART_WIDTH and chart["h"] == CHART_HEIGHT
        assert chart["dots"] == 10 and chart["now"] == 1 and chart["thr"] == 1 and chart["inner"] > 100
    assert any(c["title"].startswith(evil) for c in found)  # the name as text, markup and all
    assert chrome.evaluate("document.documentElement.getAttribute('data-pwned-trend')") is None
    assert chrome.evaluate("document.querySelectorAll('img, svg script, svg foreignObject').length") == 0
    assert chrome.evaluate("document.querySelectorAll('script').length") == 1  # the page's own
    tree = chrome.call("Accessibility.getFullAXTree")["nodes"]
    names = [n.get("name", {}).get("value", "") for n in tree if n.get("role", {}).get("value") == "image"]
    assert sum(name.endswith(": mean on main over the last 10 refreshes, and this run") for name in names) == 2
    glyphs = chrome.evaluate("Array.from(document.querySelectorAll('.case .h')).map(h => "
                             "getComputedStyle(h, '::before').content + h.textContent).join('|')")
    assert sorted(glyphs.split("|")) == ['"on main "✓✓✓✓✓✓✓✓✓✓', '"on main "✓✗✓✗✓✗✓✗✓✗']  # the label is CSS


SIGNATURE = """JSON.stringify(Array.from(document.querySelectorAll('.case')).map(c => {
  const out = [c.querySelector('.cid').textContent];
  (function walk(n) {
    for (let e = n.firstElementChild; e; e = e.nextElementSibling) {
      const own = Array.from(e.childNodes).filter(x => x.nodeType === 3).map(x => x.data).join('')
        .replace(/\\s+/g, ' ').trim();
      out.push(e.tagName + '.' + e.className + ':' + own);
      walk(e);
    }
  })(c.querySelector('.body'));
  return out;
}))"""
OPEN_ALL = "document.querySelectorAll('.case').forEach(c => { c.open = true; })"
LISTED = "document.querySelectorAll('.more .tail, .more > .note').length === 0"
"""Every case the script lists (those that do not fail, beyond the markup budget) is in the page."""
BUILT = "Array.from(document.querySelectorAll('.body')).every(b => b.firstElementChild !== null)"


def wait_for(chrome: Browser, expression: str, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not chrome.evaluate(expression):
        assert time.monotonic() < deadline, f"timed out waiting for {expression}"
        time.sleep(0.05)


def test_details_built_on_open_are_the_markup_element_for_element(tmp_path: Path, chrome: Browser) -> None:
    """The same comparison rendered with every case as markup and with every deferrable case as data: once every
    case is opened, each case's body has the same elements, classes and text in both pages; the hostile answer
    (in a deferred case) stays text and runs nothing."""
    c = small()
    attacked = report(eval_set("attack", [case("hostile_answer", {TRAJ: metric(0.0), RESP: metric(0.1, 0.6)}, turns=[
        turn(expected_calls=REFUND, actual_calls=REFUND[:1], actual_response=ATTACK)])]))
    extra = compare(current=attacked, baseline=None, policy=c.policy).eval_sets
    c = c.model_copy(update={"eval_sets": [*c.eval_sets, *extra]})
    signatures = []
    for name, limit in (("full.html", 10**6), ("lean.html", 0)):
        path = tmp_path / name
        path.write_text(render_html(c, markup_limit=limit), encoding="utf-8")
        chrome.open(path.as_uri())
        wait_for(chrome, LISTED)
        chrome.evaluate(OPEN_ALL)
        wait_for(chrome, BUILT)
        signatures.append(json.loads(chrome.evaluate(SIGNATURE)))
        assert chrome.evaluate("document.documentElement.getAttribute('data-pwned')") is None
        assert chrome.evaluate("document.title").startswith("evalbot: blocked")
    full, lean = signatures
    assert len(full) == 6 and full == lean
    assert any("PRE.a:" + ATTACK in line for sig in lean for line in sig)  # the attack, shown as text
    assert any("LI.g:: →" in line for sig in lean for line in sig)  # an argument diff row, built by the script


def test_deferred_details_with_javascript_off_say_where_they_are(tmp_path: Path, chrome: Browser) -> None:
    """JavaScript off: the regressed case reads in full; a deferred case's body says how to see its details."""
    path = tmp_path / "lean.html"
    path.write_text(render_html(small(), markup_limit=0), encoding="utf-8")
    chrome.call("Emulation.setScriptExecutionDisabled", {"value": True})
    chrome.open(path.as_uri())
    chrome.evaluate(OPEN_ALL)
    time.sleep(0.3)
    assert "$250.00" in chrome.evaluate("document.querySelector('.c-regressed pre.a').textContent")
    gift = "Array.from(document.querySelectorAll('.case')).find(c => c.querySelector('.cid').textContent === 'gift_card')"
    assert chrome.evaluate(f"{gift}.querySelector('.body').childElementCount") == 0
    assert "built when it is opened" in chrome.evaluate(
        f"getComputedStyle({gift}.querySelector('.body'), '::before').content")


def test_search_finds_text_inside_details_not_yet_built(tmp_path: Path, chrome: Browser) -> None:
    """The search box looks into the deferred data: gift_card's missing call ``balance`` finds it unopened."""
    path = tmp_path / "lean.html"
    path.write_text(render_html(small(), markup_limit=0), encoding="utf-8")
    chrome.open(path.as_uri())
    chrome.evaluate("var q = document.getElementById('q'); q.value = 'balance G1'; q.dispatchEvent(new Event('input'))")
    wait_for(chrome, "document.getElementById('qn').textContent === '1 of 5 match'")
    assert visible(chrome) == ["gift_card"]


def many_passing() -> Comparison:
    """Two eval sets: one regressed case, one failing, then 300 passing cases, 30 of them fixed (the second set
    150 more passing); written with markup_limit=0, so the 480 cases that do not fail are listed by the script."""
    def run(pr: bool) -> Report:
        first = [case("regressed_one", {TRAJ: metric(0.0 if pr else 1.0)}),
                 case("failing_one", {TRAJ: metric(0.0)})]
        first += [case(f"pass_{i:03d}", {TRAJ: metric(0.0 if i < 30 and not pr else 1.0)},
                       turns=[turn(expected_calls=REFUND)]) for i in range(300)]
        second = [case(f"faq_{i:03d}", {TRAJ: metric(1.0)}) for i in range(150)]
        return report(eval_set("orders", first), eval_set("faq", second))

    from evalbot.compare.baseline import build_baseline
    from evalbot.results import Report

    baseline = build_baseline(run(False), commit="1" * 40, created_at="2025-06-01T12:00:00+00:00")
    c = compare(current=run(True), baseline=baseline, policy=small().policy)
    return c


@pytest.fixture
def many(tmp_path: Path) -> Path:
    c = many_passing()
    (tmp_path / "full.html").write_text(render_html(c, markup_limit=10**6), encoding="utf-8")
    path = tmp_path / "many.html"
    path.write_text(render_html(c, markup_limit=0), encoding="utf-8")
    return path


COUNT = "document.querySelectorAll('.case').length"


def test_cases_that_do_not_fail_are_listed_as_the_reader_scrolls(many: Path, chrome: Browser) -> None:
    """At load only the first block near the viewport is listed; scrolling lists the rest, in page order, each case
    as the markup would have written it (its details built when opened)."""
    chrome.open(many.as_uri())
    wait_for(chrome, f"{COUNT} > 2")
    time.sleep(0.5)
    assert 2 < chrome.evaluate(COUNT) <= 2 + 200  # a block or two near the top, not all 452
    deadline = time.monotonic() + 30
    while not chrome.evaluate(LISTED):
        assert time.monotonic() < deadline, chrome.evaluate(COUNT)
        chrome.evaluate("window.scrollBy(0, 900)")  # as a reader scrolls, a screen at a time
        time.sleep(0.02)
    ids = json.loads(chrome.evaluate("JSON.stringify(Array.from(document.querySelectorAll('.cid'))"
                                     ".map(c => c.textContent))"))
    fixed = [f"pass_{i:03d}" for i in range(30)]
    assert ids == ["regressed_one", "failing_one", *fixed, *(f"pass_{i:03d}" for i in range(30, 300)),
                   *(f"faq_{i:03d}" for i in range(150))]
    lines = "JSON.stringify(Array.from(document.querySelectorAll('.case')).map(c => [c.className, c.open, " \
        "c.querySelector('summary').outerHTML]))"
    listed = json.loads(chrome.evaluate(lines))
    chrome.open((many.parent / "full.html").as_uri())
    assert listed == json.loads(chrome.evaluate(lines))  # as the markup writes them, element for element
    chrome.open(many.as_uri())
    chrome.evaluate("document.getElementById('q').value = 'pass_0'; document.getElementById('q')"
                    ".dispatchEvent(new Event('input'))")  # the search lists everything at once
    wait_for(chrome, "document.getElementById('qn').textContent === '100 of 452 match'")
    chrome.evaluate(OPEN_ALL)
    wait_for(chrome, BUILT)
    bodies = json.loads(chrome.evaluate(SIGNATURE))
    chrome.open((many.parent / "full.html").as_uri())
    assert bodies == json.loads(chrome.evaluate(SIGNATURE)) and len(bodies) == 452


def test_a_filter_lists_the_cases_it_shows(many: Path, chrome: Browser) -> None:
    """The Fixed filter on a fresh page: the 30 fixed cases (listed only by the script) all show without
    scrolling, since the hidden ones take no room."""
    chrome.open(many.as_uri())
    chrome.evaluate("document.getElementById('l-fixed').click()")
    wait_for(chrome, f"JSON.parse({VISIBLE}).length === 30")
    assert visible(chrome) == [f"pass_{i:03d}" for i in range(30)]


def test_search_finds_cases_not_yet_listed(many: Path, chrome: Browser) -> None:
    chrome.open(many.as_uri())
    chrome.evaluate("var q = document.getElementById('q'); q.value = 'faq_149'; q.dispatchEvent(new Event('input'))")
    wait_for(chrome, "document.getElementById('qn').textContent === '1 of 452 match'")
    assert visible(chrome) == ["faq_149"]


def test_with_javascript_off_the_failing_cases_are_listed_and_the_rest_is_said(many: Path, chrome: Browser) -> None:
    chrome.call("Emulation.setScriptExecutionDisabled", {"value": True})
    chrome.open(many.as_uri())
    assert visible(chrome) == ["regressed_one", "failing_one"]
    notes = json.loads(chrome.evaluate("JSON.stringify(Array.from(document.querySelectorAll('.more > .note'))"
                                       ".map(n => n.textContent))"))
    assert notes == [f"{n} more cases that do not fail: listed by the page’s script as you scroll to them "
                     "(JavaScript off: the JSON report holds them)." for n in (300, 150)]
    assert "regressed" in chrome.evaluate("document.querySelector('.c-regressed .body').textContent")


HOSTILE_VALUES: list[Any] = [
    0, 1, -1, 1.0, -0.0, 0.5, 2.5e-05, 1e16, 1.7976931348623157e308, 2**53 + 1, 10**20, 1e20, float("inf"),
    float("-inf"), True, False, None, "", "1", "1.0", 'say "hi"\\n', "back\\slash", "tab\tnew\nline\r\x00\x1f\x7f",
    "<script>alert(1)</script>", "&amp; é 中文 𝒳 \u2028", "x" * 130, "𝒳" * 125 + "ab", "é" * 399 + "𝒳𝒳",
    [], {}, [1, 1.0, True], {"b": 1, "a": [2, {"z": None, "y": "\uffff", "𝒳": 3}]}, {"10": 1, "9": 2, "__proto__": 3},
    {"\uffff": 1, "𝒳": 2, "a": 3}, [[[]]], ["x" * 200],
]


def hostile_calls(rng: random.Random, n: int) -> list[tuple[str | None, Any]]:
    names = ["find", "find", "pay", "notify", None, "", "<b>x</b>"]
    out: list[tuple[str | None, Any]] = []
    for _ in range(n):
        shape = rng.random()
        if shape < 0.75:
            keys = rng.sample(["id", "amount", "10", "9", "__proto__", "é", "𝒳", "\uffff", "a b"], rng.randint(0, 4))
            args: Any = {k: rng.choice(HOSTILE_VALUES) for k in keys}
        elif shape < 0.9:
            args = rng.choice(HOSTILE_VALUES)
        else:
            args = None
        out.append((rng.choice(names), args))
    return out


def mutated(rng: random.Random, calls: list[tuple[str | None, Any]]) -> list[tuple[str | None, Any]]:
    out = list(calls)
    for _ in range(rng.randint(0, 3)):
        what = rng.random()
        if what < 0.3 and out:
            out.pop(rng.randrange(len(out)))
        elif what < 0.55:
            out.insert(rng.randint(0, len(out)), hostile_calls(rng, 1)[0])
        elif what < 0.85 and out:
            i = rng.randrange(len(out))
            name, args = out[i]
            if isinstance(args, dict) and args and rng.random() < 0.7:
                args = dict(args)
                key = rng.choice(list(args))
                if rng.random() < 0.3:
                    del args[key]
                else:
                    args[key] = rng.choice(HOSTILE_VALUES)
            else:
                args = rng.choice(HOSTILE_VALUES)
            out[i] = (name, args)
        elif len(out) > 1:
            i, j = rng.sample(range(len(out)), 2)
            out[i], out[j] = out[j], out[i]
    return out


def test_the_script_diffs_tool_calls_exactly_as_trajdiff(tmp_path: Path, chrome: Browser) -> None:
    """Deferred cases carry their calls raw and the script diffs them: for 240 random turns of hostile arguments
    (1 vs 1.0 vs True, -0.0, 2**53 + 1, 1e16, inf, quotes, control characters, astral and U+FFFF keys whose order
    differs between code points and UTF-16, numeric and __proto__ keys, values cut at 120 and 400 characters
    inside astral text, nameless calls, non-object arguments, no expected calls) every body the script builds is
    the markup trajdiff writes, element for element."""
    rng = random.Random(28)
    cases = []
    for i in range(120):
        turns = []
        for _ in range(2):
            expected = hostile_calls(rng, rng.randint(0, 5))
            actual = mutated(rng, expected) if rng.random() < 0.9 else list(expected)
            made = turn(expected_calls=expected, actual_calls=actual)
            if rng.random() < 0.05:
                made = made.model_copy(update={"expected_tool_calls": None})
            turns.append(made)
        failing = i % 2 == 0
        cases.append(case(f"h{i:03d}", {TRAJ: metric(0.0 if failing else 1.0)}, turns=turns))
    exact = [("pay", {"n": 10**20, "f": 1.0, "b": True, "z": -0.0, "big": 2**53 + 1, "s": "1"})]
    cases.append(case("h_exact", {TRAJ: metric(0.0)}, turns=[turn(  # equal in Python: no change for n, f, b, z
        expected_calls=exact, actual_calls=[("pay", {"n": 1e20, "f": 1, "b": 1, "z": 0, "big": 2.0**53, "s": 1})])]))
    c = compare(current=report(eval_set("hostile", cases)), baseline=None, policy=small().policy)
    signatures = []
    for name, limit in (("full.html", 10**6), ("lean.html", 0)):
        path = tmp_path / name
        path.write_text(render_html(c, markup_limit=limit), encoding="utf-8")
        chrome.open(path.as_uri())
        chrome.evaluate("document.getElementById('q').value = 'h'; document.getElementById('q')"
                        ".dispatchEvent(new Event('input'))")  # lists every case at once
        wait_for(chrome, "document.getElementById('qn').textContent === '121 of 121 match'")
        chrome.evaluate(OPEN_ALL)
        wait_for(chrome, BUILT)
        signatures.append(json.loads(chrome.evaluate(SIGNATURE)))
    full, lean = signatures
    assert len(full) == 121 and "<b>x</b>" in json.dumps(full, ensure_ascii=False)
    assert [line for line in full[-1] if line.startswith("LI.g:")] == ["LI.g:: →", "LI.g:: →"]  # big and s only
    assert sum("— differ" in line for sig in full for line in sig) > 100
    for mine, theirs in zip(lean, full, strict=True):
        assert mine == theirs
