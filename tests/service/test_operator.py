# SPDX-License-Identifier: MIT
"""What an operator meets in the first hour (issue 26), each as the daemon really answers it: the refusals
of users' commands counted in /accel/metrics and logged at notice, who carved and removed a job, the
levels ACCELFS_LOG takes (and the one it refuses), both spellings of every option that takes a value, and
a node with no driver library saying where it looked."""
import errno
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
from harness import ACCELFS, ACCEL_SMI, NodeTestCase, exited, wait_until  # noqa: E402
from service_checks import metrics_of  # noqa: E402

PROF = ("ppu3", "mig", "4g.48gb")
CID = "3f2a9c1e0b4d" + "5e6f" * 13


def grew(before, after, name, *labels):
    return after.get((name, tuple(labels)), 0) - before.get((name, tuple(labels)), 0)


class Refusals(NodeTestCase):
    """A refused mkdir or rmdir counts under its reason wherever it is refused (core or fs/), and is a notice."""

    def test_every_name_the_daemon_refuses_counts_as_invalid_name(self):
        n = self.node
        before = metrics_of(n)
        refused = {"job-": errno.EINVAL, "-job": errno.EINVAL, "a.b-": errno.EINVAL, "x" * 64: errno.ENAMETOOLONG,
                   "y" * 255: errno.ENAMETOOLONG}
        for name, want in refused.items():
            with self.subTest(name=name[:8]):
                self.assertErrno(want, os.mkdir, n.path(*PROF, name))
        self.assertErrno(errno.EINVAL, os.mkdir, n.path(*PROF, "placements", "3"))  # not a legal start
        after = metrics_of(n)
        self.assertEqual(grew(before, after, "accelfs_carve_failures_total", ("reason", "invalid_name")),
                         len(refused) + 1)
        self.assertEqual(grew(before, after, "accelfs_carves_total"), 0)
        log = n.log()
        self.assertRegex(log, r"(?m) notice: ppu3/4g\.48gb: mkdir job-: job name 'job-' is not valid")
        self.assertRegex(log, r"(?m) notice: ppu3/4g\.48gb: mkdir placements/3: ")
        self.assertNotRegex(log, r"(?m) error: ", "a user's bad name is not an error of the node")

    def test_a_name_the_kernel_refuses_never_reaches_the_daemon(self):
        # Over NAME_MAX (255 bytes) the kernel answers ENAMETOOLONG itself: nothing to count or log.
        n = self.node
        before = metrics_of(n)
        self.assertErrno(errno.ENAMETOOLONG, os.mkdir, n.path(*PROF, "z" * 256))
        after = metrics_of(n)
        self.assertEqual(grew(before, after, "accelfs_carve_failures_total", ("reason", "invalid_name")), 0)
        self.assertNotIn("z" * 64, n.log())

    def test_ordinary_outcomes_are_notices_and_say_who(self):
        n = self.node
        n.mkdir("ppu3", "mig", "8g.96gb", "big")
        self.assertErrno(errno.ENOSPC, os.mkdir, n.path("ppu3", "mig", "8g.96gb", "more"))
        self.assertErrno(errno.EEXIST, os.mkdir, n.path("ppu4", "mig", "8g.96gb", "big"))
        os.rmdir(n.path("ppu3", "mig", "8g.96gb", "big"))
        log = n.log()
        self.assertRegex(log, r"(?m) notice: ppu3/8g\.96gb: mkdir more: no free placement")
        self.assertRegex(log, r"(?m) notice: ppu4/8g\.96gb: mkdir big: a job named 'big' already exists")
        self.assertRegex(log, r"(?m) info: ppu3/8g\.96gb: carved job big for uid 0 gid 0: ")
        self.assertRegex(log, r"(?m) info: ppu3/8g\.96gb: job big removed by uid 0 \(pid \d+\)")
        self.assertNotRegex(log, r"(?m) (error|warning): ")

    def test_an_rmdir_refused_for_a_container_counts_as_busy(self):
        n = self.node
        n.mkdir(*PROF, "job1")
        holder = subprocess.Popen(["sleep", "1000"])
        try:
            with open(n.path(*PROF, "job1", "containers"), "w") as f:
                f.write(f"attach {CID} {holder.pid}\n")
            before = metrics_of(n)
            self.assertErrno(errno.EBUSY, os.rmdir, n.path(*PROF, "job1"))
            after = metrics_of(n)
            self.assertEqual(grew(before, after, "accelfs_reclaim_failures_total", ("reason", "busy")), 1)
            self.assertEqual(grew(before, after, "accelfs_reclaims_total"), 0)
            self.assertRegex(n.log(), r"(?m) notice: ppu3/4g\.48gb: rmdir job1 refused: ")
        finally:
            holder.kill()
            holder.wait()


