#!/usr/bin/env bash
# Image smoke test: build the Action's image and run the bundled example (examples/) through its entrypoint the
# way GitHub's runner runs a Docker action -- `--workdir /github/workspace`, the workspace, home, workflow and
# file_commands mounts, GITHUB_* variables, INPUT_* variables for every input with dashes kept, the workspace owned
# by the runner's user (uid 1001 when this runs as root) -- against the project's fake GitHub
# (scripts/serve_fake_github.py). Checks the verdict (the example's regression blocks: exit 1), the outputs, the
# comment, that no GET /user was made, and that what the container wrote is owned by the workspace's owner.
# Prints the image size, the build time and the start-to-exit time of each run (3 runs, median).
#
#   scripts/container_smoke.sh              # build ./Dockerfile, then run it
#   EVALBOT_IMAGE=ghcr.io/x/y:tag scripts/container_smoke.sh    # run an image built elsewhere (no build)
#
# Environment:
#   EVALBOT_CONTAINER_CMD  container command (default: the first of podman, docker that works; buildah only builds)
#   EVALBOT_BASE_IMAGE     python base image for the build (--build-arg PYTHON_IMAGE), e.g. a local stand-in
#   EVALBOT_BUILD_ARGS     extra build arguments, e.g. "--pull=never --network=host --no-cache"
#   EVALBOT_RUN_ARGS       extra run arguments
#   EVALBOT_SMOKE_PYTHON   python with the dev extra, for the fake GitHub (default: python3)
#   EVALBOT_SMOKE_RUNS     how many timed runs (default 3)
#   EVALBOT_SMOKE_MAX_MB   the image's size budget in MB (default 250): a larger image fails the smoke test
# Exit 0 also when no container tool is available (a message says the test was skipped).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$PWD"
PY="${EVALBOT_SMOKE_PYTHON:-}"
if [ -z "$PY" ]; then  # the project's venv has ruamel.yaml and evalbot's dependencies; a bare python3 may not
  if [ -x "$ROOT/.venv/bin/python" ]; then PY="$ROOT/.venv/bin/python"; else PY=python3; fi
fi
RUNS="${EVALBOT_SMOKE_RUNS:-3}"
TAG="${EVALBOT_IMAGE:-localhost/evalbot-smoke:latest}"

read -r -a CMD <<<"${EVALBOT_CONTAINER_CMD:-}"
if [ "${#CMD[@]}" -eq 0 ]; then
  for tool in podman docker; do
    if command -v "$tool" >/dev/null 2>&1 && "$tool" info >/dev/null 2>&1; then CMD=("$tool"); break; fi
  done
fi
if [ "${#CMD[@]}" -eq 0 ]; then
  if command -v buildah >/dev/null 2>&1 && [ -z "${EVALBOT_IMAGE:-}" ]; then
    echo "container smoke: only buildah found: building the image without running it"
    start=$(date +%s.%N)
    buildah bud --layers=false -f Dockerfile -t "$TAG" ${EVALBOT_BASE_IMAGE:+--build-arg "PYTHON_IMAGE=$EVALBOT_BASE_IMAGE"} .
    echo "build: $("$PY" -c "import sys; print(round(float(sys.argv[2]) - float(sys.argv[1]), 1))" "$start" "$(date +%s.%N)") s"
    exit 0
  fi
  echo "container smoke: skipped -- no working podman or docker here (set EVALBOT_CONTAINER_CMD to use another)"
  exit 0
fi

elapsed() { "$PY" -c "import sys; print(round(float(sys.argv[2]) - float(sys.argv[1]), 2))" "$1" "$2"; }

if [ -z "${EVALBOT_IMAGE:-}" ]; then
  build_args=()
  read -r -a build_args <<<"${EVALBOT_BUILD_ARGS:-}"
  [ -n "${EVALBOT_BASE_IMAGE:-}" ] && build_args+=(--build-arg "PYTHON_IMAGE=$EVALBOT_BASE_IMAGE")
  echo "== build: ${CMD[*]} build ${build_args[*]} -t $TAG ."
  start=$(date +%s.%N)
  "${CMD[@]}" build "${build_args[@]}" -f Dockerfile -t "$TAG" .
  build_s=$(elapsed "$start" "$(date +%s.%N)")
