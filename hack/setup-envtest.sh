#!/usr/bin/env bash
# Builds the envtest control plane (etcd and kube-apiserver) from the Go module proxy and
# caches it outside the repository, keyed by version. Safe to run twice and concurrently:
# a finished cache (marked by .complete) is reused; a half-built one is rebuilt.
#
# Progress goes to stderr; the last line on stdout is the folder to use as
# KUBEBUILDER_ASSETS. With --if-cached it builds nothing: it prints the folder if the
# control plane asked for is built, and exits 1 if not. With --fetch it builds nothing
# either: it downloads the modules the build needs into the Go module cache and exits,
# so that a caller can compile the packages it shares with the control plane (k8s.io/api,
# client-go, ...) meanwhile and start the build after: two builds that reach a package
# at the same time both compile it.
#
# Environment:
#   K8S_VERSION   Kubernetes version of kube-apiserver (default: from k8s.io/api in go.mod)
#   ETCD_VERSION  etcd server version (default below)
#   ESPO_CACHE    cache root (default ${XDG_CACHE_HOME:-$HOME/.cache}/espo-operator)
#   ESPO_KUBE_SCHEDULER=1  also build kube-scheduler of the same release into the
#                 folder (once, marked by .scheduler-complete), for the gang tests
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
ETCD_VERSION="${ETCD_VERSION:-3.7.3}"
if [[ -z "${K8S_VERSION:-}" ]]; then
  api_version="$(cd "$repo_root" && go list -m -f '{{.Version}}' k8s.io/api)"  # v0.37.2
  K8S_VERSION="1.${api_version#v0.}"
fi
ESPO_CACHE="${ESPO_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/espo-operator}"
dest="$ESPO_CACHE/k8s/${K8S_VERSION}-etcd${ETCD_VERSION}"

log() { echo "setup-envtest: $*" >&2; }

# cached reports whether $dest holds all that was asked for.
cached() {
  [[ -f "$dest/.complete" ]] && { [[ "${ESPO_KUBE_SCHEDULER:-}" != 1 ]] || [[ -f "$dest/.scheduler-complete" ]]; }
}

# The control plane is built with the flags of `make build` and of the tests under
# hack/test.sh (static, -trimpath, gRPC's trace left out) and against the module versions the repository
# requires, so that the packages both need (k8s.io/api, apimachinery, client-go, grpc,
# protobuf, ...) are compiled once into the shared Go build cache and the tests reuse them.
export GOFLAGS="-mod=mod -trimpath -tags=grpcnotrace" CGO_ENABLED=0 GOTOOLCHAIN=local

# repo_requirements prints -require=path@version for every module the repository's go.mod
# requires (which, with module graph pruning, names every module that provides a package to
# its build), except replaced ones.
repo_requirements() {
  awk '
    $1 == "replace" && $2 != "(" { replaced[$2] = 1; next }
    $1 == "require" && $2 == "(" { block = 1; next }
    block && $1 == ")" { block = 0; next }
    block && NF >= 2 { req[$1] = $2; next }
    $1 == "require" && NF >= 3 { req[$2] = $3 }
    END { for (m in req) if (!(m in replaced)) print "-require=" m "@" req[m] }
  ' "$repo_root/go.mod" | sort
}

# new_build_module makes $work/$1 a module that requires the repository's versions.
new_build_module() {
  mkdir -p "$work/$1"
  cd "$work/$1"
  go mod init "espo.local/$1" >/dev/null 2>&1
  go mod edit $(repo_requirements)
}

# report_version_drift logs how many shared modules the build had to move off the
# repository's versions (those packages, and what imports them, are compiled twice).
report_version_drift() {
  local drift
  drift="$(comm -13 <(repo_requirements | sed 's/^-require=//' | sort) \
    <(go list -m -f '{{if not .Main}}{{.Path}}@{{.Version}}{{end}}' all | sort) |
    cut -d@ -f1 | sort | comm -12 - <(repo_requirements | sed 's/^-require=//' | cut -d@ -f1 | sort) | wc -l)"
  log "$1: $drift shared modules at a version other than the repository's"
}

# etcd_module makes $work/build-etcd the build module of etcd's server, its modules
# downloaded, and changes to it.
etcd_module() {
  new_build_module build-etcd
  go get "go.etcd.io/etcd/server/v3@v$ETCD_VERSION" >&2
}

