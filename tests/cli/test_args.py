"""Every flag of every subcommand and every Action input, given bad values: exit 2, one line naming it, no traceback.

The flags are read from the real argparse parsers and the inputs from action.yml, so a new flag or input without
bad values here fails ``test_every_flag_has_bad_values`` / ``test_every_input_has_bad_values``.
"""

from __future__ import annotations

import argparse
import io
import os
import re
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from ruamel.yaml import YAML

from evalbot.action.main import run as run_action
from evalbot.cli import args as cli_args
from evalbot.cli.commands import build_parser, main
from tests.fakes.forge import pr_env

ROOT = Path(__file__).resolve().parents[2]
Bad = Callable[[Path], list[str]]


def _fifo(tmp: Path) -> str:
    path = tmp / "pipe.json"
    if not path.exists():
        os.mkfifo(path)
    return str(path)


def _file(tmp: Path) -> str:
    path = tmp / "plain.txt"
    path.write_text("x", encoding="utf-8")
    return str(path)


def _dir(tmp: Path) -> str:
    (tmp / "adir").mkdir(exist_ok=True)
    return str(tmp / "adir")


BAD_COUNT = ["0", "-3", "x", "1.5", "", "100000"]
BAD_NUMBER = ["nan", "inf", "-1", "x", "", "1e400"]
# Bad values per kind of flag: by the parser's type function (its name) or the action's kind.
BAD_BY_TYPE: dict[str, Bad] = {
    "integer": lambda tmp: BAD_COUNT,
    "extra_samples": lambda tmp: ["-1", "x", "1.5", "", "101"],
    "budget": lambda tmp: ["-1", "x", "1.5", "", "1000000001"],
    "number": lambda tmp: BAD_NUMBER,
    "output_file": lambda tmp: [_dir(tmp), _dir(tmp) + "/", _file(tmp) + "/out.json", "", str(tmp)],
    "input_file": lambda tmp: [str(tmp / "missing.json"), _dir(tmp), _fifo(tmp), ""],
    "directory": lambda tmp: [_file(tmp), ""],
    "loaded_file": lambda tmp: [str(tmp / "missing.json"), _dir(tmp), _fifo(tmp), ""],
    "eval_path": lambda tmp: ["", "  "],
    "baseline_spec": lambda tmp: [_dir(tmp), ""],
    "accept_entry": lambda tmp: ["shop", "shop/", "/refund", ""],
    "agent_ref": lambda tmp: ["foo", "", "a:b:c", "my agent:run"],
    "adk_agent": lambda tmp: ["", _file(tmp)],
    "commit": lambda tmp: ["", "a b", "x" * 101, "abc\n"],
    "timestamp": lambda tmp: ["yesterday", "", "2025-13-01"],
    "comment_id": lambda tmp: ["a>b", "", "x" * 101, "--> <!--"],
    "choices": lambda tmp: ["maybe", ""],
    "shard": lambda tmp: ["0/4", "5/4", "x", "", "1/0", "-1/2", "2/1001"],
    "jobs": lambda tmp: ["0", "-1", "x", "", "1001", "auto2", "1.5"],
    "git_ref": lambda tmp: ["", "-x", "--output=f", "a b", "main\n", "x" * 1001],
    "model_name": lambda tmp: ["", "a b", "x" * 201, "m\n"],
}


def flags() -> Iterator[tuple[str, argparse.ArgumentParser, argparse.Action]]:
    """(subcommand, its parser, one of its arguments) for every argument of every subcommand."""
    parser = build_parser()
    subparsers = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    for name, sub in subparsers.choices.items():
        for action in sub._actions:
            if not isinstance(action, argparse._HelpAction):
                yield name, sub, action


_SERVER_NOISE = re.compile(r"-{40}\nException occurred during processing of request.*?-{40}\n", re.S)


def _own(err: str) -> str:
    """stderr without the report a loopback fake server left running by an earlier test may print meanwhile
    (socketserver's handle_error block): only what the command itself wrote is checked."""
    return _SERVER_NOISE.sub("", err)


def kind(action: argparse.Action) -> str:
    """How bad values for this argument are chosen."""
    if action.nargs == 0:
        return "switch"
    if action.choices is not None:
        return "choices"
    return getattr(action.type, "__name__", repr(action.type))


FLAGS = [(cmd, (a.option_strings or [a.dest])[-1]) for cmd, _, a in flags()]


def test_every_flag_has_bad_values() -> None:
    """A new flag must get a validating type (untyped str flags accept anything, silently)."""
    kinds = {f"{cmd} {(a.option_strings or [a.dest])[-1]}": kind(a) for cmd, _, a in flags()}
    missing = {flag: k for flag, k in kinds.items() if k != "switch" and k not in BAD_BY_TYPE}
    assert not missing, f"flags without a validating type or bad values in this test: {missing}"
    assert len(kinds) >= 40  # run, baseline and compare were all walked


