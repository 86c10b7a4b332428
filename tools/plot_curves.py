#!/usr/bin/env python3
"""Training curves from train_net's (and train_gan's) --log_csv files as one SVG: the losses and
the accuracies (training batches as lines, test evaluations as dots; a second column of a kind,
e.g. the GAN's g_loss beside d_loss, dashed) against the iteration, one colour per run, so FP32
and mixed-precision runs of the same model sit on one chart.

    python3 tools/plot_curves.py --csv runs/fp32/log.csv:FP32 --csv runs/fp16/log.csv:FP16 \
        --output curves.svg

Only the standard library: it runs with any Python 3.
"""
import argparse
import csv
import math
import sys
from xml.sax.saxutils import escape

COLOURS = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf"]
W, H = 900, 300  # one panel
PAD_L, PAD_R, PAD_T, PAD_B = 70, 160, 30, 40


def read_run(path):
    """{column: [(iter, value)]} of a --log_csv file (empty cells skipped)."""
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    if not rows or "iter" not in rows[0]:
        raise ValueError("%s is not a train_net --log_csv file (no 'iter' column)" % path)
    series = {}
    for row in rows:
        try:
            it = float(row["iter"])
        except (TypeError, ValueError):
            raise ValueError("%s: iteration %r is not a number" % (path, row.get("iter")))
        for col, v in row.items():
            if not (col.endswith("loss") or "accuracy" in col) or v in (None, ""):
                continue
            try:
                value = float(v)
            except ValueError:
                raise ValueError("%s: %s %r at iteration %g is not a number" % (path, col, v, it))
            if math.isfinite(value):
                series.setdefault(col, []).append((it, value))
    if not any(c.endswith("loss") for c in series):
        raise ValueError("%s has no loss column with values" % path)
    return series


def columns_of(runs, kind):
    """[(column, dashed, dots)] of every run's columns of `kind` ("loss" or "accuracy"): test_*
    columns as dots, the second training column dashed."""
    names = []
    for r in runs:
        for c in r["series"]:
            if c not in names and (c.endswith("loss") if kind == "loss" else "accuracy" in c):
                names.append(c)
    train = [c for c in names if not c.startswith("test_")]
    return [(c, i > 0, False) for i, c in enumerate(train)] + \
        [(c, False, True) for c in names if c.startswith("test_")]


def ticks(lo, hi, n=5):
    if hi <= lo:
        hi = lo + 1
    step = 10 ** math.floor(math.log10((hi - lo) / n))
    for m in (1, 2, 5, 10):
        if (hi - lo) / (step * m) <= n:
            step *= m
            break
    start = math.ceil(lo / step) * step
    return [start + i * step for i in range(int((hi - start) / step) + 1)]


def panel(runs, columns, title, y0):
    """SVG of one panel: `columns` = [(column, dashed?, dots?)] of every run."""
    pts = [p for r in runs for c, _, _ in columns for p in r["series"].get(c, [])]
    if not pts:
        return ""
    x_lo, x_hi = 0, max(p[0] for p in pts)
    y_lo, y_hi = min(p[1] for p in pts), max(p[1] for p in pts)
    if y_hi == y_lo:
        y_hi = y_lo + 1
    pw, ph = W - PAD_L - PAD_R, H - PAD_T - PAD_B

    def sx(x):
        return PAD_L + (x - x_lo) / max(x_hi - x_lo, 1) * pw

    def sy(y):
        return y0 + PAD_T + (1 - (y - y_lo) / (y_hi - y_lo)) * ph

    out = ['<text x="%d" y="%d" font-size="14" font-weight="bold">%s</text>'
           % (PAD_L, y0 + 20, escape(title)),
           '<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#888"/>'
           % (PAD_L, y0 + PAD_T, pw, ph)]
    for t in ticks(y_lo, y_hi):
        out.append('<text x="%d" y="%.1f" font-size="10" text-anchor="end">%g</text>'
                   % (PAD_L - 5, sy(t) + 3, round(t, 6)))
    for t in ticks(x_lo, x_hi):
        out.append('<text x="%.1f" y="%d" font-size="10" text-anchor="middle">%g</text>'
                   % (sx(t), y0 + H - PAD_B + 14, t))
    out.append('<text x="%d" y="%d" font-size="11" text-anchor="middle">iteration</text>'
               % (PAD_L + pw // 2, y0 + H - 8))
    for r in runs:
        for column, dashed, dots in columns:
            data = r["series"].get(column, [])
            if not data:
                continue
            if dots:
                out += ['<circle class="%s" cx="%.1f" cy="%.1f" r="3" fill="%s"/>'
                        % (column, sx(x), sy(y), r["colour"]) for x, y in data]
            else:
                out.append('<polyline class="%s" fill="none" stroke="%s" stroke-width="1.5"%s '
                           'points="%s"/>' % (column, r["colour"],
                                              ' stroke-dasharray="4,3"' if dashed else "",
                                              " ".join("%.1f,%.1f" % (sx(x), sy(y))
                                                       for x, y in data)))
    for i, r in enumerate(runs):
        y = y0 + PAD_T + 14 + 16 * i
        out.append('<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="2"/>'
                   '<text x="%d" y="%d" font-size="11">%s</text>'
                   % (W - PAD_R + 10, y - 4, W - PAD_R + 30, y - 4, r["colour"], W - PAD_R + 35,
                      y, escape(r["label"])))
    return "\n".join(out)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--csv", action="append", required=True, metavar="FILE[:LABEL]",
                    help="a train_net --log_csv file, optionally labelled; repeat for several runs")
    ap.add_argument("--output", required=True, help="the SVG file to write")
    ap.add_argument("--title", default="training curves")
    args = ap.parse_args(argv)
    runs = []
    for i, spec in enumerate(args.csv):
        path, _, label = spec.partition(":")
        try:
            series = read_run(path)
        except (OSError, ValueError) as e:
            ap.error(str(e))
        runs.append({"label": label or path, "series": series,
                     "colour": COLOURS[i % len(COLOURS)]})
    def describe(cols):
        return ", ".join(c + (" dashed" if d else " dots" if t else "") for c, d, t in cols)

    loss_cols, acc_cols = columns_of(runs, "loss"), columns_of(runs, "accuracy")
    parts = [panel(runs, loss_cols, "%s: %s" % (args.title, describe(loss_cols)), 0),
             panel(runs, acc_cols, describe(acc_cols), H)]
    svg = ('<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif">'
           '\n<rect width="100%%" height="100%%" fill="white"/>\n%s\n</svg>\n'
           % (W, 2 * H, "\n".join(p for p in parts if p)))
    with open(args.output, "w") as f:
        f.write(svg)
    print(args.output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
