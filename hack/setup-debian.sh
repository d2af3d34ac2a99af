#!/usr/bin/env bash
# Installs the Debian package that the code generators need: protoc (protobuf-compiler,
# for the Go stubs and the descriptor set of the worker protocol, make generate). Does
# nothing when it is present; otherwise runs apt-get (as root, as CI does; with sudo
# when available). Progress goes to stderr. (The PyTorch worker's Python packages come
# from its lock instead: hack/setup-python.sh.)
set -euo pipefail
packages=(protobuf-compiler)

if command -v protoc >/dev/null; then
  echo "setup-debian: protoc $(protoc --version | cut -d' ' -f2)" >&2
  exit 0
fi
sudo=""
if [[ $(id -u) -ne 0 ]]; then
  command -v sudo >/dev/null || { echo "setup-debian: not root and no sudo: install ${packages[*]} with apt-get" >&2; exit 1; }
  sudo="sudo"
fi
echo "setup-debian: installing ${packages[*]} with apt-get" >&2
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -q >&2
$sudo apt-get install -y -q --no-install-recommends "${packages[@]}" >&2
echo "setup-debian: $(protoc --version)" >&2
