#!/usr/bin/env bash
# The project's test command (make test, and so .ci/run): builds the test control plane on
# first use (running the tests that need none meanwhile), installs the Debian package the
# generators need and builds the PyTorch worker's Python environment (hack/setup-python.sh,
# on first use), checks that generated files are current, runs every Go test and prints a
# summary line "N passed, N failed, N skipped", then how long each phase took. Exits
# non-zero on any failure.
set -euo pipefail
repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo_root"

phases=() phase_detail=()
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
# build with gRPC's trace left out, which the image's build shares), so that each
# package is compiled once into the Go build cache. Links leave out DWARF (-w, which
# changes no compiled package): nothing debugs the test binaries, and it saves over
# a second of CPU on each large link (a stack trace reads the symbol table, kept).
# A build that sets -ldflags of its own (make build, the image's) replaces this one.
export CGO_ENABLED=0 GOFLAGS="-trimpath -tags=grpcnotrace -ldflags=-w ${GOFLAGS:-}"

# packages_needing prints the packages whose tests need the test control plane (their
# test binary links test/testenv, internal/controlplane or envtest) as $1 says (0: no,
# 1: yes, -: either) and the worker's Python environment (test/pyenv) as $2 says.
packages_needing() {
  go list -test -f '{{.ImportPath}} {{join .Deps " "}}' ./... |
    awk -v cp="$1" -v py="$2" '$1 ~ /\.test$/ {
      c = 0; p = 0
      for (i = 2; i <= NF; i++) {
        if ($i ~ /espo-operator\/(test\/testenv|internal\/controlplane)$|controller-runtime\/pkg\/envtest$/) c = 1
        if ($i ~ /espo-operator\/test\/pyenv$/) p = 1
      }
      if ((cp == "-" || c == cp) && (py == "-" || p == py)) { sub(/\.test$/, "", $1); print $1 } }'
}

# test_imports prints the packages the tests of the given packages import, directly or
# not, except main packages and those compiled for a test.
test_imports() {
  go list -deps -test -f '{{if and (not .ForTest) (ne .Name "main")}}{{.ImportPath}}{{end}}' "$@"
}

# The Debian package and the Python environments download and install in the background. A control plane not yet
# built is built in two steps. First, while `setup-envtest.sh --fetch` downloads its
# modules, the packages the tests that need no control plane import are compiled: most
# of them (the standard library, k8s.io/api, apimachinery, client-go) are the control
# plane's too, and two builds that reach a package at the same time both compile it (150
# packages, about 90 CPU-seconds of a cold run, did). Then the control plane builds in
# the background while the tests that need neither it nor the Python environment (the
# early packages) run (its links leave a core idle), and those that need the Python
# environment but no control plane (the PyTorch worker's, the longest package, and
# hack/results) start as soon as that environment is built, rather than after the
# control plane; their results are replayed ahead of the others', into one summary.
# With the control plane built, every other package's tests run together.
debian_log="$(mktemp)" python_log="$(mktemp)" python_out="$(mktemp)" python_ready="$(mktemp -u)"
hack/setup-debian.sh >"$debian_log" 2>&1 &
debian_pid=$!
# The worker's environment, then the rollout engine's (vLLM's CPU build; the two share
# the script's lock, so they are built one after the other).
{ hack/setup-python.sh && hack/setup-python.sh --engine && touch "$python_ready"; } >"$python_out" 2>"$python_log" &
python_pid=$!
early=() early_json="$(mktemp)" python_only=() python_json="$(mktemp)" python_done="$(mktemp -u)"
if KUBEBUILDER_ASSETS="$(ESPO_KUBE_SCHEDULER=1 hack/setup-envtest.sh --if-cached)"; then  # kube-scheduler too, for test/gang
  phase "test control plane"
