"""tools/plot_curves.py: train_net / train_gan CSV logs to one SVG chart."""
import os
import subprocess
import sys
import xml.etree.ElementTree as ET

from conftest import REPO

TOOL = os.path.join(REPO, "tools", "plot_curves.py")
SVG = "{http://www.w3.org/2000/svg}"
HEADER = "iter,epoch,loss,accuracy,lr,images_per_sec,loss_scale,skipped_steps,test_loss,test_accuracy\n"


def write(path, rows):
    path.write_text(HEADER + "".join(rows))
    return str(path)


def test_two_runs_on_one_chart(tmp_path):
    a = write(tmp_path / "fp32.csv", ["100,0.1,2.0,0.3,0.01,1000,1,0,,\n",
                                      "200,0.2,1.0,0.6,0.01,1000,1,0,1.1,0.55\n",
                                      "300,0.3,0.5,0.8,0.01,1000,1,0,,\n"])
    b = write(tmp_path / "fp16.csv", ["100,0.1,2.1,0.3,0.01,1000,65536,0,,\n",
                                      "200,0.2,1.1,0.6,0.01,1000,65536,0,1.2,0.5\n"])
    out = tmp_path / "curves.svg"
    subprocess.run([sys.executable, TOOL, "--csv", a + ":FP32", "--csv", b + ":FP16",
                    "--output", str(out)], check=True, capture_output=True)
    root = ET.parse(out).getroot()
    lines = root.findall(SVG + "polyline")
    assert sorted(l.get("class") for l in lines) == ["accuracy", "accuracy", "loss", "loss"]
    loss_a = [l for l in lines if l.get("class") == "loss"][0].get("points").split()
    assert len(loss_a) == 3
    ys = [float(p.split(",")[1]) for p in loss_a]
    assert ys[0] < ys[1] < ys[2]  # the loss falls, so its line goes down the panel (SVG y grows down)
    dots = root.findall(SVG + "circle")
    assert sorted(d.get("class") for d in dots) == ["test_accuracy"] * 2 + ["test_loss"] * 2
    texts = [t.text for t in root.iter(SVG + "text")]
    assert "FP32" in texts and "FP16" in texts
    assert "loss_scale" not in " ".join(l.get("class") for l in lines)


def test_gan_logs_plot_both_losses(tmp_path):
    p = tmp_path / "gan.csv"
    p.write_text("iter,epoch,d_loss,g_loss,d_accuracy,iters_per_sec,d_loss_scale,g_loss_scale,"
                 "d_skipped,g_skipped,gan_test_accuracy,frechet\n"
                 "500,0.5,2.4,3.2,0.75,13.5,1,1,0,0,nan,nan\n"
                 "1000,1.0,1.4,2.3,0.84,13.5,1,1,0,0,0.4,20\n")
    out = tmp_path / "gan.svg"
    subprocess.run([sys.executable, TOOL, "--csv", str(p), "--output", str(out)], check=True,
                   capture_output=True)
    lines = ET.parse(out).getroot().findall(SVG + "polyline")
    classes = sorted(l.get("class") for l in lines)
    assert classes == ["d_accuracy", "d_loss", "g_loss", "gan_test_accuracy"]
    assert [l for l in lines if l.get("class") == "g_loss"][0].get("stroke-dasharray")


def test_bad_inputs(tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("a,b\n1,2\n")
    r = subprocess.run([sys.executable, TOOL, "--csv", str(bad), "--output",
                        str(tmp_path / "x.svg")], capture_output=True, text=True)
    assert r.returncode == 2 and "not a train_net --log_csv file" in r.stderr
    r = subprocess.run([sys.executable, TOOL, "--csv", str(tmp_path / "missing.csv"),
                        "--output", str(tmp_path / "x.svg")], capture_output=True, text=True)
    assert r.returncode == 2 and "missing.csv" in r.stderr
    garbled = tmp_path / "garbled.csv"
    garbled.write_text(HEADER + "100,0.1,abc,0.3,0.01,1000,1,0,,\n")
    r = subprocess.run([sys.executable, TOOL, "--csv", str(garbled), "--output",
                        str(tmp_path / "x.svg")], capture_output=True, text=True)
    assert r.returncode == 2 and "'abc'" in r.stderr
