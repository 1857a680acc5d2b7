#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""layout-bench: a full-node layout against the same carves done by mkdir (docs/performance.md).

A simulated node of CARDS PPUs and CARDS H200s.  Each card is filled with its smallest profile,
as many as fit (every card, every placement): once by writing every card's <dev>/mig/layout at
once (what `accel-smi layout apply` does, a thread per card, each write applying on its card),
against two baselines in the same run, on the same mount: the same mkdirs one after another
(the sum a script pays that carves card by card) and the same mkdirs issued in parallel by a
script (a thread per card).  Each round empties the node again; the median of ROUNDS is reported.

usage: layout_bench.py ACCELFS [CARDS] [ROUNDS]   (root; ACCELFS_SIM_LIBDIR as meson sets it)
"""
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time


def cards_of(mnt):
    return sorted(d for d in os.listdir(mnt) if d[:3] in ("ppu", "gpu") and d[3:].isdigit())


def smallest(mnt, dev):
    """The profile with the most legal placements on dev, and how many fit."""
    best = None
    for prof in os.listdir(os.path.join(mnt, dev, "mig")):
        info = os.path.join(mnt, dev, "mig", prof, "info")
        if not os.path.isfile(info):
            continue
        with open(info) as f:
            kv = dict(l.split(": ", 1) for l in f.read().splitlines() if ": " in l)
        with open(os.path.join(mnt, dev, "mig", prof, "available")) as f:
            avail = int(f.read())
        if best is None or avail > best[1]:
            best = (prof, avail)
    return best


def timed_threads(work):
    threads = [threading.Thread(target=w) for w in work]
    t0 = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return time.monotonic() - t0


def main():
    accelfs = sys.argv[1]
    n_cards = int(sys.argv[2]) if len(sys.argv) > 2 else 4
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 3
    state = tempfile.mkdtemp(prefix="layout-bench-state-")
    mnt = tempfile.mkdtemp(prefix="layout-bench-mnt-")
    topo = os.path.join(state, "topology.json")
    with open(topo, "w") as f:
        json.dump({"thead": {"count": n_cards}, "nvidia": {"count": n_cards}}, f)
    subprocess.run([accelfs, f"--sim={topo}", f"--state-dir={state}", "--poll-interval=2", mnt], check=True)
    try:
        devs = cards_of(mnt)
        plan = {d: smallest(mnt, d) for d in devs}
        total = sum(c for _, c in plan.values())

        def mkdirs(dev, tag):
            prof, count = plan[dev]
            for i in range(count):
                os.mkdir(os.path.join(mnt, dev, "mig", prof, f"{tag}-{dev}-{i}"))

        def rmdirs(tag):
            for dev in devs:
                prof, count = plan[dev]
                for i in range(count):
                    os.rmdir(os.path.join(mnt, dev, "mig", prof, f"{tag}-{dev}-{i}"))

        def layout(dev, text):
            with open(os.path.join(mnt, dev, "mig", "layout"), "w") as f:
                f.write(text)

        seq, par, lay = [], [], []
        for r in range(rounds):
            t0 = time.monotonic()
            for dev in devs:
                mkdirs(dev, "s")
            seq.append(time.monotonic() - t0)
            rmdirs("s")
            par.append(timed_threads([lambda d=d: mkdirs(d, "p") for d in devs]))
            rmdirs("p")
            lay.append(timed_threads([lambda d=d: layout(d, f"{plan[d][0]} x{plan[d][1]}\n") for d in devs]))
            for dev in devs:
                with open(os.path.join(mnt, dev, "mig", "layout_status")) as f:
                    status = f.read()
                if not all(l.endswith(": applied") for l in status.splitlines()):
                    raise SystemExit(f"{dev}: the layout did not apply: {status}")
            timed_threads([lambda d=d: layout(d, "\n") for d in devs])  # empty again: the layout reclaims its own
        s, p, l = (statistics.median(x) for x in (seq, par, lay))
        cores = os.cpu_count() or 1
        print(f"layout-bench: {len(devs)} cards, {total} instances, {cores} cores, median of {rounds} rounds")
        print(f"  mkdirs one after another      {s * 1000:9.1f} ms")
        print(f"  mkdirs in parallel (a script) {p * 1000:9.1f} ms")
        print(f"  layouts written in parallel   {l * 1000:9.1f} ms")
        print(f"  layout / sequential mkdirs    {l / s:9.2f}   (goal: at most 1/{cores} = {1 / cores:.2f})")
        print(f"  layout / parallel mkdirs      {l / p:9.2f}   (goal: at most 1.2)")
    finally:
        # fusermount3 comes with the fuse3 package, which a machine with libfuse3 alone lacks.
        if shutil.which("fusermount3"):
            subprocess.run(["fusermount3", "-u", mnt], check=False)
        else:
            subprocess.run(["umount", mnt], check=False)
        time.sleep(0.5)
        shutil.rmtree(state, ignore_errors=True)
        os.rmdir(mnt)


if __name__ == "__main__":
    main()
