"""train_net --tensorboard: the event files TensorBoard's own reader loads hold every value of the
--log_csv file, at the same iterations (tools/tensorboard_writer)."""
import csv
import os
import subprocess

import pytest

from conftest import REPO

DATA = "/usr/share/datasets/fashion-mnist/"


def test_train_net_event_files_match_its_csv(tmp_path):
    event_accumulator = pytest.importorskip(
        "tensorboard.backend.event_processing.event_accumulator")
    if not os.path.exists(DATA + "train-images-idx3-ubyte.gz"):
        pytest.skip("dataset-fashion-mnist is not installed")
    build = os.environ.get("HALFCAF_BUILD_DIR", os.path.join(REPO, "build"))
    log = tmp_path / "log.csv"
    tb = tmp_path / "tb" / "run1"
    r = subprocess.run(
        [os.path.join(build, "bin", "train_net"),
         "--net", os.path.join(REPO, "models/lenet/lenet_train_net.pbtxt"),
         "--init_net", os.path.join(REPO, "models/lenet/lenet_init_net.pbtxt"),
         "--train_data", DATA + "train-images-idx3-ubyte.gz",
         "--test_data", DATA + "t10k-images-idx3-ubyte.gz",
         "--iters", "60", "--batch_size", "32", "--log_every", "20", "--test_every", "40",
         "--threads", "1", "--dtype", "float16", "--loss_scale", "dynamic",
         "--log_csv", str(log), "--tensorboard", str(tb)],
        capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    files = os.listdir(tb)
    assert len(files) == 1 and files[0].startswith("events.out.tfevents.")
    acc = event_accumulator.EventAccumulator(str(tb), size_guidance={"scalars": 0})
    acc.Reload()
    tags = set(acc.Tags()["scalars"])
    rows = list(csv.DictReader(open(log)))
    assert len(rows) >= 3
    columns = {"loss": "train/loss", "accuracy": "train/accuracy", "lr": "train/lr",
               "images_per_sec": "train/images_per_sec", "loss_scale": "train/loss_scale",
               "skipped_steps": "train/skipped_steps", "test_loss": "test/loss",
               "test_accuracy": "test/accuracy"}
    compared = 0
    for column, tag in columns.items():
        want = {int(row["iter"]): float(row[column]) for row in rows if row[column] != ""}
        if not want:
            continue
        assert tag in tags, (tag, tags)
        got = {e.step: e.value for e in acc.Scalars(tag)}
        assert sorted(got) == sorted(want), (tag, sorted(got), sorted(want))
        for step, value in want.items():
            assert got[step] == pytest.approx(value, rel=1e-6, abs=1e-30), (tag, step)
            compared += 1
    assert compared >= 3 * 6 + 2  # every training column at every line, and the test values


def test_an_unwritable_folder_is_a_clear_error(tmp_path):
    if not os.path.exists(DATA + "train-images-idx3-ubyte.gz"):
        pytest.skip("dataset-fashion-mnist is not installed")
    build = os.environ.get("HALFCAF_BUILD_DIR", os.path.join(REPO, "build"))
    blocker = tmp_path / "file"
    blocker.write_text("x")
    r = subprocess.run(
        [os.path.join(build, "bin", "train_net"),
         "--net", os.path.join(REPO, "models/lenet/lenet_train_net.pbtxt"),
         "--init_net", os.path.join(REPO, "models/lenet/lenet_init_net.pbtxt"),
         "--train_data", DATA + "train-images-idx3-ubyte.gz", "--iters", "1",
         "--tensorboard", str(blocker / "tb")],
        capture_output=True, text=True, timeout=300)
    assert r.returncode != 0 and "--tensorboard" in r.stderr and str(blocker) in r.stderr
