#!/usr/bin/env bash
# Writes the PyTorch worker's locks from trainer/worker/torch/pyproject.toml, with uv
# (hack/setup-python.sh --uv installs it):
#   requirements.txt       the runtime dependencies and everything they pull in, for
#                          Linux x86-64 and Python 3.11 and on, each at one version with
#                          the hashes of every file of that release: the worker image
#                          installs it as it is, the tests' environment all of it but
#                          the CUDA-only packages (hack/setup-python.sh says which)
#   requirements-test.txt  what the test extra (trl, pytest, ruff) adds, resolved
#                          against requirements.txt
#   engine/requirements-cpu.txt, engine/requirements-cuda.txt
#                          the rollout engine's (vLLM's) own environments, from
#                          engine/requirements-*.in (vLLM pins torch and transformers
#                          versions the worker's lock does not share): the CPU build the
#                          tests install (hack/setup-python.sh --engine), with the
#                          overrides of engine/overrides-cpu.txt, and the CUDA one the
#                          worker image's engine stage installs
# Versions already in a lock are kept unless pyproject.toml asks for others; with
# --upgrade every package not pinned by pyproject.toml moves to its newest release.
# Run it after changing a pin in pyproject.toml, and commit the three files together.
set -euo pipefail
repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo_root/trainer/worker/torch"
uv="$("$repo_root/hack/setup-python.sh" --uv)"
upgrade=()
[[ "${1:-}" != --upgrade ]] || upgrade=(--upgrade)
compile=("$uv" pip compile --quiet --generate-hashes --python-version 3.11
  --python-platform x86_64-manylinux_2_28 --custom-compile-command hack/lock-python.sh "${upgrade[@]}")

"${compile[@]}" pyproject.toml -o requirements.txt
# The runtime lock's packages are constraints of the test lock, and left out of it.
mapfile -t runtime < <(awk '/^[A-Za-z0-9]/ { sub(/==.*/, "", $1); print $1 }' requirements.txt)
"${compile[@]}" pyproject.toml --extra test -c requirements.txt $(printf -- '--no-emit-package %s ' "${runtime[@]}") -o requirements-test.txt
for kind in cpu cuda; do
  overrides=()
  [[ ! -f engine/overrides-$kind.txt ]] || overrides=(--override engine/overrides-$kind.txt)
  "${compile[@]}" engine/requirements-$kind.in "${overrides[@]}" -o engine/requirements-$kind.txt
done
echo "lock-python: requirements.txt ($(grep -c '^[A-Za-z0-9]' requirements.txt) packages), requirements-test.txt ($(grep -c '^[A-Za-z0-9]' requirements-test.txt) more), engine/requirements-cpu.txt ($(grep -c '^[A-Za-z0-9]' engine/requirements-cpu.txt)), engine/requirements-cuda.txt ($(grep -c '^[A-Za-z0-9]' engine/requirements-cuda.txt))" >&2
