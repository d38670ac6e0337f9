#!/usr/bin/env bash
# Static checks of the Action packaging, offline: action.yml against the vendored SchemaStore schema,
# workflows (the repository's and those embedded in the docs) with check-jsonschema, actionlint and
# zizmor (the release workflow included), the Dockerfile with hadolint, and the shell scripts (the image smoke test,
# this one, .ci/run) with shellcheck. Tools come from the `dev` extra (PyPI wheels).
set -euo pipefail
cd "$(dirname "$0")/.."

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

# The docs' workflows (every ```yaml block of README.md, examples/**/*.md and docs/**/*.md; see
# scripts/doc_workflows.py): first held to our conventions (one action reference, declared inputs, `|| [ $? -eq 1 ]`
# never `|| true`, no placeholder agent step, fork safety), then each written out as a file to lint, in a scratch
# project holding our action.yml, with `uses: <owner>/evalbot@<ref>` pointed at it (`uses: ./`), so that
# actionlint checks the examples' `with:` inputs against the real action.yml.
readme_root="$tmp/readme"
readme_dir="$readme_root/.github/workflows"
mkdir -p "$readme_dir"
cp action.yml Dockerfile "$readme_root/"
git init --quiet "$readme_root"
echo "-- the Action's inputs and outputs tables in docs/github-action.md (generated from action.yml)"
python3 scripts/action_docs.py --check
echo "-- the docs' workflows"
python3 scripts/doc_workflows.py --check
python3 scripts/doc_workflows.py "$readme_dir"
mapfile -t repo_workflows < <(find .github/workflows -name '*.yml' -o -name '*.yaml' | sort)
mapfile -t readme_workflows < <(find "$readme_dir" -name '*.yml' | sort)
all_workflows=("${repo_workflows[@]}" "${readme_workflows[@]}")

echo "-- check-jsonschema: action.yml and ${#all_workflows[@]} workflow(s)"
check-jsonschema --schemafile contracts/schemastore/github-actions.json action.yml
check-jsonschema --schemafile contracts/schemastore/github-workflows.json "${all_workflows[@]}"

echo "-- actionlint"
actionlint "${repo_workflows[@]}"
if [ "${#readme_workflows[@]}" -gt 0 ]; then
  (cd "$readme_root" && actionlint .github/workflows/*.yml)
fi

echo "-- zizmor"
zizmor --offline --no-progress --quiet .github/workflows action.yml
if [ "${#readme_workflows[@]}" -gt 0 ]; then
  zizmor --offline --no-progress --quiet --config scripts/zizmor-readme.yml "${readme_workflows[@]}"
fi

echo "-- hadolint"
hadolint Dockerfile
# The release workflow pins action.yml to the pushed image's digest; main must keep building from source.
grep -Eq '^  image: Dockerfile$' action.yml || { echo "action.yml on main must keep runs.image: Dockerfile" >&2; exit 1; }
test -f .github/workflows/release.yml || { echo "the release workflow is missing" >&2; exit 1; }

echo "-- shellcheck"
shellcheck scripts/*.sh .ci/run
echo "static checks passed"
