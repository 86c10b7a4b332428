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


def _histograms(tb_dir):
    event_accumulator = pytest.importorskip(
        "tensorboard.backend.event_processing.event_accumulator")
    acc = event_accumulator.EventAccumulator(str(tb_dir), size_guidance={"histograms": 0})
    acc.Reload()
    return acc


# LeNet's trained parameters and their sizes (models/lenet).
LENET_PARAMS = {"conv1_w": 500, "conv1_b": 20, "conv2_w": 25000, "conv2_b": 50,
                "fc3_w": 400000, "fc3_b": 500, "pred_w": 5000, "pred_b": 10}


def test_histograms_of_parameters_and_unscaled_gradients(tmp_path):
    """--tensorboard_histograms N: every trained parameter and its gradient every N steps. A
    float16 run with a dynamic loss scale (gradients carry 2^16 and more before unscaling) shows
    gradients the size of a float32 run's from the same start."""
    if not os.path.exists(DATA + "train-images-idx3-ubyte.gz"):
        pytest.skip("dataset-fashion-mnist is not installed")
    build = os.environ.get("HALFCAF_BUILD_DIR", os.path.join(REPO, "build"))
    runs = {}
    for dtype in ("float", "float16"):
        tb = tmp_path / dtype
        r = subprocess.run(
            [os.path.join(build, "bin", "train_net"),
             "--net", os.path.join(REPO, "models/lenet/lenet_train_net.pbtxt"),
             "--init_net", os.path.join(REPO, "models/lenet/lenet_init_net.pbtxt"),
             "--train_data", DATA + "train-images-idx3-ubyte.gz",
             "--iters", "4", "--batch_size", "32", "--log_every", "4", "--threads", "1",
             "--dtype", dtype, "--loss_scale", "dynamic",
             "--tensorboard", str(tb), "--tensorboard_histograms", "2"],
            capture_output=True, text=True, timeout=600)
        assert r.returncode == 0, r.stderr
        runs[dtype] = _histograms(tb)
    for dtype, acc in runs.items():
        tags = set(acc.Tags()["histograms"])
        assert tags == ({"params/" + p for p in LENET_PARAMS} |
                        {"grads/" + p for p in LENET_PARAMS}), (dtype, tags)
        for p, n in LENET_PARAMS.items():
            for kind in ("params/", "grads/"):
                events = acc.Histograms(kind + p)
                assert [e.step for e in events] == [2, 4], (dtype, p)
                for e in events:
                    h = e.histogram_value
                    assert h.num == n and sum(h.bucket) == n, (dtype, p, h.num)
                    assert h.min <= h.sum / n <= h.max
    # Step 2's gradients (after one update from the same initial weights): float16's, unscaled,
    # within a few percent of float32's in norm (scaled by 2^16 they would be far off).
    for p in LENET_PARAMS:
        g32 = runs["float"].Histograms("grads/" + p)[0].histogram_value
        g16 = runs["float16"].Histograms("grads/" + p)[0].histogram_value
        assert g16.sum_squares == pytest.approx(g32.sum_squares, rel=0.1), p
        assert g32.sum_squares > 0, p


def test_train_gan_writes_scalars_and_sample_grids(tmp_path):
    event_accumulator = pytest.importorskip(
        "tensorboard.backend.event_processing.event_accumulator")
    build = os.environ.get("HALFCAF_BUILD_DIR", os.path.join(REPO, "build"))
    out, tb, log = tmp_path / "out", tmp_path / "tb", tmp_path / "log.csv"
    # Synthetic data: 1024 images, 64 iterations per epoch of 16; 70 iterations cross one epoch.
    r = subprocess.run(
        [os.path.join(build, "bin", "train_gan"), "--data_format", "synthetic",
         "--batch_size", "16", "--threads", "1", "--iters", "70", "--log_every", "35",
         "--dtype", "float16", "--grid_per_class", "3", "--out_dir", str(out),
         "--log_csv", str(log), "--tensorboard", str(tb)],
        capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    acc = event_accumulator.EventAccumulator(str(tb), size_guidance={"scalars": 0, "images": 0})
    acc.Reload()
    images = acc.Images("samples")
    assert [e.step for e in images] == [64, 70]
    # The image at the end is grid.png itself, and every grid is 10 rows of 3 28x28 tiles.
    assert images[-1].encoded_image_string == (out / "grid.png").read_bytes()
    assert images[0].encoded_image_string == (out / "grid_epoch_1.png").read_bytes()
    for e in images:
        assert (e.height, e.width) == (10 * 28 + 9 * 2, 3 * 28 + 2 * 2)
    rows = list(csv.DictReader(open(log)))
    for column in ("d_loss", "g_loss", "d_accuracy", "d_loss_scale", "g_loss_scale"):
        want = {int(row["iter"]): float(row[column]) for row in rows}
        got = {e.step: e.value for e in acc.Scalars("train/" + column)}
        assert sorted(got) == sorted(want), column
        for step, value in want.items():
            assert got[step] == pytest.approx(value, rel=1e-6), (column, step)
