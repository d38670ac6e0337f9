"""The custom-metric worker: the only process that imports a repository's metric module (see criteria.custom).

evalbot runs this file as a script in a child process (``python -E custom_worker.py``) with an environment stripped
of secrets, and never imports it itself: it needs the standard library only (plus google-adk for ADK's contract).
The protocol is one JSON object per line.  The first request names the function and the import path; the answer is
``{"contract", "where"}`` or ``{"error", "message"}`` (what the metric's code is, the gate reads from the files
itself: criteria.custom_code; nothing this process says about it would be believed).  Each later request is
``{"items": [...]}`` and gets one answer line per item, in order: ``{"value": ...}``,
``{"unserializable": "type name"}`` or ``{"error": "message"}``.  The parent applies every deadline and kills this process (and everything it started) when a
call hangs, so nothing here times anything.  The module's own prints go to stderr: the answers use a private copy of
the original stdout.
"""

from __future__ import annotations

import asyncio
import importlib
import inspect
import json
import os
import sys
from collections.abc import Callable
from typing import Any

ADK_ARGS = ("eval_metric", "actual_invocations", "expected_invocations", "conversation_scenario")


def _send(fd: int, message: dict[str, Any] | str) -> None:
    data = ((message if isinstance(message, str) else json.dumps(message)) + "\n").encode()
    while data:
        data = data[os.write(fd, data):]


def _signature_contract(function: Callable[..., Any], function_path: str) -> tuple[str | None, str]:
    """``("vertex" | "adk", "")`` or ``(None, message)``."""
    try:
        signature = inspect.signature(function)
    except (TypeError, ValueError) as exc:
        return None, f"{function_path}: cannot read its signature ({exc})"
    positional = [
        p for p in signature.parameters.values()
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty
    ]
    required_kw = [p for p in signature.parameters.values() if p.kind is p.KEYWORD_ONLY and p.default is p.empty]
    if not required_kw and len(positional) == 1:
        return "vertex", ""
    if not required_kw and len(positional) == 4:
        return "adk", ""
    return None, (
        f"{function_path}{signature} has the wrong signature: a custom metric takes one argument (Vertex: an "
        f"instance dict per invocation) or four (ADK: {', '.join(ADK_ARGS)})"
    )


def _resolve(function_path: str) -> tuple[Callable[..., Any] | None, dict[str, Any]]:
    module_name, _, attr = function_path.rpartition(".")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        return None, {"error": "not_found", "message": str(exc)}
    except BaseException as exc:  # the module's top-level code: anything it raises is its error
        return None, {"error": "config", "message": f"importing {module_name} raised {type(exc).__name__}: {exc}"}
    where = getattr(module, "__file__", None) or module_name
    try:
        function = getattr(module, attr)
    except AttributeError:
        return None, {"error": "config", "message": f"{function_path}: {where} defines no {attr!r}"}
    if not callable(function):
        return None, {"error": "config",
                      "message": f"{function_path} ({where}) is a {type(function).__name__}, not a function"}
    contract, problem = _signature_contract(function, function_path)
    if contract is None:
        return None, {"error": "config", "message": problem}
    return function, {"contract": contract, "where": str(where)}


async def _awaited(value: Any) -> Any:
    return await value


def _call(function: Callable[..., Any], *args: Any) -> Any:
    value = function(*args)
    if inspect.isawaitable(value):
        value = asyncio.run(_awaited(value))
    return value


def _vertex(function: Callable[..., Any], item: dict[str, Any]) -> dict[str, Any]:
    value = _call(function, item["arg"])
    if isinstance(value, dict) and value.get("explanation") is not None:
        value = {**value, "explanation": str(value["explanation"])[:2000]}
    return {"value": value}


def _adk(function: Callable[..., Any], item: dict[str, Any]) -> dict[str, Any]:
    case = importlib.import_module("google.adk.evaluation.eval_case")
    metrics = importlib.import_module("google.adk.evaluation.eval_metrics")
    evaluator = importlib.import_module("google.adk.evaluation.evaluator")
    path = item["path"]
    try:
        criterion = metrics.BaseCriterion.model_validate(item["criterion"])
        eval_metric = metrics.EvalMetric(
            metric_name=item["metric_name"], threshold=None, criterion=criterion, custom_function_path=path
        )
        actual = [case.Invocation.model_validate(inv) for inv in item["actual"]]
        expected = None if item["expected"] is None else [case.Invocation.model_validate(e) for e in item["expected"]]
        scenario = None if item["scenario"] is None else case.ConversationScenario.model_validate(item["scenario"])
    except Exception as exc:  # our data in ADK's models: should not fail, but must not lose the case
        return {"error": f"the case could not be given to {path} as ADK objects: {type(exc).__name__}: {exc}"}
    returned = _call(function, eval_metric, actual, expected, scenario)
    try:
        result = evaluator.EvaluationResult.model_validate(returned, from_attributes=True)
    except Exception as exc:  # whatever the function returned
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        return {"error": f"{path} returned {type(returned).__name__}, not an EvaluationResult ({first})"}

    def status(raw: Any) -> Any:
        number = getattr(raw, "value", raw)
        return number if isinstance(number, int) and not isinstance(number, bool) else repr(raw)

    return {"value": {
        "overall_score": result.overall_score,
        "overall_eval_status": status(result.overall_eval_status),
        "per_invocation_results": [
            {"score": p.score, "eval_status": status(p.eval_status)} for p in result.per_invocation_results or []
        ],
    }}


