#!/usr/bin/env bash
# Installs what the PyTorch worker's tests and stub generation need into /usr/bin/python3,
# from Debian's packages: python3-torch, python3-grpcio, python3-protobuf and
# python3-grpc-tools. Does nothing when they are already importable; otherwise runs
# apt-get (as root, as CI does; with sudo when available). Progress goes to stderr.
set -euo pipefail
python=/usr/bin/python3
packages=(python3-torch python3-grpcio python3-protobuf python3-grpc-tools)

if "$python" -c 'import torch, grpc, google.protobuf, grpc_tools.protoc' 2>/dev/null; then
  echo "setup-python: $python has torch, grpc, protobuf and grpc_tools" >&2
  exit 0
fi
sudo=""
if [[ $(id -u) -ne 0 ]]; then
  command -v sudo >/dev/null || { echo "setup-python: not root and no sudo: install ${packages[*]} with apt-get" >&2; exit 1; }
  sudo="sudo"
fi
echo "setup-python: installing ${packages[*]} with apt-get (several minutes the first time)" >&2
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -q >&2
$sudo apt-get install -y -q --no-install-recommends "${packages[@]}" >&2
"$python" -c 'import torch, grpc, google.protobuf, grpc_tools.protoc; print("setup-python: torch", torch.__version__, "grpcio", grpc.__version__)' >&2
