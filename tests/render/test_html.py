"""The self-contained HTML report: content, filters, escaping of hostile text, the CSP, the CLI edge.

What the page does in a real browser (filters, search, a hostile script not running) is in test_html_browser.py.
"""

from __future__ import annotations

import base64
import hashlib
import re
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from evalbot.cli.commands import main
from evalbot.compare.model import Comparison
from evalbot.render import html as html_report
from evalbot.render.html import TEXT_LIMIT, context, render_html, render_html_report
from tests.fakes.comparisons import REFUND, compared, small
from tests.fakes.reports import JUDGE, RESP, TRAJ, case, eval_set, metric, report, turn

ROOT = Path(__file__).resolve().parents[2]
HOSTILE_ANSWER = (
    '</pre></details><script>document.title="pwned";document.documentElement.dataset.pwned="1"</script>'
    '<img src=x onerror="document.title=\'pwned\'"><style>body{display:none}</style>{{ 7*7 }}{% raw %}'
    '<meta http-equiv="refresh" content="0;url=https://evil.example/">'
)


def hostile() -> Comparison:
    """A regressed case whose agent answer, user text, eval id, tool name and argument carry markup."""
    main_run = report(eval_set("orders", [case("<marquee>bad</marquee>", {TRAJ: metric(1.0)}, turns=[turn(expected_calls=REFUND)])]))
    pr = report(eval_set('set"><script>x()</script>', [case("<marquee>bad</marquee>", {TRAJ: metric(0.0)}, turns=[turn(
        user="<iframe src=https://evil.example>", expected_calls=REFUND,
        actual_calls=[("<svg onload=alert(1)>", {"q": "<script>alert(1)</script>"})],
        actual_response=HOSTILE_ANSWER,
    )])]))
    return compared(main_run, pr)