def _answer(function: Callable[..., Any], contract: str, item: dict[str, Any]) -> str:
    """The answer line for one call (JSON, without the line end)."""
    try:
        answer = _vertex(function, item) if contract == "vertex" else _adk(function, item)
    except BaseException as exc:  # the user's function: anything it raises is its error
        return json.dumps({"error": f"{item['what']} raised {type(exc).__name__}: {exc}"})
    try:
        return json.dumps(answer)
    except (TypeError, ValueError, RecursionError):
        return json.dumps({"unserializable": type(answer.get("value")).__name__})


OUTSIDE_IDENTITY = (
    "is a repository file outside this custom metric's code identity (the files evalbot hashed before running it), "
    "so a change to it would not show as a changed definition: list the files the metric reads, or imports by a "
    "computed name or from a folder it adds to sys.path, in its custom_metrics entry's \"data_files\" (globs from "
    "the repository root)"
)


def confine(roots: list[str], readable: list[str]) -> None:
    """From now on this process may read, of the repository (``roots``), only the ``readable`` files (the metric's
    code identity, criteria.custom_code): opening any other repository file for reading raises PermissionError (a
    module found through ``importlib``'s bytecode cache falls back to its source, so a committed ``__pycache__``
    never runs), importing an extension module from it raises ImportError, and so does loading a shared library
    from it with ctypes. Folders may be listed; files may be written. The interpreter's own installation (a
    virtual environment inside the repository) and this script's package are not the repository's code. An audit
    hook cannot be removed: repository code runs only after it is in place, and only code the gate hashed."""
    allowed = frozenset(readable)
    inside = tuple(root.rstrip(os.sep) + os.sep for root in roots)
    here = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
    exempt = tuple({os.path.realpath(p).rstrip(os.sep) + os.sep for p in (sys.prefix, sys.base_prefix,
                                                                          sys.exec_prefix, here)})
    realpath, fsdecode, isdir = os.path.realpath, os.fsdecode, os.path.isdir
    accmode, wronly = getattr(os, "O_ACCMODE", 3), os.O_WRONLY  # Windows has no O_ACCMODE: the same two bits

    def outside_identity(path: object) -> str | None:
        if not isinstance(path, str | bytes | os.PathLike):
            return None
        real = realpath(fsdecode(path))
        if not real.startswith(inside) or real in allowed or real.startswith(exempt) or isdir(real):
            return None
        return real

    def hook(event: str, args: tuple[Any, ...]) -> None:
        if event == "open":
            path, mode, flags = args
            reads = ("r" in mode or "+" in mode) if isinstance(mode, str) else (flags & accmode) != wronly
            if reads and (real := outside_identity(path)) is not None:
                raise PermissionError(13, f"evalbot: {real} {OUTSIDE_IDENTITY}")
        elif event in ("import", "ctypes.dlopen"):
            if len(args) > 1 and event == "import":
                path = args[1]
            else:
                path = args[0] if args else None
            if (real := outside_identity(path)) is not None:
                raise ImportError(f"evalbot: {real} {OUTSIDE_IDENTITY}")

    sys.addaudithook(hook)


def main() -> None:
    """Serve one metric until stdin closes."""
    answers = os.dup(1)
    os.dup2(2, 1)  # the module's prints go to stderr, never into the answers
    _send(answers, {"ready": True})  # the interpreter is up: the import's deadline starts now
    requests = sys.stdin.buffer
    hello = json.loads(requests.readline())
    sys.path[:] = hello["sys_path"]
    sys.dont_write_bytecode = True  # the repository's modules are compiled from the sources the gate hashed
    confine(hello["roots"], hello["readable"])
    function, reply = _resolve(hello["function"])
    _send(answers, reply)
    if function is None:
        return
    contract = reply["contract"]
    for line in requests:
        for item in json.loads(line)["items"]:
            _send(answers, _answer(function, contract, item))


if __name__ == "__main__":
    try:
        main()
    finally:
        os._exit(0)  # never wait for threads the module started: the parent has stopped listening
