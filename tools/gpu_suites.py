#!/usr/bin/env python3
"""Runs a GoogleTest binary one test suite per process and prints a summary table.

Each suite (`--gtest_list_tests`, then `--gtest_filter=Suite.*`) runs in its own process under its
own timeout, so a sticky CUDA error, an abort or a hang in one suite cannot take the other suites'
results with it. A test of a suite that crashed or timed out before reporting counts as failed.

With --device_present (the caller has checked that a CUDA device is visible), a test that skipped
with "no CUDA device" counts as failed: on a GPU machine such a skip means the test binary could
not see the device, not that there is nothing to test.

Usage: gpu_suites.py --binary bin/gpu_tests [--suite_timeout 60] [--budget 150]
                     [--device_present] [--log gpu_tests.txt] [--highlight Suite.Test ...]
                     [--filter GLOB] [--ld_library_path P]
Prints the table (suite, passed, failed, skipped, seconds, note) on stdout; the raw output of
every suite goes to --log as it runs. Exit status: 0 when no test failed, 1 otherwise, 2 when
the binary cannot list its tests.
"""
import argparse
import fnmatch
import os
import re
import signal
import subprocess
import sys
import time

NO_DEVICE = "no CUDA device"
RESULT_RE = re.compile(r"^\[\s+(OK|FAILED|SKIPPED)\s+\] (\S+?)(?:, where .*)? \(\d+ ms\)\s*$")
RUN_RE = re.compile(r"^\[ RUN\s+\] (\S+)\s*$")


def child_env(ld_library_path):
    """The environment of the test processes (LD_LIBRARY_PATH for them alone, when given)."""
    env = dict(os.environ)
    if ld_library_path:
        env["LD_LIBRARY_PATH"] = ld_library_path
    return env


def list_tests(binary, timeout, env):
    """{suite: [test names]} in the binary's order."""
    out = subprocess.run([binary, "--gtest_list_tests"], stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, timeout=timeout, check=False, env=env,
                         universal_newlines=True, errors="replace")
    if out.returncode != 0:
        raise RuntimeError("%s --gtest_list_tests exited with status %d:\n%s"
                           % (binary, out.returncode, out.stdout[-2000:]))
    suites, current = {}, None
    for line in out.stdout.splitlines():
        if not line.strip():
            continue
        if not line.startswith(" "):
            name = line.split("#")[0].strip()
            if not name.endswith("."):
                continue  # a line of other output
            current = name[:-1]
            suites.setdefault(current, [])
        elif current is not None:
            suites[current].append(line.split("#")[0].strip())
    return suites


def run_suite(binary, suite, timeout, log, env):
    """Runs one suite; returns (output, exit status or None on timeout, seconds)."""
    t0 = time.time()
    proc = subprocess.Popen([binary, "--gtest_filter=%s.*" % suite], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, start_new_session=True, env=env)
    timed_out = False
    try:
        raw, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        os.killpg(proc.pid, signal.SIGKILL)
        raw, _ = proc.communicate()
    text = raw.decode("utf-8", "replace")
    log.write("#### %s: %s --gtest_filter=%s.*\n" % (suite, binary, suite))
    log.write(text)
    seconds = time.time() - t0
    if timed_out:
        log.write("#### %s: TIMEOUT after %ds\n" % (suite, timeout))
    else:
        log.write("#### %s: exit status %d in %.1fs\n" % (suite, proc.returncode, seconds))
    log.flush()
    return text, (None if timed_out else proc.returncode), seconds


