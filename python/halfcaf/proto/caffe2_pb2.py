"""Caffe2's protobuf messages under Caffe2's module name: NetDef, OperatorDef, Argument,
DeviceOption, TensorProto, TensorProtos, PlanDef, ExecutionStep (same fields and numbers as
Caffe2's caffe2.proto), and the device type constants CPU and CUDA."""
from halfcaf.halfcaf_pb2 import *  # noqa: F401,F403
from halfcaf.halfcaf_pb2 import DESCRIPTOR  # noqa: F401

# DeviceOption.device_type values, as caffe2_pb2 spells them.
PROTO_CPU = CPU = 0
PROTO_CUDA = CUDA = 1
