"""The release path: scripts/pin_action_image.py pins action.yml to a digest; the release workflow's shape."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from ruamel.yaml import YAML

from scripts.pin_action_image import pin

ROOT = Path(__file__).resolve().parents[2]
DIGEST = "sha256:" + "0123456789abcdef" * 4
IMAGE = f"docker://ghcr.io/evalbot/evalbot@{DIGEST}"


def test_pin_changes_only_runs_image() -> None:
    """The released action.yml differs from main's in one line, and still parses to the same inputs/outputs."""
    before = (ROOT / "action.yml").read_text(encoding="utf-8")
    after = pin(before, IMAGE)
    changed = [(a, b) for a, b in zip(before.splitlines(), after.splitlines(), strict=True) if a != b]
    assert changed == [("  image: Dockerfile", f"  image: {IMAGE}")]
    old, new = YAML(typ="safe").load(before), YAML(typ="safe").load(after)
    assert new["runs"] == {"using": "docker", "image": IMAGE}
    assert {k: v for k, v in new.items() if k != "runs"} == {k: v for k, v in old.items() if k != "runs"}


@pytest.mark.parametrize(
    "image",
    [
        "docker://ghcr.io/evalbot/evalbot:v1",  # a mutable tag
        "ghcr.io/evalbot/evalbot@" + DIGEST,  # not a docker:// reference
        "docker://ghcr.io/evalbot/evalbot@sha256:abc",  # truncated digest
        f"docker://ghcr.io/evalbot/evalbot@{DIGEST}\n  args: [evil]",  # a second line smuggled in
    ],
)
def test_pin_refuses_anything_but_a_digest(image: str) -> None:
    with pytest.raises(ValueError, match="sha256"):
        pin("runs:\n  using: docker\n  image: Dockerfile\n", image)


def test_pin_needs_an_image_line_under_runs() -> None:
    with pytest.raises(ValueError, match="runs"):
        pin("name: x\nimage: Dockerfile\nruns:\n  using: node20\n  main: index.js\n", IMAGE)


def test_pin_script_rewrites_the_file(tmp_path: Path) -> None:
    target = tmp_path / "action.yml"
    target.write_text((ROOT / "action.yml").read_text(encoding="utf-8"), encoding="utf-8")
    script = ROOT / "scripts" / "pin_action_image.py"
    bad = subprocess.run([sys.executable, script, str(target), "docker://x/y:latest"], capture_output=True, text=True)
    assert bad.returncode == 2 and "sha256" in bad.stderr
    assert "image: Dockerfile" in target.read_text(encoding="utf-8")
    subprocess.run([sys.executable, script, str(target), IMAGE], check=True)
    assert f"  image: {IMAGE}\n" in target.read_text(encoding="utf-8")


def test_release_workflow_pushes_attests_smoke_tests_and_pins() -> None:
    """On version tags only; both platforms; the smoke test runs before the push and on the pushed digest;
    provenance is attested for that digest; the pin job uses it; every action is pinned by sha."""
    text = (ROOT / ".github/workflows/release.yml").read_text(encoding="utf-8")
    flow = YAML(typ="safe").load(text)
    assert flow["on"] == {"push": {"tags": ["v[0-9]+.[0-9]+.[0-9]+"]}}
    steps = flow["jobs"]["image"]["steps"]
    runs = [s.get("run", "") for s in steps]
    push = next(s for s in steps if s.get("id") == "push")
    assert push["with"]["platforms"] == "linux/amd64,linux/arm64" and push["with"]["push"] is True
    smoke = [i for i, r in enumerate(runs) if "scripts/container_smoke.sh" in r]
    assert len(smoke) == 2 and smoke[0] < steps.index(push) < smoke[1]
    attest = next(s for s in steps if s.get("uses", "").startswith("actions/attest-build-provenance@"))
    assert attest["with"]["subject-digest"] == "${{ steps.push.outputs.digest }}"
    pinned = [u for job in flow["jobs"].values() for u in (s.get("uses") for s in job["steps"]) if u]
    assert pinned and all(re.fullmatch(r"[\w.-]+/[\w.-]+@[0-9a-f]{40}", u) for u in pinned), pinned
    assert flow["permissions"] == {}
    assert "scripts/pin_action_image.py" in flow["jobs"]["pin"]["steps"][1]["run"]
    # main builds from source; only the release commit runs the image by digest
    assert YAML(typ="safe").load((ROOT / "action.yml").read_text(encoding="utf-8"))["runs"]["image"] == "Dockerfile"


def test_release_workflow_builds_and_checks_the_python_packages() -> None:
    """The wheel and the sdist are built from the tagged commit and checked with `twine check --strict`; the
    version tags move (job pin) only after that job passed."""
    flow = YAML(typ="safe").load((ROOT / ".github/workflows/release.yml").read_text(encoding="utf-8"))
    dist = flow["jobs"]["dist"]
    assert dist["permissions"] == {"contents": "read"}
    runs = "\n".join(s.get("run", "") for s in dist["steps"])
    assert "python -m build --outdir dist ." in runs
    assert "python -m twine check --strict dist/*" in runs
    assert runs.index("python -m build") < runs.index("twine check")
    upload = next(s for s in dist["steps"] if s.get("uses", "").startswith("actions/upload-artifact@"))
    assert upload["with"]["path"] == "dist/"
    assert set(flow["jobs"]["pin"]["needs"]) == {"image", "dist"}