else
  phase "control plane & units"
  ESPO_KUBE_SCHEDULER=1 hack/setup-envtest.sh --fetch >/dev/null &
  fetch_pid=$!
  mapfile -t early < <(packages_needing 0 0)
  mapfile -t python_only < <(packages_needing 0 1)
  if ((${#early[@]} + ${#python_only[@]})); then
    echo "compiling what the tests of $((${#early[@]} + ${#python_only[@]})) packages that need no control plane import" >&2
    go build $(test_imports "${early[@]}" "${python_only[@]}") 2>/dev/null || true  # a compile error fails their tests, below
  fi
  if ! wait "$fetch_pid"; then
    echo "downloading the test control plane's modules failed" >&2
    exit 1
  fi
  shared_time=$((SECONDS - phase_start))
  assets_out="$(mktemp)" control_plane_time="$(mktemp)"
  ( start=$SECONDS
    ESPO_KUBE_SCHEDULER=1 hack/setup-envtest.sh >"$assets_out"
    echo $((SECONDS - start)) >"$control_plane_time" ) &
  control_plane_pid=$!
  # The Python environment's packages, once it is built (a failed build is reported
  # below, and their tests then do not run).
  ( while [[ ! -e "$python_ready" ]] && kill -0 "$python_pid" 2>/dev/null; do sleep 1; done
    if [[ -e "$python_ready" ]] && ((${#python_only[@]})); then
      echo "running the tests of ${python_only[*]#github.com/espo-dev/espo-operator/}: the Python environment is built" >&2
      ESPO_PYTHON="$(tail -n2 "$python_out" | head -n1)" ESPO_VLLM_PYTHON="$(tail -n1 "$python_out")" \
        go test -json -count=1 -timeout 40m ${GOTEST_FLAGS:-} "${python_only[@]}" >"$python_json" 2>&1 || true  # judged in the summary
    fi
    touch "$python_done" ) &
  echo "running their tests while the control plane builds" >&2
  unit_start=$SECONDS
  if ((${#early[@]})); then
    go test -json -count=1 -timeout 40m ${GOTEST_FLAGS:-} "${early[@]}" >"$early_json" 2>&1 || true  # judged in the summary
  fi
  unit_time=$((SECONDS - unit_start))
  if ! wait "$control_plane_pid"; then
    echo "building the test control plane failed" >&2
    exit 1
  fi
  KUBEBUILDER_ASSETS="$(tail -n1 "$assets_out")"
  phase_detail=("$(printf '  %-20s %4ds' "shared imports" "$shared_time")" "$(printf '  %-20s %4ds' "unit tests" "$unit_time")" "$(printf '  %-20s %4ds' "control plane" "$(cat "$control_plane_time")")")
fi
export KUBEBUILDER_ASSETS

phase "debian & python"
phases+=("${phase_detail[@]}")
if ! wait "$debian_pid"; then
  cat "$debian_log" >&2
  exit 1
fi
tail -n1 "$debian_log" >&2
if ! wait "$python_pid"; then
  cat "$python_log" >&2
  exit 1
fi
cat "$python_log" >&2
ESPO_PYTHON="$(tail -n2 "$python_out" | head -n1)" ESPO_VLLM_PYTHON="$(tail -n1 "$python_out")"
export ESPO_PYTHON ESPO_VLLM_PYTHON

# The generated files are checked while the tests run: most test time is spent waiting
# for API servers and trainer processes, and the check needs the CPU for a minute.
generated_log="$(mktemp)"
hack/verify-generated.sh >"$generated_log" 2>&1 &
generated_pid=$!

phase "go test"
test_status=0
# One package more at a time than there are cores (go test's default is one per core),
# the longest first. go test builds and runs packages in the order given; a long package
# started last would run alone on one core at the end (e2e: minutes of trainer
# processes; the torch worker: two minutes of Python processes, one test at a time).
# Much of a package's test time is spent waiting for API servers and processes, so on
# two cores a third package keeps both busy where two leave them idle.
# (In a cold run the torch worker's started earlier, as soon as the Python environment
# was built: its results are replayed after these packages'.)
mapfile -t late < <(go list ./... | grep -vxF -f <(printf '%s\n' "${early[@]}" "${python_only[@]}"))  # all, when none ran early
mapfile -t longest < <(go list ./test/e2e ./trainer/worker/torch | grep -xF -f <(printf '%s\n' "${late[@]}"))
{ cat "$early_json"; go test -json -count=1 -p $(($(nproc) + 1)) -timeout 40m ${GOTEST_FLAGS:-} "${longest[@]}" "${late[@]}"
  if ((${#python_only[@]})); then
    while [[ ! -e "$python_done" ]]; do sleep 1; done
    cat "$python_json"
  fi; } 2>&1 |
  go run ./hack/gotestsummary || test_status=$?

phase "generated files"
if ! wait "$generated_pid"; then
  cat "$generated_log" >&2
  exit 1
fi
exit "$test_status"