class Elements(HTMLParser):
    """Every start tag with its attributes, and the text inside <style> and <script> elements."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.raw: dict[str, list[str]] = {"style": [], "script": []}
        self._in: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        if tag in self.raw:
            self._in = tag
            self.raw[tag].append("")

    def handle_endtag(self, tag: str) -> None:
        self._in = None

    def handle_data(self, data: str) -> None:
        if self._in:
            self.raw[self._in][-1] += data


def parse(text: str) -> Elements:
    parser = Elements()
    parser.feed(text)
    parser.close()
    return parser


def csp_of(page: Elements) -> dict[str, list[str]]:
    metas = [a for t, a in page.tags if t == "meta" and (a.get("http-equiv") or "").lower() == "content-security-policy"]
    assert len(metas) == 1
    policy: dict[str, list[str]] = {}
    for directive in (metas[0]["content"] or "").split(";"):
        name, *values = directive.split()
        policy[name] = values
    return policy


def sha(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode() + "'"


def test_hostile_markup_is_text_and_the_only_elements_are_ours() -> None:
    """Agent, user, tool and id markup shows as text: one <style>, one <script> (ours), no img/iframe/svg/meta refresh."""
    text = render_html(hostile())
    page = parse(text)
    names = [t for t, _ in page.tags]
    assert names.count("script") == 1 and names.count("style") == 1
    assert not {"img", "iframe", "svg", "marquee"} & set(names)
    assert [a for t, a in page.tags if t == "meta" and a.get("http-equiv") == "refresh"] == []
    assert '&lt;script&gt;document.title="pwned"' in text  # text nodes escape & < > (quotes are harmless there)
    assert "{{ 7*7 }}{% raw %}" in text and "49" not in re.sub(r"sha256-[^']+", "", text)
    assert "&lt;svg onload=alert(1)&gt;" in text and "&lt;marquee&gt;bad&lt;/marquee&gt;" in text
    assert all(not re.search(r"\bon\w+=", " ".join(f"{k}={v}" for k, v in a.items())) for _, a in page.tags)


def test_csp_forbids_everything_but_the_pages_own_style_and_script_by_hash() -> None:
    page = parse(render_html(hostile()))
    policy = csp_of(page)
    assert policy["default-src"] == ["'none'"]
    assert policy["style-src"] == [sha(page.raw["style"][0])]
    assert policy["script-src"] == [sha(page.raw["script"][0])]
    assert policy["img-src"] == ["'none'"] and policy["base-uri"] == ["'none'"] and policy["form-action"] == ["'none'"]
    assert not any("unsafe" in v for values in policy.values() for v in values)


def test_no_network_references_and_no_inline_style_attributes() -> None:
    """Nothing to fetch (no src/href/url()/@import) and no style="" (which a hash-only style-src would block)."""
    text = render_html(small())
    page = parse(text)
    for _, attrs in page.tags:
        assert not {"src", "href", "style", "srcset", "action"} & set(attrs), attrs
    assert "url(" not in page.raw["style"][0] and "@import" not in page.raw["style"][0]
    assert "fetch(" not in page.raw["script"][0] and "XMLHttpRequest" not in page.raw["script"][0]


def test_assets_are_the_template_files_verbatim() -> None:
    """The inline CSS and JS are exactly the files in evalbot/render/templates (no Jinja syntax changed them)."""
    for name in (html_report.STYLE, html_report.SCRIPT):
        source = (ROOT / "evalbot" / "render" / "templates" / name).read_text(encoding="utf-8")
        assert html_report.asset(name)[0] == source.removesuffix("\n")


LAZY = (html_report.Lines, html_report.Deferred)
"""Parts of the context made as the template reads them (the cases' lines, the data block's pieces)."""


def plain(value: Any, where: str = "context") -> None:
    """Everything a template can reach from ``value`` is plain data: dicts, lists, str, int, float, bool, None; or
    a lazily made part (LAZY) with nothing public, whose items are plain data."""
    if type(value) in LAZY:
        assert [name for name in dir(value) if not name.startswith("_")] == [], where
        for i, v in enumerate(value):
            plain(v, f"{where}[{i}]")
    elif isinstance(value, dict):
        for k, v in value.items():
            assert type(k) is str, where
            plain(v, f"{where}.{k}")
    elif isinstance(value, list):
        for i, v in enumerate(value):
            plain(v, f"{where}[{i}]")
    else:
        assert value is None or type(value) in (str, int, float, bool), f"{where} is {type(value).__name__}"


def test_context_is_plain_data() -> None:
    """No model object (or str subclass that would skip escaping) reaches the template: the cases' lines and the
    data block are made as the template reads them, and what they give is plain data."""
    plain(context(small()))
    plain(context(hostile()))
    plain(context(small(), markup_limit=0))


@pytest.mark.parametrize("expression", [
    "{{ sets[0].cases._runs }}", "{{ sets[0].cases['_runs'] }}", "{{ sets[0].blocks[0].cases._runs[0] }}",
    "{{ sets[0].cases._judged }}", "{{ sets[0].cases._cases[0] }}", "{{ deferred._plan }}", "{{ deferred._plan.ordered }}", "{{ deferred._judged }}",
    "{{ sets[0].cases.__class__ }}", "{{ sets[0].cases.__iter__.__self__ }}",
])
def test_the_lazy_parts_lead_a_template_to_no_model(expression: str) -> None:
    """The lines and the data block hold the cases (models) only where the sandbox lets no template read."""
    import jinja2.sandbox

    data = context(small(), markup_limit=0)
    with pytest.raises(jinja2.sandbox.SecurityError):
        html_report.environment().from_string(expression).render(data)


def test_the_cases_markup_is_made_as_the_template_reads_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """Building the context makes no case's details; reading a block of lines makes that block's only; the data
    block's are made when it is written: the render holds one case's markup at a time, not every case's."""
    made: list[str] = []
    body_row = html_report.body_row

    def counted(case: Any, judged: frozenset[str], *, raw: bool = False) -> list[Any]:
        made.append(case.eval_id)
        return body_row(case, judged, raw=raw)

    monkeypatch.setattr(html_report, "body_row", counted)
    data = context(small(), markup_limit=0)
    assert made == []
    (first,) = [b for b in data["sets"][0]["blocks"] if "cases" in b]
    lines = list(first["cases"])
    assert made == [line["id"] for line in lines if line["lazy"] is None] == ["refund_damaged", "store_hours"]
    made.clear()
    assert "".join(data["deferred"]) and len(made) == data["deferred_count"] == 3


