import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))  # the package in python/halfcaf
REPO = os.path.dirname(os.path.dirname(HERE))


@pytest.fixture(autouse=True)
def fresh_workspace():
    from halfcaf import workspace
    workspace.SwitchWorkspace("default")
    workspace.ResetWorkspace()
    yield
