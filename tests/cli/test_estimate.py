"""``evalbot run|compare … --estimate`` (issue 40 item 3): the requests, tokens and dollars a run would need, for full
and sequential sampling, with nothing sent (0 requests on the fake Gemini server) and nothing written; its request
counts bound the real run's, counted on the server."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from evalbot.cli.commands import main
from evalbot.formats.prices import shipped_prices
from tests.fakes.builders import Writer, case, eval_set, inv
from tests.fakes.fake_gemini import FakeGemini

LINE = re.compile(r"  (full|sequential) sampling: (?:[\d,]+ to )?([\d,]+) request\(s\) \(at most ([\d,]+)\), input ≈ ([\d,]+) tokens "
                  r"\(at most ([\d,]+)\), output at most ([\d,]+) tokens; ≈ ([\d.]+) USD for the input, at most "
                  r"([\d.]+) USD")


def _num(text: str) -> int:
    return int(text.replace(",", ""))


def _project(write: Writer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, samples: int) -> None:
    write("evals/s.evalset.json", eval_set("s", *(case(f"c{i}", inv(f"q{i}", "reference")) for i in range(4))))
    write("evals/test_config.json", {"criteria": {"final_response_match_v2": {
        "threshold": 0.5, "judge_model_options": {"num_samples": samples,
                                                  "judge_model_config": {"max_output_tokens": 100}}}}})
    write("runs/pr.json", {f"c{i}": [inv(f"q{i}", "an answer " * (i + 1))] for i in range(4)})
    monkeypatch.chdir(tmp_path)


def _estimate(capsys: pytest.CaptureFixture[str], env: dict[str, str], *argv: str) -> dict[str, tuple[int, ...]]:
    code = main([*argv, "--estimate"], env=env)
    out = capsys.readouterr().out
    assert code == 0, out
    found = {m.group(1): tuple(_num(g) for g in m.groups()[1:6]) for m in LINE.finditer(out)}
    assert set(found) == {"full", "sequential"}, out
    return found


@pytest.mark.parametrize("samples", [1, 5, 12])
def test_estimate_sends_nothing_and_bounds_the_real_run(write: Writer, tmp_path: Path, samples: int,
                                                        monkeypatch: pytest.MonkeyPatch,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    _project(write, tmp_path, monkeypatch, samples)
    answers = iter(['{"is_the_agent_response_valid": "valid"}', '{"is_the_agent_response_valid": "invalid"}'] * 10**4)
    with FakeGemini(responder=lambda p, i, r: next(answers)) as fake:
        env = {"GOOGLE_API_KEY": "k", "GOOGLE_GEMINI_BASE_URL": fake.url}
        estimated = _estimate(capsys, env, "run", "evals", "--actuals", "runs/pr.json", "--report", "out.json")
        assert fake.requests == [] and not (tmp_path / "out.json").exists()
        compared = _estimate(capsys, env, "compare", "evals", "--actuals", "runs/pr.json", "--baseline", "none.json",
                             "--comment", "c.md")
        assert compared == estimated and fake.requests == [] and not (tmp_path / "c.md").exists()
        refreshed = _estimate(capsys, env, "baseline", "evals", "--actuals", "runs/pr.json", "--output", "b.json")
        assert refreshed == estimated and fake.requests == [] and not (tmp_path / "b.json").exists()
        assert main(["judge-diff", "evals", "--actuals", "runs/pr.json", "--judge-model", "m", "--estimate"],
                    env=env) == 2 and fake.requests == []
        real: dict[str, tuple[int, int, int]] = {}
        for mode in ("full", "sequential"):
            before = len(fake.requests)
            main(["run", "evals", "--actuals", "runs/pr.json", "--sampling", mode, "--report", f"{mode}.json"],
                 env=env)
            sent = fake.requests[before:]
            real[mode] = (len(sent), sum(len(r.prompt) // 4 + 1 for r in sent), sum(r.candidate_count for r in sent))
    for mode, (requests, tokens_in, candidates) in real.items():
        expected, most, tin, tin_most, tout_most = estimated[mode]
        assert 0 < requests <= most and requests <= expected, (mode, real, estimated)
        assert candidates * 100 <= tout_most  # each sample's output at most max_output_tokens
        assert tokens_in <= tin_most and (mode == "sequential" or tokens_in <= tin + 4 * requests)  # ≈ within rounding
    full = estimated["full"]
    assert full[0] == real["full"][0] == 4 * -(-samples // 8)  # a server honouring candidate_count: exactly this


def test_estimate_prices_from_the_table(write: Writer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    _project(write, tmp_path, monkeypatch, 1)
    code = main(["run", "evals", "--actuals", "runs/pr.json", "--estimate"], env={})
    out = capsys.readouterr().out
    assert code == 0 and "on gemini-2.5-flash" in out
    match = LINE.search(out)
    assert match is not None
    price = shipped_prices().price("gemini-2.5-flash")
    assert price is not None
    tin_most, tout_most = _num(match.group(5)), _num(match.group(6))
    assert float(match.group(8)) == pytest.approx(price.cost(tin_most, tout_most), abs=1e-4)


def test_estimate_does_not_run_the_agent(write: Writer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    _project(write, tmp_path, monkeypatch, 1)
    code = main(["run", "evals", "--agent", "nowhere:agent", "--estimate"], env={})
    assert code == 2 and "--estimate counts the judge requests of recorded runs" in capsys.readouterr().err




def test_answers_the_judge_cache_holds_are_counted_apart_and_the_real_run_asks_only_for_the_rest(
        write: Writer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """A first real run fills the cache; one case's run then changes: the estimate counts one prompt's requests and
    the cached samples apart, and the second real run sends exactly that many requests (full sampling)."""
    _project(write, tmp_path, monkeypatch, 5)
    with FakeGemini(responder=lambda p, i, r: '{"is_the_agent_response_valid": "valid"}') as fake:
        env = {"GOOGLE_API_KEY": "k", "GOOGLE_GEMINI_BASE_URL": fake.url}
        cache = ["--judge-cache", "cache"]
        assert main(["run", "evals", "--actuals", "runs/pr.json", *cache, "--sampling", "full", "--report", "one.json"],
                    env=env) == 0
        first = len(fake.requests)
        warm = _estimate(capsys, env, "run", "evals", "--actuals", "runs/pr.json", *cache)
        assert warm["full"][:1] == (0,) and len(fake.requests) == first
        write("runs/pr.json", {f"c{i}": [inv(f"q{i}", "an answer " * (i + 1) + ("changed" if i == 0 else ""))]
                               for i in range(4)})
        code = main(["run", "evals", "--actuals", "runs/pr.json", *cache, "--estimate"], env=env)
        out = capsys.readouterr().out
        assert code == 0 and "the judge cache answers 15 sample(s)" in out, out
        partly = {m.group(1): _num(m.group(2)) for m in LINE.finditer(out)}
        from_env = _estimate(capsys, {**env, "EVALBOT_JUDGE_CACHE": "cache"}, "run", "evals", "--actuals",
                             "runs/pr.json")
        assert from_env["full"][0] == partly["full"] == 1 and len(fake.requests) == first
        assert main(["run", "evals", "--actuals", "runs/pr.json", *cache, "--sampling", "full", "--report",
                     "two.json"], env=env) == 0
        assert len(fake.requests) - first == partly["full"]