def test_every_set_case_turn_diff_rationale_and_noise_verdict_is_there() -> None:
    c = small()
    text = render_html(c)
    ctx = context(c)
    assert [s["id"] for s in ctx["sets"]] == ["orders"]
    assert sorted(x["id"] for x in ctx["sets"][0]["cases"]) == sorted(x.eval_id for x in c.eval_sets[0].cases)
    assert [x["category"] for x in ctx["sets"][0]["cases"]][:2] == ["regressed", "inconclusive"]  # most important first
    for eval_id in ("refund_damaged", "track_package", "store_hours", "cancel", "gift_card"):
        assert f'<span class="cid">{eval_id}</span>' in text
    # criterion table with deltas
    assert "▼ −1.000" in text and "▲ +0.200" in text
    # the argument-level diff of the regressed case
    assert "<code>amount</code>: <del>25.0</del> → <ins>250.0</ins>" in text
    assert '<li class="d">1. balance(card="G1") <em>missing</em></li>' in text
    # responses, the judge's rationale and vote split, the noise verdict
    assert "I refunded $250.00 to your card." in text
    assert "The reference says 9 to 5; the response says 9 to 6." in text and "votes 2–3" in text
    assert re.search(r"Noise check, final_response_match_v2: judge votes \(pass–fail\) 2–3, baseline 3–2, "
                     r"Fisher exact p = 1\.000 → inconclusive", text)


def test_filter_tags_and_counts() -> None:
    """Each case carries the tags the CSS filters read; the filter labels count them."""
    ctx = context(small())
    tags = {x["id"]: set(x["tags"].split()) for x in ctx["sets"][0]["cases"]}
    assert tags == {
        "refund_damaged": {"t-regressed", "t-failing"}, "track_package": {"t-fixed"},
        "store_hours": {"t-inconclusive", "t-failing"}, "cancel": set(), "gift_card": {"t-failing"},
    }
    assert {f["key"]: f["n"] for f in ctx["filters"]} == {
        "all": 5, "regressed": 1, "fixed": 1, "failing": 3, "inconclusive": 1}
    text = render_html(small())
    for key in ("all", "regressed", "fixed", "failing", "inconclusive"):
        assert f'id="f-{key}"' in text and f'<label for="f-{key}"' in text
        assert key == "all" or f"#f-{key}:checked~main .case:not(.t-{key})" in text


def test_long_text_is_clipped_with_a_pointer_to_the_json_report() -> None:
    long = "x" * (TEXT_LIMIT + 5000)
    pr = report(eval_set("s", [case("c", {RESP: metric(0.1, 0.6)}, turns=[turn(actual_response=long)])]))
    text = render_html(compared(None, pr))
    assert "x" * TEXT_LIMIT + "… (5,000 more characters in the JSON report)" in text
    assert "x" * (TEXT_LIMIT + 1) not in text


