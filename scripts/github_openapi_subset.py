"""Trim GitHub's OpenAPI description to the operations evalbot uses, for the contract-checked fake.

The full description ships in the npm package ``@octokit/openapi`` (MIT) as
``generated/api.github.com.json`` (about 13 MB). This script keeps only the operations listed in
``OPERATIONS`` and the components they reach through ``$ref``, and writes a stable, sorted JSON file
that is committed as ``contracts/github-openapi-subset.json``. Regenerate with::

    npm install --prefix /tmp/octo @octokit/openapi
    python scripts/github_openapi_subset.py \
        /tmp/octo/node_modules/@octokit/openapi/generated/api.github.com.json \
        contracts/github-openapi-subset.json
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

OPERATIONS: tuple[str, ...] = (
    "users/get-authenticated",
    "repos/get",
    "pulls/get",
    "pulls/list",
    "pulls/list-files",
    "issues/list-comments",
    "issues/create-comment",
    "issues/get-comment",
    "issues/update-comment",
    "issues/delete-comment",
    "repos/get-content",
    "repos/create-or-update-file-contents",
    "actions/list-workflow-run-artifacts",
    "actions/download-artifact",
    "repos/create-commit-status",
)
"""operationIds of every GitHub REST call that evalbot's forge makes (keep in sync with the fake)."""

_METHODS = frozenset({"get", "put", "post", "patch", "delete"})
_DROPPED_KEYS = frozenset({"x-github", "x-octokit"})


def _refs(node: Any, out: set[str]) -> set[str]:
    """Collect every local ``#/components/...`` reference inside ``node``."""
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/components/"):
            out.add(ref)
        for value in node.values():
            _refs(value, out)
    elif isinstance(node, list):
        for value in node:
            _refs(value, out)
    return out


def subset(doc: dict[str, Any], operation_ids: tuple[str, ...] = OPERATIONS) -> dict[str, Any]:
    """Return a self-contained OpenAPI document with only ``operation_ids`` and their components."""
    missing, paths = set(operation_ids), {}
    for path, item in doc["paths"].items():
        for method, op in item.items():
            if method in _METHODS and op.get("operationId") in missing:
                paths.setdefault(path, {})[method] = {k: v for k, v in op.items() if k not in _DROPPED_KEYS}
                missing.discard(op["operationId"])
        if path in paths and "parameters" in item:
            paths[path]["parameters"] = item["parameters"]
    if missing:
        raise SystemExit(f"operationIds not found in the source document: {sorted(missing)}")
    todo, seen = sorted(_refs(paths, set())), set()
    while todo:
        ref = todo.pop()
        if ref in seen:
            continue
        seen.add(ref)
        _, _, section, name = ref.split("/", 3)
        todo.extend(sorted(_refs(doc["components"][section][name], set()) - seen))
    components: dict[str, dict[str, Any]] = {}
    for ref in sorted(seen):
        _, _, section, name = ref.split("/", 3)
        components.setdefault(section, {})[name] = doc["components"][section][name]
    return {
        "openapi": doc["openapi"],
        "info": doc["info"],
        "servers": doc.get("servers", []),
        "paths": paths,
        "components": components,
    }


def main(argv: list[str] | None = None) -> int:
    """Command line: SOURCE.json OUT.json."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("source", type=Path, help="api.github.com.json from @octokit/openapi")
    parser.add_argument("out", type=Path, help="where to write the subset")
    args = parser.parse_args(argv)
    out = subset(json.loads(args.source.read_text(encoding="utf-8")))
    text = json.dumps(out, indent=1, sort_keys=True, ensure_ascii=False) + "\n"
    args.out.write_text(text, encoding="utf-8")
    n_ops = sum(1 for item in out["paths"].values() for m in item if m in _METHODS)
    schemas = len(out["components"].get("schemas", {}))
    print(f"{n_ops} operations, {len(out['paths'])} paths, {schemas} schemas, {len(text):,} bytes -> {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
