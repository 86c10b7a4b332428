"""The protobuf messages (``from halfcaf.proto import caffe2_pb2``)."""
