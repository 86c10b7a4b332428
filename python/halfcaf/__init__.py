"""halfcaf: Caffe2's Python interface over halfcaf's C++ runtime.

A Caffe2 script runs with its imports changed from ``caffe2.python`` / ``caffe2.proto`` to
``halfcaf`` / ``halfcaf.proto``::

    from halfcaf import core, workspace, model_helper, brew, optimizer
    from halfcaf.proto import caffe2_pb2

The native module ``halfcaf._C`` and the generated ``halfcaf.halfcaf_pb2`` sit next to these
files after ``pip install .``; in a source checkout they are in ``<build>/python/halfcaf``, found
through the environment variable ``HALFCAF_BUILD_DIR`` (default ``<repo>/build``).
"""
import os as _os

# OpenMP threads spin briefly, then sleep, as in halfcaf's tools (tools/tool_common.cc): libgomp
# reads this when it loads, i.e. when the native module is imported (unless something imported
# before, e.g. torch, has loaded it already).
if "OMP_WAIT_POLICY" not in _os.environ:
    _os.environ.setdefault("GOMP_SPINCOUNT", "2000")


def _find_native():
    here = _os.path.dirname(_os.path.abspath(__file__))
    if any(n.startswith("_C.") for n in _os.listdir(here)):
        return
    build = _os.environ.get("HALFCAF_BUILD_DIR") or _os.path.join(here, "..", "..", "build")
    native = _os.path.join(_os.path.abspath(build), "python", "halfcaf")
    if not _os.path.isdir(native):
        raise ImportError(
            "halfcaf's native module is not built: run `pip install .` in the repository, or build "
            "it (bash tools/build.sh) and set HALFCAF_BUILD_DIR to the build folder (looked in %s)"
            % native)
    __path__.append(native)


_find_native()

from halfcaf import _C  # noqa: E402

EnforceNotMet = _C.EnforceNotMet
OnnxUnsupported = _C.OnnxUnsupported

__all__ = ["EnforceNotMet", "OnnxUnsupported"]
