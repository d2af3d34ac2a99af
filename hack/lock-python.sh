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
# Versions already in a lock are kept unless pyproject.toml asks for others; with
# --upgrade every package not pinned by pyproject.toml moves to its newest release.
# Run it after changing a pin in pyproject.toml, and commit the three files together.
set -euo pipefail
repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo_root/trainer/worker/torch"
uv="$("$repo_root/hack/setup-python.sh" --uv)"
upgrade=()
[[ "${1:-}" != --upgrade ]] || upgrade=(--upgrade)
compile=("$uv" pip compile pyproject.toml --quiet --generate-hashes --python-version 3.11
  --python-platform x86_64-manylinux_2_28 --custom-compile-command hack/lock-python.sh "${upgrade[@]}")

"${compile[@]}" -o requirements.txt
# The runtime lock's packages are constraints of the test lock, and left out of it.
mapfile -t runtime < <(awk '/^[A-Za-z0-9]/ { sub(/==.*/, "", $1); print $1 }' requirements.txt)
"${compile[@]}" --extra test -c requirements.txt $(printf -- '--no-emit-package %s ' "${runtime[@]}") -o requirements-test.txt
echo "lock-python: requirements.txt ($(grep -c '^[A-Za-z0-9]' requirements.txt) packages), requirements-test.txt ($(grep -c '^[A-Za-z0-9]' requirements-test.txt) more)" >&2
