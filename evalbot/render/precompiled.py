"""evalbot's own templates compiled ahead of time: Jinja's Python code for each, kept in ``templates/precompiled.json``.

Turning a template into Python code (Jinja's parser and code generator, pure Python) is most of what loading one
costs: about 0.04 s for the comment's two files, once per process, against 0.01 s to compile the generated code.
:class:`PrecompiledLoader` is the package loader of the comment's and the HTML page's environments; it takes the
generated code from that file when the template's text and the environment's compile settings are the ones it was
generated from (a SHA-256 of each), and otherwise compiles the template as Jinja does. So the file only ever saves
time: an edited template, another Jinja version or other environment settings are compiled afresh.

The file is part of the package, as trusted as the templates it is made from; a user's comment template (the
config's ``comment_template``) never goes through it. ``python scripts/precompile_templates.py`` writes it again
(tests/render/test_precompiled.py fails while it is stale).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, MutableMapping
from functools import cache
from pathlib import Path
from typing import Any

import jinja2

PRECOMPILED = Path(__file__).parent / "templates" / "precompiled.json"


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def compile_key(env: jinja2.Environment) -> str:
    """A digest of what Jinja's code generation reads of ``env`` besides the template's text: its version, the
    environment's class, its syntax and whitespace settings, autoescaping, finalize, the sandbox's intercepted
    operators, async and optimisation, its extensions."""
    finalize = env.finalize
    settings = (
        jinja2.__version__, [f"{c.__module__}.{c.__qualname__}" for c in type(env).__mro__],
        env.block_start_string, env.block_end_string, env.variable_start_string, env.variable_end_string,
        env.comment_start_string, env.comment_end_string, env.line_statement_prefix, env.line_comment_prefix,
        env.trim_blocks, env.lstrip_blocks, env.newline_sequence, env.keep_trailing_newline, env.optimized,
        env.is_async, repr(env.autoescape) if not callable(env.autoescape) else "callable",
        None if finalize is None else getattr(finalize, "__qualname__", repr(type(finalize))),
        sorted(getattr(env, "intercepted_binops", ())), sorted(getattr(env, "intercepted_unops", ())),
        sorted(env.extensions),
    )
    return _digest(repr(settings))


@cache
def table() -> dict[str, dict[str, str]]:
    """``name`` -> {``key``, ``source``, ``code``} from the file; empty when it is missing or not as written."""
    try:
        data = json.loads(PRECOMPILED.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    entries = data.get("templates") if isinstance(data, dict) else None
    if not isinstance(entries, dict):
        return {}
    return {name: entry for name, entry in entries.items() if isinstance(entry, dict)
            and all(isinstance(entry.get(k), str) for k in ("key", "source", "code"))}


class PrecompiledLoader(jinja2.PackageLoader):
    """evalbot's templates folder (``evalbot.render/templates``), each template's code taken from the precompiled
    file when it was generated from this text under these settings, else compiled as Jinja does."""

    def __init__(self) -> None:
        super().__init__("evalbot.render", "templates")

    def load(self, environment: jinja2.Environment, name: str,
             globals: MutableMapping[str, Any] | None = None) -> jinja2.Template:
        entry = table().get(name)
        if entry is None or environment.bytecode_cache is not None:
            return super().load(environment, name, globals)
        source, filename, uptodate = self.get_source(environment, name)
        if entry["source"] != _digest(source) or entry["key"] != compile_key(environment):
            return super().load(environment, name, globals)
        code = compile(entry["code"], filename or "<template>", "exec")
        return environment.template_class.from_code(environment, code, {} if globals is None else globals, uptodate)


def generated(envs: Iterable[tuple[jinja2.Environment, Callable[[str], bool]]]) -> dict[str, Any]:
    """The file's content: for each environment, the code of each of its templates (names chosen by the
    predicate) generated from their current text under its settings."""
    templates: dict[str, dict[str, str]] = {}
    for env, wanted in envs:
        assert env.loader is not None
        for name in sorted(n for n in env.loader.list_templates() if wanted(n)):
            source = env.loader.get_source(env, name)[0]
            templates[name] = {"key": compile_key(env), "source": _digest(source),
                               "code": env.compile(source, name, raw=True)}
    return {"jinja2": jinja2.__version__, "templates": templates}