else
  build_s="(not built here)"
fi
size=$("${CMD[@]}" image inspect --format '{{.Size}}' "$TAG")

tmp="$(mktemp -d)"
fake_pid=""
cleanup() {
  [ -n "$fake_pid" ] && kill "$fake_pid" 2>/dev/null && wait "$fake_pid" 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT

ws="$tmp/workspace" home="$tmp/home" workflow="$tmp/workflow" fc="$tmp/file_commands"
mkdir -p "$ws" "$home" "$workflow" "$fc"
cp -R examples/evals examples/runs examples/judge-cache "$ws/"
# The Action replays only cached answers signed with its judge-cache-key (an unsigned cache is a PR's to forge):
# sign the workspace's copy with a smoke key, with evalbot's own signing code, and give the Action that key.
CACHE_KEY="smoke-cache-key"
EVALBOT_JUDGE_CACHE_KEY="$CACHE_KEY" PYTHONPATH="$ROOT" "$PY" - "$ws/judge-cache" <<'PYEOF'
import json, os, sys
from pathlib import Path
from evalbot.judges.cache import CacheTrust
trust = CacheTrust.for_run(os.environ)
for path in sorted(Path(sys.argv[1]).glob("*/*.json")):
    data = json.loads(path.read_text(encoding="utf-8"))
    data["signatures"] = {i: trust.sign(path.stem, int(i), text) for i, text in data["samples"].items()}
    path.write_text(json.dumps(data), encoding="utf-8")
PYEOF
if [ "$(id -u)" = 0 ]; then
  chown -R 1001:1001 "$ws" "$home" "$workflow" "$fc"  # as on a hosted runner: the runner user owns them
fi
owner="$(stat -c %u:%g "$ws")"

"$PY" scripts/serve_fake_github.py "$workflow" &
fake_pid=$!
for _ in $(seq 100); do [ -s "$workflow/port" ] && break; sleep 0.1; done
[ -s "$workflow/port" ] || { echo "container smoke: the fake GitHub did not start" >&2; exit 1; }
port="$(cat "$workflow/port")"

# INPUT_* for every input of action.yml with its default, as the runner sets them (names upper-cased, dashes kept).
mapfile -t input_env < <("$PY" - "$ROOT/action.yml" <<'PYEOF'
import sys
from ruamel.yaml import YAML
for name, spec in YAML(typ="safe").load(open(sys.argv[1], encoding="utf-8"))["inputs"].items():
    print(f"INPUT_{name.upper().replace(' ', '_')}={spec.get('default', '')}")
PYEOF
)
# A failure inside <(...) does not stop the script: an empty list means action.yml's defaults were not read.
[ "${#input_env[@]}" -gt 0 ] || { echo "container smoke: could not read action.yml's inputs with $PY (needs ruamel.yaml: set EVALBOT_SMOKE_PYTHON)" >&2; exit 1; }
env_args=()
for kv in "${input_env[@]}" \
  "INPUT_EVAL-SETS=evals" "INPUT_ACTUALS=runs/pr.json" "INPUT_JUDGE-CACHE=judge-cache" \
  "INPUT_GITHUB-TOKEN=ghs_fake_app_token" "INPUT_JUDGE-API-KEY=smoke-test-key" \
  "INPUT_JUDGE-CACHE-KEY=$CACHE_KEY" \
  "GOOGLE_GEMINI_BASE_URL=http://127.0.0.1:9" \
  "HOME=/github/home" "CI=true" "GITHUB_ACTIONS=true" "GITHUB_EVENT_NAME=pull_request" \
  "GITHUB_EVENT_PATH=/github/workflow/event.json" "GITHUB_WORKSPACE=/github/workspace" \
  "GITHUB_REPOSITORY=octo-org/shop-agent" "GITHUB_REPOSITORY_OWNER=octo-org" "GITHUB_SHA=$(printf 'c%.0s' $(seq 40))" \
  "GITHUB_REF=refs/pull/7/merge" "GITHUB_API_URL=http://127.0.0.1:$port" "GITHUB_SERVER_URL=https://github.com" \
  "GITHUB_RUN_ID=4242" "GITHUB_RUN_ATTEMPT=1" "GITHUB_WORKFLOW=evals" "GITHUB_JOB=evaluate" "GITHUB_ACTION=evalbot" \
  "GITHUB_ACTOR=octocat" "RUNNER_OS=Linux" "RUNNER_TEMP=/github/home" \
  "GITHUB_OUTPUT=/github/file_commands/set_output" "GITHUB_STEP_SUMMARY=/github/file_commands/step_summary"; do
  env_args+=(-e "$kv")
done
run_args=()
read -r -a run_args <<<"${EVALBOT_RUN_ARGS:-}"

# The judge's answers all come from the example's cache; GOOGLE_GEMINI_BASE_URL points at a closed port, so a
# cache miss would show up as a judge error in the comment, never as a call to the internet.
times=()
for n in $(seq "$RUNS"); do
  rm -rf "$ws/.evalbot-out"
  : >"$fc/set_output"
  : >"$fc/step_summary"
  start=$(date +%s.%N)
  set +e
  "${CMD[@]}" run --rm --network host --workdir /github/workspace "${env_args[@]}" "${run_args[@]}" \
    -v "$home:/github/home" -v "$workflow:/github/workflow" -v "$fc:/github/file_commands" \
    -v "$ws:/github/workspace" "$TAG" >"$tmp/run$n.log" 2>&1
  code=$?
  set -e
  times+=("$(elapsed "$start" "$(date +%s.%N)")")
  echo "run $n: exit $code in ${times[-1]} s: $(grep -E '^evalbot: (blocked|passed|done)' "$tmp/run$n.log" | tr '\n' ' ')"
  verdict="$(grep -A1 '^verdict<<' "$fc/set_output" | sed -n 2p)"  # name<<DELIMITER, value, DELIMITER
  if [ "$code" -ne 1 ] || [ "$verdict" != blocked ]; then
    echo "container smoke: FAILED -- exit $code, verdict '$verdict'; expected exit 1, verdict blocked (the example's" \
      "regression); log:" >&2
    cat "$tmp/run$n.log" >&2
    exit 1
  fi
  for made in .evalbot-out .evalbot-out/report.json .evalbot-out/junit.xml; do
    got="$(stat -c %u:%g "$ws/$made")"
    if [ "$got" != "$owner" ]; then
      echo "container smoke: FAILED -- $made is owned by $got, the workspace by $owner" >&2
      exit 1
    fi
  done
done

kill "$fake_pid"
wait "$fake_pid" || true
fake_pid=""
"$PY" - "$workflow/github.json" "$RUNS" <<'PYEOF'
import json, sys
state = json.load(open(sys.argv[1], encoding="utf-8"))
ops = [r["operation"] for r in state["requests"]]
problems = list(state["violations"])
if "users/get-authenticated" in ops:
    problems.append("GET /user was called")
marked = [c for c in state["comments"] if c["body"].startswith("<!-- evalbot id=default -->")]
if len(marked) != 1 or marked[0]["login"] != "github-actions[bot]":
    problems.append(f"expected one evalbot comment by github-actions[bot], found {len(marked)}")
print(f"GitHub API requests: {len(ops)} in {sys.argv[2]} runs ({', '.join(sorted(set(ops)))})")
if problems:
    sys.exit("container smoke: FAILED -- " + "; ".join(problems))
PYEOF

median=$(printf '%s\n' "${times[@]}" | sort -n | sed -n "$(( (RUNS + 1) / 2 ))p")
echo "image: $TAG, $(( size / 1000000 )) MB"
MAX_MB="${EVALBOT_SMOKE_MAX_MB:-250}"
if [ $(( size / 1000000 )) -gt "$MAX_MB" ]; then
  echo "container smoke: the image is $(( size / 1000000 )) MB, over its $MAX_MB MB budget" >&2
  exit 1
fi
echo "build: $build_s s"
echo "start to exit: ${times[*]} s (median $median s)"
echo "container smoke: ok"
