#!/usr/bin/env bash
# Installs the Debian packages that the tests and the code generators need: protoc
# (protobuf-compiler, for the Go stubs of the worker protocol) and, in /usr/bin/python3,
# what the PyTorch worker and its tests need (python3-torch, python3-grpcio,
# python3-protobuf). Does nothing when all of it is present;
# otherwise runs apt-get (as root, as CI does; with sudo when available). Progress goes
# to stderr.
set -euo pipefail
python=/usr/bin/python3
packages=(protobuf-compiler python3-torch python3-grpcio python3-protobuf)

present() {
  command -v protoc >/dev/null && "$python" -c 'import torch, grpc, google.protobuf' 2>/dev/null
}

if present; then
  echo "setup-debian: protoc $(protoc --version | cut -d' ' -f2); $python has torch, grpc and protobuf" >&2
  exit 0
fi
sudo=""
if [[ $(id -u) -ne 0 ]]; then
  command -v sudo >/dev/null || { echo "setup-debian: not root and no sudo: install ${packages[*]} with apt-get" >&2; exit 1; }
  sudo="sudo"
fi
echo "setup-debian: installing ${packages[*]} with apt-get (several minutes the first time)" >&2
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -q >&2
$sudo apt-get install -y -q --no-install-recommends "${packages[@]}" >&2
"$python" -c 'import torch, grpc; print("setup-debian: torch", torch.__version__, "grpcio", grpc.__version__)' >&2
echo "setup-debian: $(protoc --version)" >&2