def _argv(cmd: str, action: argparse.Action, value: str | None, tmp: Path) -> list[str]:
    """A command line that is valid except for ``action``'s value."""
    args = [cmd]
    if action.dest != "paths":
        args.append(str(tmp / "evals"))
    if cmd == "baseline" and action.dest != "output":
        args += ["--output", str(tmp / "out" / "baseline.json")]
    if cmd == "compare" and action.dest != "baseline":  # not the repository's own .evalbot/baseline.json
        args += ["--baseline", str(tmp / "no-baseline.json")]
    if cmd == "plan" and action.dest != "base":  # --base is required
        args += ["--base", "main"]
    if cmd == "judge-diff" and action.dest != "judge_model":  # --judge-model is required
        args += ["--judge-model", "gemini-2.5-pro"]
    flag = (action.option_strings or [None])[-1]
    if flag is None:
        return [cmd, value or "", *args[1:]]
    return args + ([f"{flag}={value}"] if value is not None else [flag])


@pytest.mark.parametrize(("cmd", "flag"), FLAGS, ids=[f"{c} {f}" for c, f in FLAGS])
def test_bad_flag_values_exit_2_with_one_line(cmd: str, flag: str, tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    """Each bad value: SystemExit(2) while parsing, one stderr line naming the flag, nothing on stdout."""
    (tmp_path / "evals").mkdir()
    action = next(a for c, _, a in flags() if c == cmd and (a.option_strings or [a.dest])[-1] == flag)
    if isinstance(action, argparse._VersionAction):
        pytest.skip("--version takes no value and prints the version")
    values: list[str | None] = ["yes"] if action.nargs == 0 else list(BAD_BY_TYPE[kind(action)](tmp_path))
    for value in values:
        if kind(action) == "loaded_file" and value:  # refused by the loader, naming the file (see cli_args)
            code = main(_argv(cmd, action, value, tmp_path), env={})
            out = capsys.readouterr()
            assert code == 2 and value in out.out + out.err and "Traceback" not in out.err, (flag, value, out)
            continue
        with pytest.raises(SystemExit) as exited:
            main(_argv(cmd, action, value, tmp_path), env={})
        out = capsys.readouterr()
        out = type(out)(out.out, _own(out.err))
        lines = [line for line in out.err.splitlines() if line.strip()]
        shown = flag if action.option_strings else action.metavar or flag
        assert exited.value.code == 2, (flag, value, out.err)
        assert len(lines) == 1 and shown in lines[0] and "Traceback" not in out.err, (flag, value, out.err)
        assert lines[0].startswith(f"evalbot {cmd}: error: ") and out.out == ""
    assert not (tmp_path / "out").exists()  # nothing was written: the run never started


def test_known_cases_from_the_issue(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--judge-concurrency 0 and -3 without a key, and --report DIR: exit 2 before any work."""
    (tmp_path / "evals").mkdir()
    for argv in (["--judge-concurrency", "0"], ["--judge-concurrency", "-3"], ["--report", str(tmp_path)]):
        with pytest.raises(SystemExit) as exited:
            main(["run", str(tmp_path / "evals"), *argv], env={})
        assert exited.value.code == 2
        assert argv[0] in capsys.readouterr().err


def test_judge_cache_from_the_environment_is_checked(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """EVALBOT_JUDGE_CACHE naming a file: exit 2 naming the variable (not a traceback inside the cache)."""
    (tmp_path / "evals").mkdir()
    code = main(["run", str(tmp_path / "evals")], env={"EVALBOT_JUDGE_CACHE": _file(tmp_path)})
    err = capsys.readouterr().err
    assert code == 2 and "EVALBOT_JUDGE_CACHE" in err and "not a directory" in err


def test_a_bug_is_exit_70_not_a_traceback(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    """An unexpected exception is exit 70 with one line (an uncaught traceback would exit 1: "blocked")."""
    def broken(*_: object, **__: object) -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr("evalbot.pipeline.evaluate", broken)  # nothing else can make the real code raise a bug
    (tmp_path / "evals").mkdir()
    assert main(["run", str(tmp_path / "evals")], env={}) == 70
    err = capsys.readouterr().err
    assert "internal error" in err and "RuntimeError: boom" in err and "Traceback" not in err


def test_bad_flag_in_a_real_process(tmp_path: Path) -> None:
    """The console entry point itself: exit 2 and one stderr line."""
    done = subprocess.run([sys.executable, "-m", "evalbot.cli", "compare", str(tmp_path), "--comment", str(tmp_path)],
                          capture_output=True, text=True, check=False, cwd=tmp_path, timeout=120)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.count("\n") == 1 and "argument --comment" in done.stderr and "is a directory" in done.stderr


# --- the Action's inputs ---------------------------------------------------------------------------------------

INPUTS = list(YAML(typ="safe").load((ROOT / "action.yml").read_text(encoding="utf-8"))["inputs"])
BAD_INPUTS: dict[str, Bad] = {
    "eval-sets": lambda tmp: [" , ", ",\n,"],
    "actuals": lambda tmp: ["adir", "pipe.json"],
    "config": lambda tmp: ["adir", "missing.json", "pipe.json"],
    "baseline-path": lambda tmp: ["/etc/baseline.json", "../baseline.json", ".", "adir", "adir/"],
    "fail-on": lambda tmp: ["maybe"],
    "tolerance": lambda tmp: ["2", "x", "-0.1", "nan"],
    "github-token": lambda tmp: ["a b", "tok\nen"],
    "judge-api-key": lambda tmp: ["k\nx", "k y"],
    "openai-api-key": lambda tmp: ["sk\nx", "sk y", "sk\x00"],
    "openai-base-url": lambda tmp: ["ftp://h/v1", "localhost:8000", "http://u:p@h/v1", "http://h /v1", "http://", "x" * 5000],
    "comment-template": lambda tmp: ["adir", "missing.md", "pipe.json"],
    "comment-id": lambda tmp: ["a b", "<!--", "x" * 101],
    "mode": lambda tmp: ["sometimes"],
    "judge-concurrency": lambda tmp: ["0", "-3", "x", "1.5", "100000"],
    "judge-cache": lambda tmp: ["plain.txt"],
    "judge-cache-key": lambda tmp: ["k\nx", "k y", "key\x00"],
    "judge-failures": lambda tmp: ["maybe", "ignore"],
    "judge-deadline": lambda tmp: ["0", "-1", "x", "nan"],
    "sampling": lambda tmp: ["some", "half", "sequential\nfull"],
    "resample-split": lambda tmp: ["-1", "101", "x", "2.5", "nan"],
    "update-baseline": lambda tmp: ["maybe"],
    "only-affected": lambda tmp: ["maybe", "2"],
    "block-flaky": lambda tmp: ["maybe", "2"],
    "artifact-name": lambda tmp: ["a/b", "x:y", "a\nb", "*", "part-?"],
    "report-path": lambda tmp: [".", "adir", "out/", "plain.txt/report.json"],
    "junit-path": lambda tmp: [".", "adir/", "plain.txt/junit.xml"],
    "html-path": lambda tmp: [".", "adir", "plain.txt/report.html"],
    "shard": lambda tmp: ["0/4", "5/4", "x", "1/0", "2", "1/1001"],
    "parts": lambda tmp: ["/etc", "../parts", "plain.txt", "adir/../../x"],
    "judge-budget-requests": lambda tmp: ["-1", "x", "1.5", "1000000001", "nan"],
    "judge-budget-usd": lambda tmp: ["-1", "x", "nan", "inf", "1e7"],
}


def test_every_input_has_bad_values() -> None:
    """A new input in action.yml must get bad values here."""
    assert sorted(INPUTS) == sorted(BAD_INPUTS)


@pytest.mark.parametrize("name", INPUTS)
def test_bad_action_inputs_exit_2_with_one_line(name: str, tmp_path: Path) -> None:
    """Each bad value: exit 2 before the run starts, one error annotation naming the input, no traceback."""
    env = pr_env(tmp_path)
    ws = Path(env["GITHUB_WORKSPACE"])
    (ws / "adir").mkdir()
    (ws / "plain.txt").write_text("x", encoding="utf-8")
    os.mkfifo(ws / "pipe.json")
    for value in BAD_INPUTS[name](tmp_path):
        out = io.StringIO()
        code = run_action({**env, f"INPUT_{name.upper()}": value}, out=out)
        text = out.getvalue()
        errors = [line for line in text.splitlines() if line.startswith("::error")]
        assert code == 2, (name, value, text)
        assert len(errors) == 1 and f"input {name}" in errors[0] and "Traceback" not in text, (name, value, text)
        assert "evalbot: mode" not in text  # refused before the run started
        assert not (ws / ".evalbot-out").exists()


def test_report_path_dot_through_the_entrypoint(tmp_path: Path) -> None:
    """The Action's `report-path: .` (was exit 70 "please report it") in the real container entry point."""
    env = {**os.environ, **pr_env(tmp_path), "INPUT_REPORT-PATH": ".", "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, str(ROOT / "entrypoint.py")], capture_output=True, text=True,
                          check=False, env=env, timeout=120)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "input report-path" in done.stdout and "is a directory" in done.stdout
    assert "Traceback" not in done.stdout + done.stderr and "please report" not in done.stdout


def test_the_checks_accept_good_values(tmp_path: Path) -> None:
    """The validators are not refusing everything: typical good values pass."""
    assert cli_args.integer(1, 256)("16") == 16
    assert cli_args.number(0, 1)("0.25") == 0.25
    assert cli_args.output_file(str(tmp_path / "new" / "report.json"))
    assert cli_args.input_file(_file(tmp_path))
    assert cli_args.agent_ref("my_agent.app:run") == "my_agent.app:run"
    assert cli_args.timestamp("2025-06-01T00:00:00+00:00")
    assert cli_args.comment_id("suite/a-1.b_c") == "suite/a-1.b_c"