build_etcd() {
  local start=$SECONDS
  log "building etcd v$ETCD_VERSION (about 1 minute cold on 2 cores)"
  etcd_module
  report_version_drift etcd
  go build -ldflags "-s -w" -o "$work/out/etcd" go.etcd.io/etcd/server/v3 >&2
  cd "$repo_root"
  log "etcd built in $((SECONDS - start))s"
}

# kubernetes_module makes $work/build-kubernetes the build module of the named commands
# of k8s.io/kubernetes (its staging modules pinned to the release), their modules
# downloaded, and changes to it.
kubernetes_module() {
  new_build_module build-kubernetes
  local kmod
  kmod="$(go mod download -json "k8s.io/kubernetes@v$K8S_VERSION" | sed -n 's/.*"GoMod": "\(.*\)".*/\1/p')"
  local staging_version="v0.${K8S_VERSION#1.}"
  local m cmd
  for m in $(awk '$2 == "=>" && $3 ~ /^\.\/staging\// {print $1}' "$kmod"); do
    go mod edit -replace "$m=$m@$staging_version"
  done
  for cmd in "$@"; do
    go get "k8s.io/kubernetes/cmd/$cmd@v$K8S_VERSION" >&2
  done
}

# build_kubernetes_commands builds the named commands of k8s.io/kubernetes into the
# folder $1.
build_kubernetes_commands() {
  local start=$SECONDS out="$1"
  shift
  kubernetes_module "$@"
  report_version_drift kubernetes
  # One build for all: one command's compiles overlap another's link, which uses one core.
  go build -ldflags "-s -w" -o "$out/" "${@/#/k8s.io/kubernetes/cmd/}" >&2
  cd "$repo_root"
  log "$* built in $((SECONDS - start))s"
}

want_scheduler() { [[ "${ESPO_KUBE_SCHEDULER:-}" == 1 && ! -f "$dest/.scheduler-complete" ]]; }

# fetch_modules downloads the modules of every command the build would make (at least
# one: it runs only when the control plane asked for is not cached).
fetch_modules() {
  local start=$SECONDS commands=()
  log "downloading the control plane's modules"
  [[ -f "$dest/.complete" ]] || { etcd_module; commands+=(kube-apiserver); }
  want_scheduler && commands+=(kube-scheduler)
  kubernetes_module "${commands[@]}"
  cd "$repo_root"
  log "modules downloaded in $((SECONDS - start))s"
}

# use_cached prints the built control plane's folder and exits.
use_cached() {
  log "using cached control plane in $dest"
  echo "$dest"
  exit 0
}

if cached; then use_cached; fi
[[ "${1:-}" != --if-cached ]] || exit 1

mkdir -p "$ESPO_CACHE/k8s"
if [[ "${1:-}" == --fetch ]]; then  # no lock: the module cache takes concurrent downloads
  work="$(mktemp -d "$ESPO_CACHE/k8s/fetch.XXXXXX")"
  trap 'rm -rf "$work"' EXIT
  fetch_modules
  exit 0
fi
exec 9>"$ESPO_CACHE/k8s/.lock"
log "waiting for the build lock ($ESPO_CACHE/k8s/.lock)"
flock 9
if cached; then use_cached; fi  # another run finished it while we waited

work="$(mktemp -d "$ESPO_CACHE/k8s/build.XXXXXX")"
trap 'rm -rf "$work"' EXIT

if [[ ! -f "$dest/.complete" ]]; then
  mkdir -p "$work/out"
  build_etcd
  commands=(kube-apiserver)
  want_scheduler && commands+=(kube-scheduler)
  log "building ${commands[*]} v$K8S_VERSION (about 6 minutes cold on 2 cores)"
  build_kubernetes_commands "$work/out" "${commands[@]}"
  rm -rf "$dest"
  mv "$work/out" "$dest"
  touch "$dest/.complete"
  [[ ! -f "$dest/kube-scheduler" ]] || touch "$dest/.scheduler-complete"
  log "control plane ready in $dest"
fi
if want_scheduler; then
  log "building kube-scheduler v$K8S_VERSION (about 1.5 minutes after kube-apiserver)"
  build_kubernetes_commands "$work" kube-scheduler
  mv "$work/kube-scheduler" "$dest/kube-scheduler"
  touch "$dest/.scheduler-complete"
fi
echo "$dest"
