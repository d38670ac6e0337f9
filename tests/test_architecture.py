"""The layout the tools enforce: no import cycles (function-level imports and cycles through a package's
``__init__`` included), lazy imports only where they are commented, the core free of the front ends, the front ends
apart, the SDKs fenced, few modules at the top, and test modules that do not import each other.

ruff's banned-api (TID251, pyproject.toml) keeps the core from importing ``evalbot.cli``, ``evalbot.action`` and
``evalbot.pipeline``; it cannot see function-level cycles or tell one front end from the other, so this test reads
the import graph itself with ``ast``. ``python tests/test_architecture.py`` prints the graph.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "evalbot"

CORE = ("evalbot.formats", "evalbot.criteria", "evalbot.judges", "evalbot.scoring", "evalbot.results",
        "evalbot.compare", "evalbot.render", "evalbot.forge", "evalbot.load", "evalbot.errors", "evalbot.turnpack",
        "evalbot.shard", "evalbot.basecommit", "evalbot.selection")
"""Packages and modules below the pipeline: pure but for the objects handed to them."""
FRONT_ENDS = ("evalbot.cli", "evalbot.action")
ABOVE_CORE = (*FRONT_ENDS, "evalbot.pipeline", "evalbot.runner")
SDKS = {"github": ("evalbot.forge.pygithub",),
        "google.genai": ("evalbot.judges.gemini", "evalbot.judges.vertex_eval"),
        "openai": ("evalbot.judges.openai_chat",)}
MAX_TOP_LEVEL = 12


@dataclass(frozen=True)
class Edge:
    """One import: from module, to module, where, and how (top, function or type-checking)."""

    source: str
    target: str
    line: int
    kind: str
    comment: str


def _module(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _target(name: str) -> str | None:
    """The evalbot module an imported dotted name refers to (a package's submodule, or the module holding a name)."""
    while name:
        if name in MODULES:
            return name
        name = name.rpartition(".")[0]
    return None


def _is_type_checking(node: ast.If) -> bool:
    return "TYPE_CHECKING" in ast.unparse(node.test)


def edges(module: str, source: str | None = None) -> Iterator[Edge]:
    """Every import of an evalbot module by ``module`` (its file, or ``source``), at any depth.

    ``from P import x`` with P a package is an import of P's ``__init__`` as well as of ``P.x`` (Python reads the name
    from the package), so a module of P written that way while P's ``__init__`` imports it closes a cycle."""
    path = MODULES[module]
    source = path.read_text(encoding="utf-8") if source is None else source
    lines = source.splitlines()
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]

    def visit(node: ast.AST, kind: str) -> Iterator[Edge]:
        for child in ast.iter_child_nodes(node):
            inner = kind
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
                inner = "function"
            elif isinstance(child, ast.If) and _is_type_checking(child) and kind == "top":
                inner = "type"
            if isinstance(child, ast.Import | ast.ImportFrom):
                comment = lines[child.lineno - 1].partition("#")[2]
                names: list[str] = []
                if isinstance(child, ast.Import):
                    names = [a.name for a in child.names]
                else:
                    base = child.module or ""
                    if child.level:
                        anchor = package.split(".")[: len(package.split(".")) - child.level + 1]
                        base = ".".join([*anchor, *([base] if base else [])])
                    names = [f"{base}.{a.name}" for a in child.names] or [base]
                    if base in MODULES and MODULES[base].name == "__init__.py" and base != module:
                        yield Edge(module, base, child.lineno, kind, comment.strip())
                for name in names:
                    target = _target(name) if name.startswith("evalbot") else None
                    if target is not None and target != module:
                        yield Edge(module, target, child.lineno, kind, comment.strip())
                    elif not name.startswith("evalbot"):
                        yield Edge(module, name, child.lineno, kind, comment.strip())
            yield from visit(child, inner)

    yield from visit(ast.parse(source), "top")


GRAPH = {m: list(edges(m)) for m in MODULES}


def _internal(edge: Edge) -> bool:
    return edge.target in MODULES


