# SPDX-License-Identifier: MIT
"""A simulated accelfs node under a one-node Slurm: the daemon (the integration harness's Node), the
cluster (cluster.py) with the SPANK plugin and job_submit.lua installed, and accelfs-slurm-sync.

Paths come from the environment meson sets: ACCELFS, ACCEL_SMI, ACCELFS_SPANK, ACCELFS_SLURM_SYNC,
ACCELFS_JOB_SUBMIT_LUA.
"""
import os
import shutil
import signal
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))

import accounting  # noqa: E402
import sanitizer  # noqa: E402
from cluster import Cluster, wait_until  # noqa: E402
from harness import Node  # noqa: E402

SPANK = os.environ.get("ACCELFS_SPANK", "accelfs_spank.so")
SYNC = os.environ.get("ACCELFS_SLURM_SYNC", "accelfs-slurm-sync")
JOB_SUBMIT = os.environ.get("ACCELFS_JOB_SUBMIT_LUA", os.path.join(HERE, "..", "..", "slurm", "job_submit.lua"))
TOPOLOGY = os.path.join(HERE, "topology.json")
SYNC_INTERVAL = 0.2


class AccelCluster:
    def __init__(self):
        self.node = Node(TOPOLOGY, poll=0.2, grace=1.0)
        self.cluster = None
        self.sync = None
        # Why sacct cannot answer here (slurmdbd or MariaDB not installed), None when it can.
        self.no_accounting = accounting.missing()
        # The daemon's sanitizer reports already seen (its files in its state directory, harness.py),
        # and what all of them said at the end (cleanup).
        self.node_seen = set()
        self.final_reports = ""

    def start(self):
        self.node.start()
        capacity = {p: int(self.node.read("mig", p, "available")) for p in os.listdir(self.node.path("mig"))}
        self.capacity = dict(capacity)
        # The type no job asks for that keeps the node's total mig count constant (docs/slurm.md).
        capacity["unavailable"] = sum(self.capacity.values())
        # A FUTURE node carrying the node's full capacity: Slurm refuses at submission a job that no
        # node's *current* count could hold, and accelfs lowers counts as partitions are carved.
        # Slurm validates against this node but never schedules on it (docs/slurm.md).
        shadow = ",".join(f"mig:{p}:{n}" for p, n in sorted(capacity.items()))
        self.cluster = Cluster(capacity,
                               plugstack_lines=[f"required {SPANK} mount={self.node.mnt} " + " ".join(
                                   # The simulated drivers' /proc/devices: a task of a job that asked for
                                   # no partition is kept from their majors without asking accelfs.
                                   f"proc_devices={self.node.state}/sim/{v}/proc/devices" for v in ("thead", "nvidia"))],
                               extra_conf=["JobSubmitPlugins=lua",
                                           f"NodeName=accelfs-capacity CPUs=16 RealMemory=1000 Gres={shadow} "
                                           "State=FUTURE",
                                           "PartitionName=test Nodes=ALL Default=YES MaxTime=INFINITE State=UP"],
                               accounting=self.no_accounting is None)
        self.cluster.write_config()
        shutil.copy(JOB_SUBMIT, self.cluster.path("job_submit.lua"))
        self.cluster.start_munged()
        self.cluster.start_accounting()
        self.cluster.start_slurmctld()
        self.cluster.start_slurmd()
        self.start_sync()
        return self

    def start_sync(self):
        log = open(self.cluster.path("sync.log"), "a")
        # Ours and sanitized in a sanitized build: its reports beside the plugin's, leaks included.
        san = self.cluster.sanitizer
        self.sync = subprocess.Popen([SYNC, f"--mount={self.node.mnt}", f"--node={self.cluster.host}",
                                      f"--interval={SYNC_INTERVAL}"], stdout=log, stderr=subprocess.STDOUT,
                                     env=san.own_env(self.cluster.env) if san else self.cluster.env)
        log.close()

    def stop_sync(self):
        if self.sync and self.sync.poll() is None:
            self.sync.send_signal(signal.SIGTERM)
            try:
                self.sync.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.sync.kill()
                self.sync.wait(timeout=20)
        self.sync = None

    def cleanup(self):
        """Stop everything; final_reports then holds what the sanitizers said that no test read."""
        try:
            self.stop_sync()
        finally:
            try:
                if self.cluster:
                    self.cluster.cleanup()
            finally:
                try:
                    self.node.stop()  # a clean exit, so that the daemon's leak report is written
                finally:
                    self.final_reports = (self.cluster.last_reports if self.cluster else "") + self.node_reports()
                    self.node.cleanup()

    def node_reports(self):
        return sanitizer.new_reports(self.node.state, self.node_seen, prefix="sanitizer")

    def sanitizer_reports(self):
        """What ASan/UBSan said since the last call: of the plugin in Slurm's programs, of
        accelfs-slurm-sync and of the accelfs daemon; "" when nothing (and in a plain build)."""
        return (self.cluster.sanitizer_reports() if self.cluster else "") + self.node_reports()

    def logs(self):
        c = self.cluster
        names = ("slurmctld.log", "slurmd.log", "sync.log") + (("slurmdbd.log",) if c.accounting else ())
        return "".join(f"\n--- {name} ---\n{c.tail(name, 40)}" for name in names) + \
            f"\n--- accelfs ---\n{self.node.log()[-3000:]}"
