"""The layer helpers behind brew (Caffe2's caffe2.python.helpers)."""
