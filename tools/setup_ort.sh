#!/usr/bin/env bash
# Optional: ONNX Runtime (PyPI), the inference peer the ONNX export tests check against, in a
# virtual environment at <repo>/.venv-ort (git-ignored). The tests that need it skip without it
# (and fail under HALFCAF_PEER=1, as CI runs them).
# Works whatever .venv-ort is now: absent, a working venv, a broken one, or a link (a stale link
# from another machine is replaced by a real folder).
set -euo pipefail
cd "$(dirname "$0")/.."
venv=.venv-ort
if ! dpkg -s python3-venv >/dev/null 2>&1; then
  SUDO=""
  [[ $(id -u) -ne 0 ]] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends python3-venv
fi
if [[ -L $venv && ! -x $venv/bin/python ]]; then
  echo "setup_ort: replacing the stale link $venv -> $(readlink "$venv")"
  rm -f "$venv"
fi
if [[ ! -x $venv/bin/python ]] || ! "$venv/bin/python" -c "" 2>/dev/null; then
  [[ -L $venv ]] && rm -f "$venv"
  python3 -m venv --clear "$venv"
fi
"$venv/bin/pip" install -q onnxruntime onnx numpy
"$venv/bin/python" -c "import onnxruntime; print('setup_ort: onnxruntime', onnxruntime.__version__)"
