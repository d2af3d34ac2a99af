#!/usr/bin/env bash
# The project's test command (make test, and so .ci/run): builds the test control plane on
# first use, installs the Debian packages the tests need, checks that generated files are
# current, runs every Go test and prints a summary line "N passed, N failed, N skipped",
# then how long each phase took. Exits non-zero on any failure.
set -euo pipefail
repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo_root"

phases=()
phase_start=$SECONDS
phase_name=""
# phase NAME ends the running phase (recording its time) and starts NAME.
phase() {
  [[ -z "$phase_name" ]] || phases+=("$(printf '%-22s %4ds' "$phase_name" $((SECONDS - phase_start)))")
  phase_name="$1"
  phase_start=$SECONDS
  [[ -z "$1" ]] || echo "== $1" >&2
}
print_phases() {
  local rc=$?
  phase ""
  echo "phase times:"
  printf '  %s\n' "${phases[@]}"
  printf '  %-22s %4ds\n' total "$SECONDS"
  return $rc
}
trap print_phases EXIT

# One build configuration for everything this script compiles: the control plane, the
# generators, the tests and the binaries they build (make build's static, -trimpath
# build), so that each package is compiled once into the Go build cache.
export CGO_ENABLED=0 GOFLAGS="-trimpath ${GOFLAGS:-}"

# The Debian packages download and install while the control plane compiles.
debian_log="$(mktemp)"
hack/setup-debian.sh >"$debian_log" 2>&1 &
debian_pid=$!

phase "test control plane"
KUBEBUILDER_ASSETS="$(ESPO_KUBE_SCHEDULER=1 hack/setup-envtest.sh | tail -n1)"  # kube-scheduler too, for test/gang
export KUBEBUILDER_ASSETS

phase "debian packages"
if ! wait "$debian_pid"; then
  cat "$debian_log" >&2
  exit 1
fi
tail -n1 "$debian_log" >&2

# The generated files are checked while the tests run: most test time is spent waiting
# for API servers and trainer processes, and the check needs the CPU for a minute.
generated_log="$(mktemp)"
hack/verify-generated.sh >"$generated_log" 2>&1 &
generated_pid=$!

phase "go test"
test_status=0
# The e2e package goes first: it is the longest (minutes of trainer processes), and go
# test builds and runs packages in the order given, two at a time on two cores.
go test -json -count=1 -timeout 40m ${GOTEST_FLAGS:-} ./test/e2e ./... | go run ./hack/gotestsummary || test_status=$?

phase "generated files"
if ! wait "$generated_pid"; then
  cat "$generated_log" >&2
  exit 1
fi
exit "$test_status"
