"""action.yml, Dockerfile and requirements.lock agree with the code and with GitHub's rules for docker actions."""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML

from evalbot.action.publish import Outcome
from evalbot.action.settings import ActionInputs, input_names, inputs_from_env

ROOT = Path(__file__).resolve().parents[2]


def action() -> dict[str, Any]:
    return dict(YAML(typ="safe").load((ROOT / "action.yml").read_text(encoding="utf-8")))


def test_inputs_match_the_settings_fields() -> None:
    """Every input maps to exactly one ActionInputs field (kebab-case -> snake_case) and back, and the settings
    read each input by the name action.yml gives it."""
    names = {name.replace("-", "_") for name in action()["inputs"]}
    assert names == set(ActionInputs.model_fields)
    assert set(input_names()) == set(action()["inputs"])


def test_every_input_is_kebab_case_described_and_defaulted() -> None:
    """Inputs follow GitHub's conventions: lowercase kebab-case, a description and a default."""
    for name, spec in action()["inputs"].items():
        assert re.fullmatch(r"[a-z][a-z0-9]*(-[a-z0-9]+)*", name), name
        assert spec.get("description"), name
        assert "default" in spec and spec.get("required") is False, name


def test_action_yml_defaults_parse_to_the_code_defaults() -> None:
    """Feeding action.yml's defaults as the runner would (INPUT_NAME=default) gives ActionInputs()."""
    env = {f"INPUT_{name.upper()}": str(spec["default"]) for name, spec in action()["inputs"].items()}
    env["INPUT_GITHUB-TOKEN"] = ""  # the runner substitutes ${{ github.token }}
    assert inputs_from_env(env) == ActionInputs()


def test_outputs_match_what_the_run_writes() -> None:
    """Declared outputs are exactly the keys Outcome.outputs() writes to GITHUB_OUTPUT."""
    written = set(Outcome(verdict="pass", exit_code=0).outputs())
    assert set(action()["outputs"]) == written
    assert all(spec.get("description") for spec in action()["outputs"].values())


def test_docker_action_with_branding() -> None:
    """A docker action built from the Dockerfile, with a Feather icon and an allowed colour."""
    meta = action()
    assert meta["runs"] == {"using": "docker", "image": "Dockerfile"}
    assert meta["branding"]["color"] in {
        "white",
        "black",
        "yellow",
        "blue",
        "green",
        "orange",
        "red",
        "purple",
        "gray-dark",
    }


def dockerfile() -> list[str]:
    text = (ROOT / "Dockerfile").read_text(encoding="utf-8")
    return [line for line in text.replace("\\\n", " ").splitlines() if line.strip() and not line.startswith("#")]


def test_dockerfile_follows_the_runner_rules() -> None:
    """No USER, no WORKDIR, absolute exec-form ENTRYPOINT, base image pinned by version and digest."""
    lines = dockerfile()
    keywords = [line.split()[0].upper() for line in lines]
    assert "USER" not in keywords and "WORKDIR" not in keywords
    entry = json.loads(next(line for line in lines if line.upper().startswith("ENTRYPOINT")).split(None, 1)[1])
    assert entry == ["python", "/app/entrypoint.py"]
    base = next(line for line in lines if line.startswith("ARG PYTHON_IMAGE=")).split("=", 1)[1]
    assert re.fullmatch(r"python:\d+\.\d+\.\d+-slim-\w+@sha256:[0-9a-f]{64}", base), base
    assert [line.split()[1] for line in lines if line.upper().startswith("FROM")] == ["${PYTHON_IMAGE}"] * 2


def test_final_stage_holds_only_the_runtime() -> None:
    """Wheels are built in the builder stage with hash-pinned build requirements; the final stage copies the
    installed tree and the source, runs no pip and installs no system packages (no compiler, no git)."""
    lines = dockerfile()
    stages = [i for i, line in enumerate(lines) if line.upper().startswith("FROM")]
    builder, final = lines[stages[0] : stages[1]], lines[stages[1] :]
    assert lines[stages[0]].endswith(" AS builder")
    build = " ".join(builder)
    assert "--require-hashes --only-binary=:all: -r /build/requirements-build.lock" in build
    assert "--require-hashes --no-deps --no-build-isolation -r /build/requirements.lock" in build
    assert not any(word in " ".join(final) for word in ("pip ", "apt-get", "git", "gcc"))
    assert any(line.startswith("COPY --from=builder ") for line in final)
    build_lock = (ROOT / "requirements-build.lock").read_text(encoding="utf-8")
    pins = re.findall(r"^([A-Za-z0-9_.-]+)==(\S+)", build_lock, re.M)
    assert pins and build_lock.count("--hash=sha256:") >= len(pins)


def test_dependencies_are_installed_before_the_source_is_copied() -> None:
    """The hash-locked dependency layer comes before COPY of the source, so it stays cached."""
    lines = dockerfile()
    install = next(i for i, line in enumerate(lines) if "--require-hashes" in line)
    source = next(i for i, line in enumerate(lines) if line.startswith("COPY evalbot"))
    assert install < source
    assert not any(line.startswith("COPY . ") for line in lines)


def test_lock_pins_every_runtime_dependency_with_hashes() -> None:
    """requirements.lock has each [project.dependencies] entry and the openai extra (the image's judge backends),
    pinned, and hashes for every pin."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    lock = (ROOT / "requirements.lock").read_text(encoding="utf-8")
    pins = dict(re.findall(r"^([A-Za-z0-9_.-]+)==(\S+)", lock, re.M))
    normal = {re.sub(r"[-_.]+", "-", k).lower(): v for k, v in pins.items()}
    for requirement in [*project["dependencies"], *project["optional-dependencies"]["openai"]]:
        name = re.sub(r"[-_.]+", "-", re.split(r"[<>=!~\[ ;]", requirement)[0]).lower()
        assert name in normal, f"{name} missing from requirements.lock: regenerate it (see its header)"
    assert lock.count("==") == len(pins) and lock.count("--hash=sha256:") >= len(pins)


def test_dockerignore_keeps_the_build_context_small() -> None:
    """Only the lock, the package and the entrypoint are sent to the docker build."""
    lines = [line.strip() for line in (ROOT / ".dockerignore").read_text().splitlines()]
    assert "*" in lines and {"!requirements.lock", "!requirements-build.lock", "!entrypoint.py", "!evalbot/"} <= set(
        lines
    )
