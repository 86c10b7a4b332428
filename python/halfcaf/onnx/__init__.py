"""halfcaf.onnx: ONNX models in halfcaf (Caffe2's caffe2.python.onnx).

``halfcaf.onnx.backend`` is the ONNX backend (ONNX's backend API: ``prepare``, ``run_model``,
``run_node``, ``supports_device``), importing models with halfcaf's C++ importer::

    import halfcaf.onnx.backend as backend
    outputs = backend.prepare(onnx_model).run([x])
"""
