# SPDX-License-Identifier: MIT
"""A Slurm task's device confinement on this machine's real cgroups, outside Slurm (docs/slurm.md,
"Devices"): devcg_task does what the SPANK plugin's task_init_privileged does, in a cgroup laid out
as Slurm's (job_<id>/step_<s>/slurm on cgroup v2, job_<id>/step_<s> on v1), over a simulated accelfs
node, then opens device nodes.  The refusals come from the kernel: on cgroup v2 from the device
program attached to the task's cgroup, on v1 from the devices controller.

Needs root and a cgroup v2 hierarchy (here the hybrid layout's /sys/fs/cgroup/unified); skipped
without them.  DEVCG_TASK, ACCELFS and ACCEL_SMI come from meson.
"""
import os
import subprocess
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))

from harness import Node  # noqa: E402

DEVCG_TASK = os.environ.get("DEVCG_TASK", "devcg_task")
TOPOLOGY = os.path.join(HERE, "topology.json")


def mounts(fstype, option=None):
    """Mount points of that filesystem type (with that mount option, for cgroup v1)."""
    out = []
    with open("/proc/self/mounts") as f:
        for line in f:
            _, point, fs, opts = line.split()[:4]
            if fs == fstype and (option is None or option in opts.split(",")):
                out.append(point)
    return out


V2 = (mounts("cgroup2") or [None])[0]
V1_DEVICES = (mounts("cgroup", "devices") or [None])[0]


class Tree:
    """One directory of ours in a cgroup hierarchy, removed (leaves first) at the end."""

    def __init__(self, root):
        self.top = os.path.join(root, f"accelfs-devcg-test-{os.getpid()}")
        os.mkdir(self.top)

    def make(self, rel):
        path = os.path.join(self.top, rel)
        os.makedirs(path, exist_ok=True)
        return path

    def remove(self):
        for dirpath, dirnames, _ in sorted(os.walk(self.top), key=lambda w: -w[0].count("/")):
            try:
                os.rmdir(dirpath)
            except OSError:
                pass


