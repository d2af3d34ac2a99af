#!/usr/bin/env bash
# Builds the envtest control plane (etcd and kube-apiserver) from the Go module proxy and
# caches it outside the repository, keyed by version. Safe to run twice and concurrently:
# a finished cache (marked by .complete) is reused; a half-built one is rebuilt.
#
# Progress goes to stderr; the last line on stdout is the folder to use as
# KUBEBUILDER_ASSETS.
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

if cached; then
  log "using cached control plane in $dest"
  echo "$dest"
  exit 0
fi

mkdir -p "$ESPO_CACHE/k8s"
exec 9>"$ESPO_CACHE/k8s/.lock"
log "waiting for the build lock ($ESPO_CACHE/k8s/.lock)"
flock 9
if cached; then   # another run finished it while we waited
  log "using cached control plane in $dest"
  echo "$dest"
  exit 0
fi

work="$(mktemp -d "$ESPO_CACHE/k8s/build.XXXXXX")"
trap 'rm -rf "$work"' EXIT
export GOFLAGS="-mod=mod" CGO_ENABLED=0 GOTOOLCHAIN=local

build_etcd() {
  local start=$SECONDS
  log "building etcd v$ETCD_VERSION (about 1 minute cold on 2 cores)"
  mkdir -p "$work/etcd"
  (
    cd "$work/etcd"
    go mod init espo.local/build-etcd >/dev/null 2>&1
    go get "go.etcd.io/etcd/server/v3@v$ETCD_VERSION" >&2
    go build -trimpath -ldflags "-s -w" -o "$work/out/etcd" go.etcd.io/etcd/server/v3 >&2
  )
  log "etcd built in $((SECONDS - start))s"
}

# build_kubernetes_command builds the command $1 of k8s.io/kubernetes v$K8S_VERSION
# into the folder $2.
build_kubernetes_command() {
  local start=$SECONDS
  mkdir -p "$work/build-$1"
  cd "$work/build-$1"
  go mod init "espo.local/build-$1" >/dev/null 2>&1
  # k8s.io/kubernetes points its k8s.io/* staging modules at ./staging; replace each with
  # the published v0.x.y of the same release.
  local kmod
  kmod="$(go mod download -json "k8s.io/kubernetes@v$K8S_VERSION" | sed -n 's/.*"GoMod": "\(.*\)".*/\1/p')"
  local staging_version="v0.${K8S_VERSION#1.}"
  local m
  for m in $(awk '$2 == "=>" && $3 ~ /^\.\/staging\// {print $1}' "$kmod"); do
    go mod edit -replace "$m=$m@$staging_version"
  done
  go get "k8s.io/kubernetes/cmd/$1@v$K8S_VERSION" >&2
  go build -trimpath -ldflags "-s -w" -o "$2/$1" "k8s.io/kubernetes/cmd/$1" >&2
  cd - >/dev/null
  log "$1 built in $((SECONDS - start))s"
}

build_kube_apiserver() {
  log "building kube-apiserver v$K8S_VERSION (about 6 minutes cold on 2 cores)"
  build_kubernetes_command kube-apiserver "$work/out"
}

# build_kube_scheduler builds kube-scheduler v$K8S_VERSION into the folder $1.
build_kube_scheduler() {
  log "building kube-scheduler v$K8S_VERSION (about 1.5 minutes on 2 cores after kube-apiserver, 6 cold)"
  build_kubernetes_command kube-scheduler "$1"
}

if [[ ! -f "$dest/.complete" ]]; then
  mkdir -p "$work/out"
  build_etcd
  build_kube_apiserver
  rm -rf "$dest"
  mv "$work/out" "$dest"
  touch "$dest/.complete"
  log "control plane ready in $dest"
fi
if [[ "${ESPO_KUBE_SCHEDULER:-}" == 1 && ! -f "$dest/.scheduler-complete" ]]; then
  build_kube_scheduler "$work"
  mv "$work/kube-scheduler" "$dest/kube-scheduler"
  touch "$dest/.scheduler-complete"
fi
echo "$dest"
