#!/usr/bin/env bash
# Installs what halfcaf needs to build, test and train on a fresh Debian 12 machine.
# Only missing packages are installed; run as root (or with sudo available).
set -euo pipefail

PKGS=(build-essential cmake ninja-build pkg-config protobuf-compiler libprotobuf-dev
      libgflags-dev libgoogle-glog-dev libopenblas-dev libgtest-dev zlib1g-dev libdnnl-dev
      libleveldb-dev liblmdb-dev libjpeg62-turbo-dev libpng-dev dataset-fashion-mnist
      libgloo-dev redis-server openmpi-bin libopenmpi-dev libonnx-dev libonnx-testdata
      nlohmann-json3-dev)
# libgloo-dev (distributed/: multi-process operators) pulls in what its headers include and its
# library links: libhiredis-dev (Redis store) and libibverbs-dev (ibverbs transport).
# redis-server is only for the Redis rendezvous test (which skips without it); OpenMPI's mpirun
# can launch the processes. libonnx-dev (onnx/: ONNX import) brings the ONNX schema, its shape
# inference and libonnx_proto; libonnx-testdata is ONNX's backend test data, the conformance
# suite tests/onnx runs (it skips without it). nlohmann-json3-dev (header-only) is the tests' JSON
# reader (trace files).
# Optional extras: HALFCAF_PEER=1 adds the CPU PyTorch used by the benchmark peer scripts and the
# tests that compare with it (ResNet numerics, torchvision models imported from ONNX).
if [[ "${HALFCAF_PEER:-0}" == "1" ]]; then
  PKGS+=(python3-torch python3-torchvision python3-onnx)
fi

missing=()
for p in "${PKGS[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if ((${#missing[@]})); then
  SUDO=""
  [[ $(id -u) -ne 0 ]] && SUDO="sudo"
  echo "setup_deps: installing ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
