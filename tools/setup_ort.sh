#!/usr/bin/env bash
# Optional: ONNX Runtime (PyPI), the inference peer the ONNX export tests check against, in a
# virtual environment at <repo>/.venv-ort (git-ignored). The tests that need it skip without it.
set -euo pipefail
cd "$(dirname "$0")/.."
[[ -x .venv-ort/bin/python ]] || python3 -m venv .venv-ort
.venv-ort/bin/pip install -q onnxruntime onnx numpy
.venv-ort/bin/python -c "import onnxruntime; print('setup_ort: onnxruntime', onnxruntime.__version__)"
