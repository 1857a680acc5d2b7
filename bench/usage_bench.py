#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""usage-bench: what a job's utilization costs (docs/performance.md, "Utilization").

1. The driver calls of 100 readers of one job's `utilization` at once against 1 reader of another
   job's, each the first read of its job (one GPM sample pair): goal at most 1.2x.
2. A scrape of /accel/metrics with 100 ready jobs (every one sampled: the scrapes are spaced more
   than a window apart, as Prometheus's are) against one of the same node with none: goal at most 2x.
   A scrape never asks the driver itself (core/engine/node_usage.c's sampler does, after it), so what
   grows with the jobs is the text; the figure of back-to-back scrapes says so.
3. The daemon's own CPU time per scrape (its threads' utime and stime, /proc), back to back, 100 jobs
   against none: what the wall times above measure through a loaded machine's noise.

usage: usage_bench.py ACCELFS ACCEL_SMI [SCRAPES]   (root; ACCELFS_SIM_LIBDIR as meson sets it)
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

WINDOW_S = 1.05  # ACCEL_USAGE_WINDOW_MS, and a little
CPU_SCRAPES = 300  # enough clock ticks (10 ms each) for a figure


def main():
    accelfs, smi = sys.argv[1], sys.argv[2]
    scrapes = int(sys.argv[3]) if len(sys.argv) > 3 else 10
    state = tempfile.mkdtemp(prefix="usage-bench-state-")
    mnt = tempfile.mkdtemp(prefix="usage-bench-mnt-")
    topo = os.path.join(state, "topology.json")
    with open(topo, "w") as f:  # 15 H200s: 105 instances of 1g.18gb
        json.dump({"thead": None, "nvidia": {"count": 15}}, f)
    subprocess.run([accelfs, f"--sim={topo}", f"--state-dir={state}", "--poll-interval=600", mnt], check=True)
    # The daemon: of the processes started with this state dir (its crash guard is one), the one with threads.
    def started_here(pid):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                return f"--state-dir={state}".encode() in f.read().split(b"\0")
        except OSError:  # another process, gone while the list was read
            return False

    pids = [int(p) for p in os.listdir("/proc") if p.isdigit() and started_here(p)]
    daemon = max(pids, key=lambda p: len(os.listdir(f"/proc/{p}/task")))

    def calls():
        out = subprocess.run([smi, f"--sim={state}", "-f", "gpu", "sim", "calls"], capture_output=True, text=True,
                             check=True).stdout
        return sum(int(line.split()[1]) for line in out.splitlines())

    def read(*parts):
        with open(os.path.join(mnt, *parts)) as f:
            return f.read()

    try:
        job = ("gpu0", "mig", "1g.18gb")
        os.mkdir(os.path.join(mnt, *job, "one"))
        os.mkdir(os.path.join(mnt, *job, "many"))
        # The poller passes once in 10 minutes (--poll-interval): what is counted is the reads' calls.
        c0 = calls()
        read(*job, "one", "utilization")
        one = calls() - c0
        c0 = calls()
        readers = [threading.Thread(target=read, args=(*job, "many", "utilization")) for _ in range(100)]
        for t in readers:
            t.start()
        for t in readers:
            t.join()
        many = calls() - c0
        print(f"usage-bench: driver calls of the first read of a job, 1 reader {one}, 100 readers {many}: "
              f"{many / one:.2f}x (goal: at most 1.2x)")

        def scrape_time():
            times = []
            for _ in range(scrapes):
                time.sleep(WINDOW_S)  # each scrape samples every job, as a real one (every 15 s) does
                t0 = time.monotonic()
                read("metrics")
                times.append(time.monotonic() - t0)
            return statistics.median(times)

        def cpu_ms(n=CPU_SCRAPES):  # the daemon's CPU (its exited threads' too) per scrape, back to back
            def ticks():
                f = open(f"/proc/{daemon}/stat").read().rsplit(")", 1)[1].split()
                return int(f[11]) + int(f[12])
            t0 = ticks()
            for _ in range(n):
                read("metrics")
            return (ticks() - t0) * 1000 / os.sysconf("SC_CLK_TCK") / n

        os.rmdir(os.path.join(mnt, *job, "one"))
        os.rmdir(os.path.join(mnt, *job, "many"))
        none = scrape_time()
        none_cpu = cpu_ms()
        n = 0
        for g in range(15):
            for i in range(7):
                if n < 100:
                    os.mkdir(os.path.join(mnt, f"gpu{g}", "mig", "1g.18gb", f"j{n}"))
                    n += 1
        read("metrics")  # the first scrape of a job takes its first sample only
        full = scrape_time()
        text = read("metrics")
        times = []
        for _ in range(scrapes):  # back to back: within a window, nothing is asked for again
            t0 = time.monotonic()
            read("metrics")
            times.append(time.monotonic() - t0)
        cached = statistics.median(times)
        full_cpu = cpu_ms()
        print(f"usage-bench: a metrics scrape of {n} jobs within a window (no reading wanted) {cached * 1000:.2f} ms: "
              f"the scrape's own cost is the text ({len(text)} bytes), the sampler's runs after it")
        print(f"usage-bench: a metrics scrape, no job {none * 1000:.2f} ms, {n} jobs {full * 1000:.2f} ms: "
              f"{full / none:.2f}x (goal: at most 2x); {text.count('accelfs_job_sm_active_ratio{')} jobs sampled")
        print(f"usage-bench: the daemon's CPU per scrape ({CPU_SCRAPES} back to back), no job {none_cpu:.2f} ms, "
              f"{n} jobs {full_cpu:.2f} ms: {full_cpu / none_cpu:.2f}x")
    finally:
        # fusermount3 comes with the fuse3 package, which a machine with libfuse3 alone lacks.
        if shutil.which("fusermount3"):
            subprocess.run(["fusermount3", "-u", mnt], check=False)
        else:
            subprocess.run(["umount", mnt], check=False)


if __name__ == "__main__":
    main()