def test_usage_rows_are_the_criteria_then_the_total() -> None:
    """One row per judged criterion and the total (not the summary's other keys: ``cache`` is no criterion); the
    cost of an unpriced model shows as ``unknown``."""
    usage = {"per_criterion": {
        "b<i>": {"requests": 1200, "input_tokens": 5, "output_tokens": 6, "cached_samples": 7, "models": ["m"],
                 "estimated_cost_usd": 0.25},
        "a": {"requests": 1, "models": ["x"], "estimated_cost_usd": None}},
        "total": {"requests": 1201, "input_tokens": 5, "output_tokens": 6, "cached_samples": 7},
        "cache": {"directory": "d", "hits": 7, "writes": 0}, "retries": 2}
    pr = report(eval_set("s", [case("c", {JUDGE: metric(1.0, 0.8, votes=[(3, 0)])})]), usage=usage)
    rows = context(compared(None, pr))["usage"]
    none = {"baseline_cost": "—", "change": "—"}  # no baseline here
    assert rows == [
        {"name": "b<i>", "requests": "1,200", "input_tokens": "5", "output_tokens": "6", "cached_samples": "7",
         "cost": "0.2500 USD", **none},
        {"name": "a", "requests": "1", "input_tokens": "0", "output_tokens": "0", "cached_samples": "0",
         "cost": "unknown", **none},
        {"name": "total", "requests": "1,201", "input_tokens": "5", "output_tokens": "6", "cached_samples": "7",
         "cost": "unknown", **none}]
    text = render_html(compared(None, pr))
    assert "<td>b&lt;i&gt;</td><td>1,200</td>" in text and "<td>cache</td>" not in text


def test_run_without_baseline_and_an_empty_run_render() -> None:
    pr = report(eval_set("orders", [case("a", {TRAJ: metric(1.0)}), case("b", {TRAJ: metric(0.0)})]))
    text = render_html_report(pr)
    assert "No baseline: absolute scores only." in text and '<span class="cid">b</span>' in text
    assert "<main>" in render_html_report(report())


@pytest.fixture
def example(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)


