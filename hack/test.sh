#!/usr/bin/env bash
# The project's test command (make test, and so .ci/run): builds the test control plane on
# first use, checks that generated files are current, runs every Go test and prints a
# summary line "N passed, N failed, N skipped". Exits non-zero on any failure.
set -euo pipefail
repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo_root"

echo "== test control plane" >&2
KUBEBUILDER_ASSETS="$(ESPO_KUBE_SCHEDULER=1 hack/setup-envtest.sh | tail -n1)"  # kube-scheduler too, for test/gang
export KUBEBUILDER_ASSETS

echo "== python (the PyTorch worker's tests and stubs)" >&2
hack/setup-python.sh

echo "== generated files" >&2
hack/verify-generated.sh

echo "== go test" >&2
go test -json -count=1 -timeout 40m ${GOTEST_FLAGS:-} ./... | go run ./hack/gotestsummary
