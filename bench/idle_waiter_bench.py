#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""idle-waiter-bench: what a reader waiting on node.json for ever costs an idle daemon
(docs/performance.md, "Where the daemons' 1 % went").

accelfs-dra waits in poll() on node.json on every node, and reads it again only when woken. One
daemon over eight simulated H200s with four jobs (tests/k8s/cluster/eight-h200.json, --poll-interval=2,
as test 5's nodes), its CPU ticks (utime + stime of every thread, /proc) over the same span:

1. alone, the poller at rest;
2. with one reader doing what the plugin does: read node.json, poll() for POLLPRI in 500 ms slices,
   read again when woken.

Nothing changes on the node meanwhile, so the reader must never be woken, and what the second figure
adds is the cost of waiting: the poller keeping its cadence for a waiter, and the notifier's look
every 250 ms, which renders nothing while nothing the file shows has moved.

usage: idle_waiter_bench.py ACCELFS TOPOLOGY [SECONDS]   (root; ACCELFS_SIM_LIBDIR as meson sets it)
"""
import os
import select
import shutil
import subprocess
import sys
import tempfile
import threading
import time

LINGER_S = 12  # the poller keeps its cadence 10 s after the last use (ACCEL_POLL_LINGER_MS)


def daemon_ticks(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime, stime: every thread's, in clock ticks


def waiter(path, stop, wakes):
    fd = os.open(path, os.O_RDONLY)

    def read_all():
        os.lseek(fd, 0, os.SEEK_SET)
        while os.read(fd, 1 << 20):
            pass

    read_all()
    p = select.poll()
    p.register(fd, select.POLLPRI | select.POLLERR)
    while not stop.is_set():
        if p.poll(500):
            wakes[0] += 1
            read_all()
    os.close(fd)


def main():
    accelfs, topology = sys.argv[1], sys.argv[2]
    seconds = float(sys.argv[3]) if len(sys.argv) > 3 else 30
    state = tempfile.mkdtemp(prefix="idle-waiter-state-")
    mnt = tempfile.mkdtemp(prefix="idle-waiter-mnt-")
    subprocess.run([accelfs, f"--sim={topology}", f"--state-dir={state}", f"--cdi-dir={state}/cdi",
                    "--poll-interval=2", mnt], check=True)
    try:
        with open(os.path.join(state, "accelfs.pid")) as f:
            pid = int(f.read())
        for i in range(4):
            os.mkdir(os.path.join(mnt, f"gpu{i}", "mig", "1g.18gb", f"job{i}"))
        time.sleep(LINGER_S)
        t0 = daemon_ticks(pid)
        time.sleep(seconds)
        alone = daemon_ticks(pid) - t0
        stop, wakes = threading.Event(), [0]
        reader = threading.Thread(target=waiter, args=(os.path.join(mnt, "node.json"), stop, wakes))
        reader.start()
        time.sleep(LINGER_S)  # its first read's readings published, and looked at
        woken = wakes[0]
        t0 = daemon_ticks(pid)
        time.sleep(seconds)
        waiting = daemon_ticks(pid) - t0
        woken = wakes[0] - woken
        stop.set()
        reader.join()
        print(f"the idle daemon, {seconds:.0f} s: alone {alone} ticks; with a reader waiting on node.json "
              f"{waiting} ticks, the reader woken {woken} times (must be 0)")
        return 0 if woken == 0 else 1
    finally:
        subprocess.run(["umount", mnt], check=False)
        os.rmdir(mnt)
        shutil.rmtree(state, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
