"""Check HTTP exchanges against the committed OpenAPI 3.0 subset of GitHub's REST description with jsonschema."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jsonschema import Draft4Validator
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT4

SPEC_PATH = Path(__file__).resolve().parents[2] / "contracts" / "github-openapi-subset.json"
SPEC_URI = "urn:evalbot:github-openapi-subset"
METHODS = ("get", "put", "post", "patch", "delete")


def _pointer(*parts: str) -> str:
    return "#/" + "/".join(p.replace("~", "~0").replace("/", "~1") for p in parts)


def to_json_schema(node: Any) -> Any:
    """OpenAPI 3.0 schema dialect -> JSON Schema: ``nullable: true`` becomes an explicit null option."""
    if isinstance(node, list):
        return [to_json_schema(v) for v in node]
    if not isinstance(node, dict):
        return node
    out = {k: to_json_schema(v) for k, v in node.items() if k != "nullable"}
    if node.get("nullable") is True:
        if isinstance(out.get("type"), str):
            out["type"] = [out["type"], "null"]
            if "enum" in out and None not in out["enum"]:
                out["enum"] = [*out["enum"], None]
        else:
            return {"anyOf": [out, {"type": "null"}]}
    return out


@dataclass(frozen=True)
class Operation:
    """One (method, path template) of the subset."""

    method: str
    template: str
    operation_id: str
    regex: re.Pattern[str]


class Contract:
    """Routes paths to operations and validates requests and responses against their schemas."""

    def __init__(self, spec_path: Path = SPEC_PATH) -> None:
        raw = json.loads(spec_path.read_text(encoding="utf-8"))
        examples = raw["components"].pop("examples", {})
        self.spec: dict[str, Any] = to_json_schema(raw)
        self.spec["components"]["examples"] = examples
        self._registry: Registry[Any] = Registry().with_resource(
            SPEC_URI, Resource.from_contents(self.spec, default_specification=DRAFT4)
        )
        self.operations: list[Operation] = []
        for template, item in self.spec["paths"].items():
            rx = re.sub(r"\{(\w+)\}", lambda m: f"(?P<{m[1]}>{'.+' if m[1] == 'path' else '[^/]+'})", template)
            for method in METHODS:
                if method in item:
                    op = Operation(method.upper(), template, item[method]["operationId"], re.compile(rx + "$"))
                    self.operations.append(op)
        # Most literal characters first, so /issues/comments/{id} wins over /issues/{number}/comments.
        self.operations.sort(key=lambda o: -len(re.sub(r"\{\w+\}", "", o.template)))

    def example(self, name: str) -> Any:
        """A deep copy of ``components/examples/<name>/value``."""
        return json.loads(json.dumps(self.spec["components"]["examples"][name]["value"]))

    def match(self, method: str, path: str) -> tuple[Operation, dict[str, str]] | None:
        """The operation serving ``method path`` (path relative to the API root) and its path params."""
        for op in self.operations:
            hit = op.regex.match(path)
            if op.method == method and hit:
                return op, hit.groupdict()
        return None

    def _resolve(self, node: dict[str, Any]) -> tuple[dict[str, Any], str | None]:
        """Follow a local ``$ref`` once; return the target and its pointer."""
        ref = node.get("$ref")
        if not ref:
            return node, None
        target: Any = self.spec
        for part in ref[2:].split("/"):
            target = target[part.replace("~1", "/").replace("~0", "~")]
        return target, ref

    def _errors(self, pointer: str, instance: Any) -> list[str]:
        validator = Draft4Validator({"$ref": SPEC_URI + pointer}, registry=self._registry)
        return [
            f"{'/'.join(map(str, e.absolute_path)) or '<root>'}: {e.message[:160]}"
            for e in sorted(validator.iter_errors(instance), key=lambda e: list(map(str, e.path)))[:5]
        ]

    def check_request(
        self, op: Operation, path_params: dict[str, str], query: dict[str, str], body: bytes
    ) -> list[str]:
        """Violations of the operation's parameters and request body."""
        item = self.spec["paths"][op.template]
        spec_op = item[op.method.lower()]
        problems: list[str] = []
        params: list[tuple[dict[str, Any], str]] = []
        for level, owner in (((), item), ((op.method.lower(),), spec_op)):
            for index, entry in enumerate(owner.get("parameters", [])):
                param, ref = self._resolve(entry)
                at = ref[2:].split("/") if ref else ["paths", op.template, *level, "parameters", str(index)]
                params.append((param, _pointer(*at, "schema")))
        known = {p["name"] for p, _ in params if p["in"] == "query"}
        problems += [f"query parameter {k!r} is not in the spec" for k in query if k not in known]
        for param, pointer in params:
            where, name = param["in"], param["name"]
            values = path_params if where == "path" else query if where == "query" else None
            if values is None:
                continue
            if name not in values:
                if param.get("required"):
                    problems.append(f"missing required {where} parameter {name!r}")
                continue
            value = _coerce(values[name], param.get("schema", {}))
            problems += [f"{where} parameter {name}: {e}" for e in self._errors(pointer, value)]
        request_body = spec_op.get("requestBody")
        if request_body is None:
            if body:
                problems.append("request has a body the operation does not take")
            return problems
        if not body:
            if request_body.get("required"):
                problems.append("required request body missing")
            return problems
        try:
            document = json.loads(body)
        except ValueError:
            return [*problems, "request body is not JSON"]
        pointer = _pointer(
            "paths", op.template, op.method.lower(), "requestBody", "content", "application/json", "schema"
        )
        return problems + [f"request body {e}" for e in self._errors(pointer, document)]

    def check_response(self, op: Operation, status: int, content_type: str, body: bytes) -> list[str]:
        """Violations of the declared responses: undeclared status, wrong media type, schema errors."""
        responses = self.spec["paths"][op.template][op.method.lower()]["responses"]
        key = str(status) if str(status) in responses else "default" if "default" in responses else None
        if key is None:
            return [f"status {status} is not declared for {op.operation_id}"]
        declared, ref = self._resolve(responses[key])
        content = declared.get("content")
        if not content:
            return [] if not body else [f"status {status} declares no body but one was sent"]
        media = content_type.split(";")[0].strip()
        if media not in content:
            return [f"media type {media!r} not declared for {status} (declared: {sorted(content)})"]
        try:
            document = json.loads(body)
        except ValueError:
            return [f"{status} body is not JSON"]
        base = ref[2:].split("/") if ref else ["paths", op.template, op.method.lower(), "responses", key]
        return [f"response {e}" for e in self._errors(_pointer(*base, "content", media, "schema"), document)]


def _coerce(value: str, schema: dict[str, Any]) -> Any:
    """Query/path strings as the type their schema declares (so '100' checks against maximum 100)."""
    kind = schema.get("type")
    try:
        if kind == "integer":
            return int(value)
        if kind == "number":
            return float(value)
    except ValueError:
        return value
    if kind == "boolean" and value in ("true", "false"):
        return value == "true"
    return value


_SHARED: Contract | None = None


def contract() -> Contract:
    """The parsed subset, loaded once per process (parsing takes a few hundred milliseconds)."""
    global _SHARED
    if _SHARED is None:
        _SHARED = Contract()
    return _SHARED