@unittest.skipUnless(os.geteuid() == 0, "needs root (cgroups, bpf, mknod)")
class DevcgTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.node = Node(TOPOLOGY, poll=0.2, grace=1.0)
        cls.node.start()
        try:
            # Two jobs of two Slurm jobs on the H200, and their capability nodes as the mount shows them.
            for name in ("slurm-7-0", "slurm-8-0"):
                os.mkdir(cls.node.path("mig", "1g.18gb", name))
            cls.cap = {job: cls.cap_node(f"slurm-{job}-0") for job in (7, 8)}
            cls.sim_proc = [os.path.join(cls.node.state, "sim", v, "proc", "devices") for v in ("thead", "nvidia")]
        except BaseException:
            cls.node.cleanup()
            raise

    @classmethod
    def tearDownClass(cls):
        cls.node.cleanup()

    @classmethod
    def cap_node(cls, name):
        lines = cls.node.read("mig", "1g.18gb", name, "devices").splitlines()
        gi = [line.split()[0] for line in lines if "nvidia-cap" in line][0]  # the GPU instance's capability
        return cls.node.path("mig", "1g.18gb", name, "dev", gi[len("/dev/"):])

    def setUp(self):
        self.trees = []

    def tearDown(self):
        for t in self.trees:
            t.remove()

    def tree(self, root):
        t = Tree(root)
        self.trees.append(t)
        return t

    def task(self, cgroup_dir, job, *args, paths=(), mount=None, partitions=True, mode="v2"):
        """Run devcg_task in cgroup_dir (moved there before it execs, as Slurm forks a task):
        (exit status, {path: answer}, its v2 cgroup, stderr)."""
        procs = os.path.join(cgroup_dir, "cgroup.procs")
        cmd = [DEVCG_TASK, f"--job={job}", "--task=0", f"--mount={mount or self.node.mnt}", f"--cgroup={mode}",
               *[f"--proc-devices={p}" for p in self.sim_proc], *(["--partitions"] if partitions else []),
               *args, "--", *paths]

        def enter():
            with open(procs, "w") as f:
                f.write(str(os.getpid()))
        res = subprocess.run(cmd, capture_output=True, text=True, timeout=60, preexec_fn=enter)
        answers, where = {}, None
        for line in res.stdout.splitlines():
            if line.startswith("cgroup: "):
                where = line[len("cgroup: "):]
            else:
                path, _, answer = line.rpartition(" ")
                answers[path] = answer
        return res.returncode, answers, where, res.stderr

    # -- cgroup v2 ----------------------------------------------------------------------------------
    def v2_tree(self):
        if not V2:
            self.skipTest("no cgroup v2 hierarchy mounted")
        return self.tree(V2)

    def test_v2_a_job_opens_its_own_nodes_and_not_anothers(self):
        t = self.v2_tree()
        start = t.make("job_7/step_0/slurm")  # where Slurm's cgroup/v2 forks a task, beside slurmstepd
        rc, got, where, err = self.task(start, 7, paths=[self.cap[8], self.cap[7], "/dev/null"])
        self.assertEqual(rc, 0, err)
        self.assertEqual(got, {self.cap[8]: "EPERM",      # another job's node: the device program says no
                               self.cap[7]: "ENXIO",      # its own: allowed (no driver behind it here)
                               "/dev/null": "ok"})
        # The task went to its own cgroup below the step first, as Slurm's cgroup/v2 lays it out.
        self.assertTrue(where.endswith(f"/{os.path.basename(t.top)}/job_7/step_0/user/task_0"), where)
        with open(os.path.join(start, "cgroup.procs")) as f:
            self.assertEqual(f.read(), "")

    def test_v2_a_task_that_starts_in_task_special_moves_to_its_own(self):
        # Slurm's cgroup/v2 parks a step's processes that are not yet a task in user/task_special and
        # removes it once they have moved on: a program attached there would be lost with it (found by
        # the guest's real slurmstepd, tests/slurm/guest.d/80-slurm-v2.sh).
        t = self.v2_tree()
        start = t.make("job_7/step_0/user/task_special")
        rc, got, where, err = self.task(start, 7, paths=[self.cap[8], self.cap[7]])
        self.assertEqual(rc, 0, err)
        self.assertEqual(got, {self.cap[8]: "EPERM", self.cap[7]: "ENXIO"})
        self.assertTrue(where.endswith("/job_7/step_0/user/task_0"), where)

    def test_v2_a_job_without_partitions_needs_no_accelfs(self):
        t = self.v2_tree()
        start = t.make("job_9/step_0/slurm")
        rc, got, _, err = self.task(start, 9, mount="/nonexistent/accelfs-is-down", partitions=False,
                                    paths=[self.cap[7], self.cap[8], "/dev/null"])
        self.assertEqual(rc, 0, err)   # the CPU-only task runs
        self.assertEqual(got, {self.cap[7]: "EPERM", self.cap[8]: "EPERM", "/dev/null": "ok"})

    def test_v2_a_job_with_partitions_fails_while_accelfs_is_down(self):
        t = self.v2_tree()
        start = t.make("job_7/step_0/slurm")
        rc, got, _, err = self.task(start, 7, mount="/nonexistent/accelfs-is-down", paths=["/dev/null"])
        self.assertEqual(rc, 1)
        self.assertIn("is accelfs mounted there?", err)

    def test_v2_keeps_the_programs_slurm_attaches(self):
        # Slurm's cgroup/v2 plugin attaches its device program to the job's and the step's cgroups
        # with BPF_F_ALLOW_OVERRIDE. The kernel climbs from a cgroup with programs only through
        # ancestors attached with BPF_F_ALLOW_MULTI, so a program of ours alone on the task's cgroup
        # would replace Slurm's: what Slurm refuses must stay refused.
        t = self.v2_tree()
        job, step = t.make("job_7"), t.make("job_7/step_0")
        start = t.make("job_7/step_0/slurm")
        rc, got, _, err = self.task(start, 7, f"--others={job}:1:3:override", f"--others={step}:1:3:override",
                                    paths=[self.cap[8], self.cap[7], "/dev/null", "/dev/zero"])
        self.assertEqual(rc, 0, err)
        self.assertEqual(got, {self.cap[8]: "EPERM", self.cap[7]: "ENXIO", "/dev/null": "ok",
                               "/dev/zero": "EPERM"})  # refused by "Slurm's" program, not ours

    def test_v2_composes_with_a_program_attached_with_allow_multi(self):
        # systemd attaches with BPF_F_ALLOW_MULTI: every program on the way up must allow.
        t = self.v2_tree()
        start = t.make("job_7/step_0/slurm")
        rc, got, _, err = self.task(start, 7, f"--others={t.top}:1:3:multi", paths=[self.cap[7], "/dev/zero"])
        self.assertEqual(rc, 0, err)
        self.assertEqual(got, {self.cap[7]: "ENXIO", "/dev/zero": "EPERM"})

    def test_v2_a_task_outside_its_jobs_cgroup_is_refused(self):
        t = self.v2_tree()
        start = t.make("elsewhere")
        rc, _, _, err = self.task(start, 7, paths=["/dev/null"])
        self.assertEqual(rc, 1)
        self.assertIn("not in job 7's", err)

    # -- cgroup v1 ----------------------------------------------------------------------------------
    def test_v1_still_confines(self):
        if not V1_DEVICES:
            self.skipTest("no cgroup v1 devices controller mounted")
        t = self.tree(V1_DEVICES)
        start = t.make("job_7/step_0")
        rc, got, _, err = self.task(start, 7, mode="v1", paths=[self.cap[8], self.cap[7], "/dev/null"])
        self.assertEqual(rc, 0, err)
        self.assertEqual(got, {self.cap[8]: "EPERM", self.cap[7]: "ENXIO", "/dev/null": "ok"})
        with open(os.path.join(start, "task_0", "devices.list")) as f:  # the task's own cgroup, below the step
            self.assertIn(f"c 241:{self.cap[7].split('nvidia-cap')[-1]} rwm", f.read())


if __name__ == "__main__":
    unittest.main()