def cycles() -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan), over every kind of import."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10 * len(MODULES)))

    def connect(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted({e.target for e in GRAPH[v] if _internal(e)}):
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for module in MODULES:
        if module not in index:
            connect(module)
    return found


def _within(module: str, prefixes: tuple[str, ...]) -> bool:
    return any(module == p or module.startswith(p + ".") for p in prefixes)


def test_no_import_cycles() -> None:
    """No group of evalbot modules imports itself round, counting function-level and type-checking imports."""
    assert cycles() == []


def test_function_level_imports_are_commented_lazy_loads() -> None:
    """An import inside a function is a lazy load of something slow, and its comment says so ("lazily: why")."""
    hidden = [f"{e.source}:{e.line} imports {e.target}" for edges_ in GRAPH.values() for e in edges_
              if e.kind == "function" and _internal(e) and "lazily" not in e.comment]
    assert hidden == []


def test_core_never_imports_the_front_ends_the_pipeline_or_the_runner() -> None:
    """formats, criteria, judges, scoring, results, compare, render (and forge, load) sit below the pipeline."""
    up = [f"{e.source}:{e.line} imports {e.target}" for m, edges_ in GRAPH.items() if _within(m, CORE)
          for e in edges_ if _within(e.target, ABOVE_CORE)]
    assert up == []


def test_compare_never_imports_render() -> None:
    """compare decides; render presents what it decided. What both need (the look-alike id check, the score
    formatter) lives below them, in formats (issue 25: compare/delta.py imported render.mdsafe)."""
    up = [f"{e.source}:{e.line} imports {e.target}" for m, edges_ in GRAPH.items() if _within(m, ("evalbot.compare",))
          for e in edges_ if _within(e.target, ("evalbot.render",))]
    assert up == []


def test_formats_import_nothing_above_them() -> None:
    """formats is the bottom of the core: it imports only errors, paths, redact and itself."""
    allowed = ("evalbot.formats", "evalbot.errors", "evalbot.paths", "evalbot.redact")
    up = [f"{e.source}:{e.line} imports {e.target}" for m, edges_ in GRAPH.items() if _within(m, ("evalbot.formats",))
          for e in edges_ if _internal(e) and not _within(e.target, allowed)]
    assert up == []


def test_front_ends_do_not_borrow_from_each_other() -> None:
    """The CLI and the Action both call the pipeline; neither imports the other."""
    sideways = [f"{e.source}:{e.line} imports {e.target}" for m, edges_ in GRAPH.items() for e in edges_
                if (_within(m, ("evalbot.cli",)) and _within(e.target, ("evalbot.action",)))
                or (_within(m, ("evalbot.action",)) and _within(e.target, ("evalbot.cli",)))]
    assert sideways == []


def test_sdks_are_imported_by_their_adapters_only() -> None:
    """PyGithub, google-genai and openai stay behind forge/pygithub.py, judges/gemini.py (vertex_eval.py for
    Vertex) and judges/openai_chat.py."""
    leaks = [f"{e.source}:{e.line} imports {e.target}" for m, edges_ in GRAPH.items() for e in edges_
             for sdk, allowed in SDKS.items()
             if (e.target == sdk or e.target.startswith(sdk + ".")) and m not in allowed]
    assert leaks == []


def test_few_modules_at_the_top_of_the_package() -> None:
    """The top of evalbot/ holds at most a dozen modules; everything else lives in a package named for its job."""
    top = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert len(top) <= MAX_TOP_LEVEL, top


def test_the_graph_sees_function_level_and_cyclic_imports(tmp_path: Path) -> None:
    """The checker itself: a function-level import closing a loop is found (so a passing run means something)."""
    a = "from evalbot.errors import InputError\n\n\ndef f():\n    from evalbot.load import discover\n    return discover\n"
    tree = ast.parse(a)
    kinds = []
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef):
            kinds += [n.module for n in ast.walk(node) if isinstance(n, ast.ImportFrom)]
    assert kinds == ["evalbot.load"]
    saved = dict(GRAPH)
    try:
        GRAPH["evalbot.errors"] = [*GRAPH["evalbot.errors"], Edge("evalbot.errors", "evalbot.load", 1, "function", "")]
        assert any({"evalbot.errors", "evalbot.load"} <= set(c) for c in cycles())
    finally:
        GRAPH.clear()
        GRAPH.update(saved)


def test_a_cycle_through_a_package_init_is_seen() -> None:
    """``from evalbot.cli import args`` in a module that evalbot/cli/__init__.py imports was a cycle through the
    package's ``__init__`` the graph did not see (it only saw evalbot.cli.args)."""
    found = list(edges("evalbot.cli.commands", "from evalbot.cli import args as cli_args\n"))
    assert {e.target for e in found} == {"evalbot.cli", "evalbot.cli.args"}
    saved = dict(GRAPH)
    try:
        GRAPH["evalbot.cli"] = [Edge("evalbot.cli", "evalbot.cli.commands", 3, "top", "")]
        GRAPH["evalbot.cli.commands"] = found
        assert any({"evalbot.cli", "evalbot.cli.commands"} <= set(c) for c in cycles())
    finally:
        GRAPH.clear()
        GRAPH.update(saved)


TESTS = ROOT / "tests"


def test_module_imports(path: Path) -> list[str]:
    """The test modules (``test_*.py``) a test file imports: shared builders belong in tests/fakes (or a conftest)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = []
    for node in ast.walk(tree):
        names = [a.name for a in node.names] if isinstance(node, ast.Import) else (
            [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else [])
        found += [f"{path.relative_to(path.parents[1])}:{node.lineno} imports {name}" for name in names
                  if name.startswith("tests.") and name.rpartition(".")[2].startswith("test_")]
    return found


test_module_imports.__test__ = False  # type: ignore[attr-defined]  # a helper, not a test


def test_test_modules_do_not_import_each_other() -> None:
    """tests/criteria/test_echoed_answers.py imported test_pointwise_template, the e2e tests test_pull_request: a test
    module imported by another runs its module-level code twice and ties the two together."""
    found = [hit for path in sorted(TESTS.rglob("*.py")) for hit in test_module_imports(path)]
    assert found == []


def test_the_test_import_check_sees_both_forms(tmp_path: Path) -> None:
    (tmp_path / "tests").mkdir()
    planted = tmp_path / "tests" / "test_x.py"
    planted.write_text("from tests.e2e.test_pull_request import make_baseline\nimport tests.cli.test_compare\n"
                       "from tests.fakes.builders import inv\n", encoding="utf-8")
    assert test_module_imports(planted) == ["tests/test_x.py:1 imports tests.e2e.test_pull_request",
                                            "tests/test_x.py:2 imports tests.cli.test_compare"]


if __name__ == "__main__":
    for name, found in sorted(GRAPH.items()):
        for edge in found:
            if _internal(edge):
                print(f"{name} -> {edge.target}  [{edge.kind}:{edge.line}]")
    print("cycles:", cycles() or "none")
