#!/usr/bin/env bash
# The Python the halfcaf package is built and tested with: a venv at <repo>/.venv-py (git-ignored)
# over Debian's Python 3 (python3-venv) that also sees Debian's NumPy, PyTorch, ONNX, protobuf
# and pydot (--system-site-packages), with nanobind, scikit-build-core, pytest and tensorboard (its
# event-file reader checks train_net --tensorboard) from PyPI.
# Prints the venv's python. Works whatever .venv-py is now (absent, working, broken).
set -euo pipefail
cd "$(dirname "$0")/.."
venv=.venv-py
SUDO=""
[[ $(id -u) -ne 0 ]] && SUDO="sudo"
need=()
for p in python3-venv python3-dev python3-numpy python3-protobuf python3-onnx python3-pydot \
    graphviz protobuf-compiler; do
  dpkg -s "$p" >/dev/null 2>&1 || need+=("$p")
done
if ((${#need[@]})); then
  $SUDO apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${need[@]}" >&2
fi
if [[ -L $venv ]]; then rm -f "$venv"; fi
if [[ ! -x $venv/bin/python ]] || ! "$venv/bin/python" -c "import numpy" 2>/dev/null; then
  /usr/bin/python3 -m venv --clear --system-site-packages "$venv" >&2
fi
"$venv/bin/python" -c "import nanobind, scikit_build_core, pytest, tensorboard" 2>/dev/null ||
  "$venv/bin/pip" install -q nanobind scikit-build-core pytest tensorboard >&2
echo "$PWD/$venv/bin/python"