def classify(text, tests, suite, device_present):
    """Per test: 'passed', 'failed', 'skipped', 'no_device' (a failure with a device present)."""
    outcome, running, body = {}, None, []
    for line in text.splitlines():
        m = RUN_RE.match(line)
        if m:
            running, body = m.group(1), []
            continue
        m = RESULT_RE.match(line)
        if m and m.group(2) == running:
            kind = {"OK": "passed", "FAILED": "failed", "SKIPPED": "skipped"}[m.group(1)]
            if kind == "skipped" and any(NO_DEVICE in b for b in body):
                kind = "no_device" if device_present else "skipped"
            outcome[running] = kind
            running = None
            continue
        if running is not None:
            body.append(line)
    crashed_in = running  # a test that started and never reported
    full = ["%s.%s" % (suite, t) for t in tests]
    for name in full:
        outcome.setdefault(name, "failed")
    return outcome, crashed_in


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--binary", required=True)
    ap.add_argument("--suite_timeout", type=int, default=60, help="seconds per suite")
    ap.add_argument("--budget", type=int, default=0,
                    help="seconds for all suites (0: no limit); suites left when it is spent "
                         "are reported as not run and count as failed")
    ap.add_argument("--device_present", action="store_true")
    ap.add_argument("--log", default=os.devnull)
    ap.add_argument("--highlight", nargs="*", default=[],
                    help="tests whose verdict the summary names one by one")
    ap.add_argument("--filter", default="*", help="suites to run (shell glob)")
    ap.add_argument("--ld_library_path", default="",
                    help="LD_LIBRARY_PATH of the test processes (not of this script)")
    args = ap.parse_args()

    start = time.time()
    try:
        env = child_env(args.ld_library_path)
        suites = list_tests(args.binary, min(args.suite_timeout, 120), env)
    except (OSError, RuntimeError, subprocess.TimeoutExpired) as e:
        print("gpu_suites: cannot list the tests of %s: %s" % (args.binary, e))
        return 2
    suites = {s: t for s, t in suites.items() if fnmatch.fnmatch(s, args.filter)}
    if not suites:
        print("gpu_suites: %s lists no test suite matching '%s'" % (args.binary, args.filter))
        return 2

    rows, verdicts = [], {}
    totals = {"passed": 0, "failed": 0, "skipped": 0}
    with open(args.log, "a") as log:
        for suite, tests in suites.items():
            left = args.budget - (time.time() - start) if args.budget > 0 else args.suite_timeout
            if left < 1:
                outcome = {"%s.%s" % (suite, t): "failed" for t in tests}
                note, seconds = "NOT RUN (budget spent)", 0.0
            else:
                limit = max(1, int(round(min(args.suite_timeout, left))))
                text, rc, seconds = run_suite(args.binary, suite, limit, log, env)
                outcome, crashed_in = classify(text, tests, suite, args.device_present)
                if rc is None:
                    note = "TIMEOUT after %ds" % limit
                elif rc != 0 and crashed_in:
                    note = "exit %d in %s" % (rc, crashed_in)
                elif rc != 0:
                    note = "exit %d" % rc
                else:
                    note = ""
                if rc is None and crashed_in:
                    note += " in " + crashed_in
            n_dev = sum(1 for v in outcome.values() if v == "no_device")
            if n_dev:
                note = (note + "; " if note else "") + "%d skipped for '%s' with a device present" \
                       % (n_dev, NO_DEVICE)
            counts = {
                "passed": sum(1 for v in outcome.values() if v == "passed"),
                "failed": sum(1 for v in outcome.values() if v in ("failed", "no_device")),
                "skipped": sum(1 for v in outcome.values() if v == "skipped"),
            }
            for k in totals:
                totals[k] += counts[k]
            verdicts.update(outcome)
            rows.append((suite, counts["passed"], counts["failed"], counts["skipped"], seconds,
                         note))

    width = max([len("suite")] + [len(r[0]) for r in rows])
    print("%-*s %7s %7s %8s %8s  %s" % (width, "suite", "passed", "failed", "skipped", "seconds",
                                       "note"))
    for suite, p, f, s, sec, note in rows:
        print("%-*s %7d %7d %8d %8.1f  %s" % (width, suite, p, f, s, sec, note))
    print("%-*s %7d %7d %8d %8.1f" % (width, "total", totals["passed"], totals["failed"],
                                      totals["skipped"], time.time() - start))
    for name in args.highlight:
        v = verdicts.get(name, "not in the binary")
        print("check %s: %s" % (name, {"no_device": "FAILED (skipped: no CUDA device)",
                                       "failed": "FAILED"}.get(v, v)))
    print("%d passed, %d failed, %d skipped" % (totals["passed"], totals["failed"],
                                               totals["skipped"]))
    return 1 if totals["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