def test_cli_compare_and_run_write_the_html(example: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``--html`` on compare (with deltas) and on run (absolute scores), on the bundled example."""
    common = ["examples/evals", "--actuals", "examples/runs/pr.json", "--judge-cache", "examples/judge-cache",
              "--judge-replay"]
    out = tmp_path / "deep" / "compare.html"
    code = main(["compare", "--baseline", "examples/.evalbot/baseline.json", *common, "--html", str(out),
                 "--comment", str(tmp_path / "c.md")])
    assert code == 1
    text = out.read_text(encoding="utf-8")
    assert "evalbot: blocked" in text and 'class="case c-regressed t-regressed' in text and "▼" in text
    run_out = tmp_path / "run.html"
    assert main(["run", *common, "--html", str(run_out)]) in (0, 1)
    run_text = run_out.read_text(encoding="utf-8")
    assert "No baseline: absolute scores only." in run_text and "t-failing" in run_text
    capsys.readouterr()


def test_what_could_not_be_measured_is_said_under_the_headline() -> None:
    """The comparison's alerts (unreadable baseline, judge failures) are shown as in the comment's headline."""
    c = small().model_copy(update={"alerts": ["baseline unreadable: <i>bad JSON</i> at /eval_sets"]})
    text = render_html(c)
    assert '<p class="alert">⚠️ baseline unreadable: &lt;i&gt;bad JSON&lt;/i&gt; at /eval_sets</p>' in text
    assert text.index('class="alert"') < text.index('<nav class="filters"')


def deferred_data(text: str) -> list[Any]:
    """The cases the page's script builds on demand, decoded as the script does (base64, gzip, JSON)."""
    import gzip
    import json

    match = re.search(r'<script type="application/octet-stream" id="case-data">([^<]*)</script>', text)
    assert match is not None
    assert re.fullmatch(r"[A-Za-z0-9+/=]+", match.group(1))  # base64 only: nothing the HTML parser reads as markup
    data = json.loads(gzip.decompress(base64.b64decode(match.group(1))))
    assert isinstance(data, list) and len(data) == 2  # the cases, then [category, badge] pairs
    return data


def deferred_bodies(text: str) -> list[list[Any]]:
    """The deferred cases' details (each the list the template's markup is written from)."""
    return [body for _, body in deferred_data(text)[0]]


def test_beyond_the_markup_limit_details_travel_as_data_and_the_verdicts_cases_stay_markup() -> None:
    """markup_limit=0: the regressed and inconclusive cases (what the verdict rests on) keep their details as
    markup; the failing case keeps its summary line with an empty body pointing into one compressed data block;
    the cases that do not fail are listed only in that block (line and details), for the script to build. The block
    holds exactly the details the markup would have shown."""
    comparison = small()
    full, lean = context(comparison, markup_limit=10**6), context(comparison, markup_limit=0)
    page = render_html(comparison, markup_limit=0)
    data = deferred_data(page)
    by_id = {c["id"]: c for s in full["sets"] for c in s["cases"]}
    lean_cases = {c["id"]: c for s in lean["sets"] for c in s["cases"]}
    assert {i for i, c in lean_cases.items() if c["lazy"] is None} == {"refund_damaged", "store_hours"}
    assert sorted(lean_cases) == ["gift_card", "refund_damaged", "store_hours"]  # lines written as markup
    assert lean["deferred_count"] == len(data[0]) == 3 and lean["listed_later"] == 2
    assert lean_cases["gift_card"]["lazy"] is not None
    pr_cases = {c.eval_id: c for c in comparison.report.eval_sets[0].cases}
    for line, body in data[0]:
        eval_id = line[0] if line else "gift_card"
        markup = by_id[eval_id]["body"]
        assert body[:6] == markup[:6] and len(body[6]) == len(markup[6])
        for row, shown, recorded in zip(body[6], markup[6], pr_cases[eval_id].turns, strict=True):
            # the texts and judge notes as the markup has them; the calls raw, for the script to diff
            assert row[:3] == shown[:3] and row[5] == shown[5]
            assert row[3] == [[c.name, c.args] for c in recorded.expected_tool_calls or []]
            assert row[4] == [[c.name, c.args] for c in recorded.actual_tool_calls]
        if line:  # the summary line, as the markup would have written it
            full_line = by_id[eval_id]
            assert line == [full_line[k] for k in ("id", "category", "status", "baseline_status", "tags", "glyphs")]
            assert dict(data[1])[line[1]] == full_line["category_label"]
            assert f'<span class="cid">{eval_id}</span>' not in page
    assert f'<div class="body" data-k="{lean_cases["gift_card"]["lazy"]}"></div>' in page
    blocks = [b for s in lean["sets"] for b in s["blocks"] if "more" in b]
    assert sum(b["n"] for b in blocks) == 2
    for b in blocks:
        assert f'<div class="more" data-k="{b["more"]}" data-n="{b["n"]}"><p class="note">' in page
    assert "<code>amount</code>: <del>25.0</del> → <ins>250.0</ins>" in page  # the regression reads without script
    assert "3 passing or less important cases, 2 of them listed only by the script" in page
    assert render_html(comparison, markup_limit=0) == page  # gzip without a timestamp: the same bytes each time


def test_the_failing_cases_come_first_after_the_verdicts_cases() -> None:
    """With room for one more case's markup, it goes to a failing case (gift_card), not the fixed or passing one."""
    lean = context(small(), markup_limit=3)
    marked = [c["id"] for s in lean["sets"] for c in s["cases"] if c["lazy"] is None]
    assert sorted(marked) == ["gift_card", "refund_damaged", "store_hours"]


def test_hostile_text_in_deferred_details_never_reaches_the_markup() -> None:
    """The hostile answer is in a failing, not regressed, case: with markup_limit=0 it is only in the data block."""
    pr = report(eval_set("attack", [case("hostile", {TRAJ: metric(0.0)}, turns=[turn(
        expected_calls=REFUND, actual_calls=REFUND[:1], actual_response=HOSTILE_ANSWER)])]))
    c = compared(pr, pr)
    page = render_html(c, markup_limit=0)
    assert "pwned" not in page and "evil.example" not in page
    assert [t for t, _ in parse(page).tags].count("script") == 2  # ours, and the data block (never executed)
    assert deferred_bodies(page)[0][6][0][2] == HOSTILE_ANSWER  # the first turn's actual response


def test_hostile_ids_and_texts_stay_escaped_when_streamed_across_blocks_and_pieces() -> None:
    """More than a block (CHUNK) of failing cases whose ids and answers carry markup, made case by case as the
    template reads them and handed out in small pieces: every id is escaped text, the answers of the cases written
    as markup are escaped text, those of the deferred ones are only in the data block, and the only elements with
    content of their own are ours."""
    from evalbot.render.html import CHUNK, html_chunks

    n = CHUNK + 30
    pr = report(eval_set("attack", [
        case(f"<marquee>c{i}</marquee><script>x()</script>", {TRAJ: metric(0.0)}, turns=[turn(
            expected_calls=REFUND, actual_calls=REFUND[:1], actual_response=HOSTILE_ANSWER, user=f"<blink>{i}</blink>")])
        for i in range(n)]))
    pieces = list(html_chunks(compared(pr, pr), markup_limit=n - 20, size=500))
    assert len(pieces) > 100
    page = "".join(pieces)
    names = [t for t, _ in parse(page).tags]
    assert names.count("script") == 2 and names.count("style") == 1  # ours, and the data block (never executed)
    assert not {"marquee", "blink", "img", "iframe"} & set(names)
    for i in range(n):
        assert f'<span class="cid">&lt;marquee&gt;c{i}&lt;/marquee&gt;&lt;script&gt;x()&lt;/script&gt;</span>' in page
    assert page.count('&lt;script&gt;document.title="pwned"') == n - 20
    assert page.count("pwned") == HOSTILE_ANSWER.count("pwned") * (n - 20) and page.count("&lt;blink&gt;") == n - 20
    assert len(deferred_bodies(page)) == 20


def test_the_page_comes_in_pieces_that_make_the_whole_page() -> None:
    """html_chunks hands the page over in pieces of at least ``size`` characters (the last may be shorter); joined,
    they are render_html's page, so a writer never holds the whole page."""
    from evalbot.render.html import html_chunks

    comparison = small()
    pieces = list(html_chunks(comparison, markup_limit=0, size=2_000))
    assert len(pieces) > 5 and all(len(p) >= 2_000 for p in pieces[:-1])
    assert "".join(pieces) == render_html(comparison, markup_limit=0)


def test_the_cli_writes_the_page_it_renders(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """evalbot run --html writes, piece by piece, exactly the page render_html_report renders for its report."""
    from evalbot.results import Report

    out, report_path = tmp_path / "deep" / "report.html", tmp_path / "report.json"
    code = main(["run", "examples/evals", "--actuals", "examples/runs/pr.json", "--judge-cache",
                 "examples/judge-cache", "--judge-replay", "--html", str(out), "--report", str(report_path)])
    capsys.readouterr()
    assert code in (0, 1) and out.is_file()
    written = Report.model_validate_json(report_path.read_text(encoding="utf-8"))
    assert out.read_text(encoding="utf-8") == render_html_report(written)


def test_data_block_pieces_join_to_the_base64_of_the_whole() -> None:
    """The data block reaches the page piece by piece; the pieces joined are exactly the base64 of all the compressed
    bytes, whatever the sizes of the compressor's outputs (empty ones, ones across a piece's end, one byte)."""
    import base64
    import random

    from evalbot.render.html import Base64Pieces

    def base64_pieces(compressed: list[bytes], piece: int) -> list[str]:
        """The pieces, fed as the Packer feeds them (each compressor output, taking what is ready after each)."""
        pieces: list[str] = []
        out = Base64Pieces(piece)
        compressed.reverse()
        while compressed:
            out.add(compressed.pop())
            pieces.extend(out.ready())
        pieces.extend(out.end())
        return pieces

    rng = random.Random(28)
    for _ in range(300):
        chunks = [rng.randbytes(rng.choice([0, 1, 2, 3, 29, 30, 31, 64, 95])) for _ in range(rng.randrange(0, 12))]
        whole = base64.b64encode(b"".join(chunks)).decode("ascii")
        given = list(chunks)
        pieces = base64_pieces(given, piece=30)
        assert "".join(pieces) == whole
        assert given == []  # let go as encoded
        assert all(len(piece) >= 40 and len(piece) % 4 == 0 and "=" not in piece for piece in pieces[:-1])
        assert (pieces == []) == (whole == "")
