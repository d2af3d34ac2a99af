#!/usr/bin/env bash
# Builds the Python environment of the PyTorch worker's tests, outside the repository,
# from the worker's locks (trainer/worker/torch/requirements.txt, the worker image's
# lock, and requirements-test.txt, what the tests add: exact versions with hashes, from
# PyPI), and caches it keyed by the locks, the interpreter and the packages left out
# (below). Safe to run twice and concurrently: a finished environment (marked by
# .complete) is reused, a half-built one is rebuilt; once a new one is complete, those of
# other keys are removed (each is about 4 GiB).
#
# Progress goes to stderr; the last line on stdout is the environment's python. With
# --if-cached it builds nothing: it prints that python when the environment is built and
# exits 1 when not. With --uv it prints the path of uv (below) and exits.
#
# With --engine (first, before --if-cached) it builds the rollout engine's environment
# instead (option rollout_engine=vllm: vLLM in a process beside the worker), from
# trainer/worker/torch/engine/requirements-cpu.txt, vLLM's CPU build, in the same way;
# the worker finds it through $ESPO_VLLM_PYTHON, which hack/test.sh sets to what this
# prints. Left out of it, besides CUDA_ONLY: torchaudio and torchcodec (audio and video
# decoding, which no GUI agent's prompt holds; vLLM imports them only for those).
#
# The installer is uv, itself pinned with its hashes in hack/uv-requirements.txt and
# installed by pip into a small environment of its own: it installs the lock's 2.3 GB of
# wheels in about a minute on 2 cores, where pip took eight.
#
# Left out (CUDA_ONLY): torch's PyPI wheel for Linux is its CUDA build, and
# libtorch_cuda.so, which `import torch` loads, links cudart, cublas, cudnn, cufft,
# cufile, cupti, cusparse (and nvJitLink), cusparseLt, nccl, nvrtc and nvshmem: the
# loader needs those even where no GPU is. These are never loaded on a CPU, so the
# environment does without them:
#   triton                    torch.compile's GPU kernels (imported only by inductor)
#   nvidia-cusolver           loaded with libtorch_cuda_linalg.so, at the first CUDA
#                             linear-algebra call
#   cuda-bindings, cuda-pathfinder   CUDA's Python API
#   nvidia-cuda-cccl          CUDA C++ headers
#   nvidia-nvtx               profiling ranges (torch loads it when present)
#   cuda-toolkit              a package of no files, naming the others
# Everything is installed with --no-deps from the locks, so nothing else comes in.
#
# Environment:
#   PYTHON       the interpreter to build on (default python3; 3.11 or newer)
#   ESPO_CACHE   cache root (default ${XDG_CACHE_HOME:-$HOME/.cache}/espo-operator)
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
worker="$repo_root/trainer/worker/torch"
locks=("$worker/requirements.txt" "$worker/requirements-test.txt")
CUDA_ONLY=(triton nvidia-cusolver cuda-bindings cuda-pathfinder nvidia-cuda-cccl nvidia-nvtx cuda-toolkit)
# What the environment must import once built, and the prefix of its folder's name.
imports='import torch, transformers, peft, grpc, google.protobuf, PIL, trl, pytest'
kind=env
if [[ "${1:-}" == --engine ]]; then
  shift
  locks=("$worker/engine/requirements-cpu.txt")
  CUDA_ONLY+=(torchaudio torchcodec)
  imports='import vllm, torch, safetensors, PIL'
  kind=engine
fi
PYTHON="${PYTHON:-python3}"
ESPO_CACHE="${ESPO_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/espo-operator}"
root="$ESPO_CACHE/python"

log() { echo "setup-python: $*" >&2; }

command -v "$PYTHON" >/dev/null || { log "no $PYTHON: install Python 3.11 or newer (apt-get install python3 python3-venv)"; exit 1; }
base="$("$PYTHON" -c 'import sys; assert sys.version_info >= (3, 11), sys.version; print(sys.executable)')" ||
  { log "$PYTHON is older than 3.11, which the worker's locks are resolved for"; exit 1; }

# bootstrap_uv installs uv (hack/uv-requirements.txt) into $root/uv-<hash> once and
# sets uv to its path.
bootstrap_uv() {
  local pins="$repo_root/hack/uv-requirements.txt" dir
  dir="$root/uv-$(sha256sum "$pins" | cut -c1-12)"
  uv="$dir/bin/uv"
  [[ -f "$dir/.complete" ]] && return
  log "installing uv into $dir"
  rm -rf "$dir"
  mkdir -p "$root"
  "$PYTHON" -m venv "$dir" >&2
  "$dir/bin/python" -m pip install -q --no-deps --require-hashes --disable-pip-version-check -r "$pins" >&2
  touch "$dir/.complete"
}

# cpu_lock writes the locks, less the CUDA_ONLY packages' entries, to $1.
cpu_lock() {
  awk -v skip="${CUDA_ONLY[*]}" '
    BEGIN { n = split(skip, s, " "); for (i = 1; i <= n; i++) drop_name[s[i]] = 1 }
    /^[A-Za-z0-9]/ { name = tolower($1); sub(/[=<>!~ ;\[].*/, "", name); gsub(/_/, "-", name); drop = (name in drop_name) }
    !drop' "${locks[@]}" >"$1"
}

if [[ "${1:-}" == --uv ]]; then
  mkdir -p "$root"
  exec 9>"$root/.lock"
  flock 9
  bootstrap_uv
  echo "$uv"
  exit 0
fi

key="$(cat "${locks[@]}" <(echo "${CUDA_ONLY[*]}") <(echo "$base") <("$PYTHON" -VV) | sha256sum | cut -c1-16)"
dest="$root/$kind-$key"

if [[ "${1:-}" == --if-cached ]]; then
  [[ -f "$dest/.complete" ]] || exit 1
  echo "$dest/bin/python"
  exit 0
fi

mkdir -p "$root"
exec 9>"$root/.lock"
flock 9
bootstrap_uv

if [[ ! -f "$dest/.complete" ]]; then
  start=$SECONDS
  log "building $dest from ${locks[*]#$repo_root/} (2 to 3 GB of wheels, 4 to 5 GiB installed; a minute or two)"
  rm -rf "$dest"
  "$uv" venv -q --python "$base" "$dest" >&2
  lock="$(mktemp)"
  trap 'rm -f "$lock"' EXIT
  cpu_lock "$lock"
  UV_CACHE_DIR="$root/uv-cache" "$uv" pip install --python "$dest/bin/python" --no-deps --require-hashes \
    --compile-bytecode -r "$lock" >&2
  "$dest/bin/python" -c "$imports" >&2
  touch "$dest/.complete"
  log "built in $((SECONDS - start)) s, $(du -sh "$dest" | cut -f1)"
  for old in "$root/$kind"-*; do
    [[ "$old" == "$dest" ]] || { log "removing $old (other locks)"; rm -rf "$old"; }
  done
  UV_CACHE_DIR="$root/uv-cache" "$uv" cache prune -q >&2 || true
fi
echo "$dest/bin/python"