class Daemon(unittest.TestCase):
    """accelfs run by hand, with fresh directories; every mount is undone."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="accelfs-operator-")
        self.state = os.path.join(self.tmp, "state")
        self.mnt = os.path.join(self.tmp, "mnt")
        os.mkdir(self.mnt)

    def tearDown(self):
        # Its pid before the unmount: the daemon removes its pid file as it exits, which can be before
        # a look after the unmount reads it (seen under load: found, then gone when opened).
        pid = None
        try:
            with open(os.path.join(self.state, "accelfs.pid")) as f:
                pid = int(f.read())
        except (FileNotFoundError, ValueError):
            pass  # never started, or refused before it wrote one
        subprocess.run(["fusermount3", "-u", self.mnt], check=False, stderr=subprocess.DEVNULL)
        if pid:
            wait_until(lambda: exited(pid), timeout=60, what="accelfs to exit")
        shutil.rmtree(self.tmp, ignore_errors=True)

    def run_daemon(self, *args, env=None):
        return subprocess.run([ACCELFS, *args], capture_output=True, text=True, timeout=120,
                              env=dict(os.environ, **(env or {})))

    def log(self):
        with open(os.path.join(self.state, "accelfs.log")) as f:
            return f.read()

    def test_values_may_follow_their_option_as_getopt_long_takes_them(self):
        cdi = os.path.join(self.tmp, "cdi")
        res = self.run_daemon("--sim", "--state-dir", self.state, "--poll-interval", "5", "--cdi-dir", cdi,
                              "--orphan-grace", "7", self.mnt)
        self.assertEqual(res.returncode, 0, res.stderr)
        self.assertTrue(os.path.isdir(os.path.join(self.mnt, "ppu3")))
        self.assertTrue(os.path.exists(os.path.join(self.state, "accelfs.pid")), "--state-dir DIR was the state")
        os.mkdir(os.path.join(self.mnt, *PROF, "job1"))
        self.assertTrue(any(f.endswith("-job1.json") for f in os.listdir(cdi)), "--cdi-dir DIR was the CDI directory")
        os.rmdir(os.path.join(self.mnt, *PROF, "job1"))

    def test_an_option_missing_its_value_is_a_usage_error(self):
        res = self.run_daemon("--sim", self.mnt, "--state-dir")
        self.assertEqual(res.returncode, 2)
        self.assertIn("--state-dir needs a value", res.stderr)
        self.assertFalse(os.path.exists(self.state))

    def test_help_gives_the_cdi_directory_of_a_simulated_node(self):
        text = self.run_daemon("--help").stdout
        self.assertRegex(text, r"--cdi-dir=DIR .*\(default /var/run/cdi;\s+with --sim, STATE_DIR/cdi\)")
        res = self.run_daemon("--sim", f"--state-dir={self.state}", self.mnt)
        self.assertEqual(res.returncode, 0, res.stderr)
        os.mkdir(os.path.join(self.mnt, *PROF, "job1"))
        self.assertTrue(any(f.endswith("-job1.json") for f in os.listdir(os.path.join(self.state, "cdi"))))
        os.rmdir(os.path.join(self.mnt, *PROF, "job1"))

    def test_a_level_accelfs_log_does_not_know_is_refused(self):
        res = self.run_daemon("--sim", f"--state-dir={self.state}", self.mnt, env={"ACCELFS_LOG": "bogus"})
        self.assertEqual(res.returncode, 2)
        self.assertIn("ACCELFS_LOG=bogus is not a level: give error, warning, notice, info or debug", res.stderr)
        self.assertFalse(os.path.exists(self.state), "refused before anything was made")

    def test_debug_shows_the_driver_calls_of_a_carve_and_notice_hides_info(self):
        res = self.run_daemon("--sim", f"--state-dir={self.state}", self.mnt, env={"ACCELFS_LOG": "DEBUG"})
        self.assertEqual(res.returncode, 0, res.stderr)
        os.mkdir(os.path.join(self.mnt, *PROF, "job1"))
        log = self.log()
        self.assertRegex(log, r"(?m) debug: ppu3/4g\.48gb: creating a GPU instance of profile 5 at placement 0:4")
        self.assertRegex(log, r"(?m) debug: ppu3/4g\.48gb: GPU instance \d+ made; creating its compute instance")
        os.rmdir(os.path.join(self.mnt, *PROF, "job1"))
        with open(os.path.join(self.state, "accelfs.pid")) as f:
            pid = int(f.read())
        subprocess.run(["fusermount3", "-u", self.mnt], check=True)
        wait_until(lambda: exited(pid), timeout=60, what="accelfs to exit")
        os.unlink(os.path.join(self.state, "accelfs.log"))
        res = self.run_daemon("--sim", f"--state-dir={self.state}", self.mnt, env={"ACCELFS_LOG": "notice"})
        self.assertEqual(res.returncode, 0, res.stderr)
        with self.assertRaises(OSError):
            os.mkdir(os.path.join(self.mnt, *PROF, "job-"))
        log = self.log()
        self.assertRegex(log, r"(?m) notice: ppu3/4g\.48gb: mkdir job-: ")
        self.assertNotRegex(log, r"(?m) (info|debug): ")

    def test_no_driver_library_says_where_it_looked(self):
        sdk = os.path.join(self.tmp, "sdk")
        env = {"PPU_HOME": sdk, "LD_LIBRARY_PATH": "", "ACCELFS_SIM_LIBDIR": ""}
        probe = subprocess.run([sys.executable, "-c", "import ctypes; ctypes.CDLL('libnvidia-ml.so.1')"],
                               env=dict(os.environ, **env), capture_output=True)
        if probe.returncode == 0:
            self.skipTest("this machine has an NVIDIA driver on the loader's path")
        proc = subprocess.Popen([ACCELFS, "-f", f"--state-dir={self.state}", f"--cdi-dir={self.tmp}/cdi",
                                 f"--log={self.tmp}/log", self.mnt], env=dict(os.environ, **env),
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            wait_until(lambda: os.path.exists(os.path.join(self.mnt, "node.json")), timeout=60, what="the mount")
            with open(os.path.join(self.tmp, "log")) as f:
                log = f.read()
        finally:
            subprocess.run(["fusermount3", "-u", self.mnt], check=False)
            proc.wait(timeout=60)
        self.assertIn(f"no hgml library found (looked for {sdk}/lib64/libhgml.so, {sdk}/lib/libhgml.so, "
                      "libhgml.so on the loader's path)", log)
        self.assertIn("no nvml library found (looked for libnvidia-ml.so.1 on the loader's path)", log)
        self.assertRegex(log, r"(?m) warning: no driver library was found for any family: ")
        res = subprocess.run([ACCEL_SMI, "-L"], capture_output=True, text=True, timeout=60,
                             env=dict(os.environ, **env))
        self.assertNotEqual(res.returncode, 0)
        self.assertIn(f"looked for {sdk}/lib64/libhgml.so", res.stderr)


if __name__ == "__main__":
    unittest.main(verbosity=2)
