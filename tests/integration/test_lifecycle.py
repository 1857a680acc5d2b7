# SPDX-License-Identifier: MIT
"""Starting, refusing and restarting the daemon: one accelfs per state
directory, mountpoint checks, a plain restart after kill -9, SIGHUP for log
rotation, usage errors that change nothing, and the tools' --sim=DIR.

Each refusal is checked for its exit status, its message and for having
changed nothing (no mount, no state directory, the first daemon's jobs).
"""
import contextlib
import errno
import glob
import io
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import ACCELFS, ACCEL_SMI, THEAD, exited, Node, NodeTestCase, keep_failed_log, test_failed, wait_until  # noqa: E402

BARSWAP = os.environ.get("BARSWAP", "barswap")
DEV, PROFILE = THEAD["device"], THEAD["profile"]


def run(*cmd):
    return subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=60)


def accelfs(*args):
    return run(ACCELFS, *args)


def mounts_at(path):
    """The filesystem types mounted at exactly path, bottom first (from /proc/self/mountinfo)."""
    out = []
    with open("/proc/self/mountinfo") as f:
        for line in f:
            left, _, right = line.partition(" - ")
            point = left.split()[4].encode().decode("unicode_escape")
            if point == path:
                out.append(right.split()[0])
    return out


class Lifecycle(unittest.TestCase):
    maxDiff = None

    def setUp(self):
        self.node = Node()
        self.scratch = tempfile.mkdtemp(prefix="accelfs-life-")
        self.extra_mounts = []

    def tearDown(self):
        for m in self.extra_mounts:
            subprocess.run(["fusermount3", "-u", "-z", m], check=False, capture_output=True)
        failed = test_failed(self)
        try:
            self.node.stop()
        except Exception:
            pass
        reports = self.node.sanitizer_reports()
        if failed or reports:
            keep_failed_log(self, self.node)
        self.node.cleanup()
        subprocess.run(["rm", "-rf", self.scratch], check=False)
        self.assertEqual(reports, "", "the daemon's sanitizers reported errors")

    def path(self, *parts):
        return os.path.join(self.scratch, *parts)

    def job_status(self, job):
        return self.node.keyvals(DEV, "mig", PROFILE, job, "status")

    def assert_refused(self, res, status, *texts):
        self.assertEqual(res.returncode, status, f"stdout: {res.stdout}\nstderr: {res.stderr}")
        for t in texts:
            self.assertIn(t, res.stderr)

    # -- one daemon per state directory ---------------------------------------
    def test_second_daemon_on_the_same_state_dir_is_refused_with_the_holders_pid(self):
        self.node.start()
        self.node.mkdir(DEV, "mig", PROFILE, "job1")
        before = self.job_status("job1")
        pid = self.node.pid()
        mnt = os.path.realpath(self.node.mnt)
        other = self.path("mnt2")
        os.mkdir(other)
        self.extra_mounts.append(other)
        for target in (other, self.node.mnt):
            with self.subTest(mountpoint=target):
                res = accelfs("--sim", f"--state-dir={self.node.state}", "--orphan-grace=1",
                              "--poll-interval=0.2", target)
                self.assert_refused(res, 1, f"state directory {os.path.realpath(self.node.state)} is in use "
                                    f"by accelfs pid {pid} (mounted on {mnt})", "--state-dir")
        self.assertEqual(mounts_at(os.path.realpath(other)), [], "the refused daemon mounted")
        self.assertEqual(mounts_at(mnt), ["fuse.accelfs"])
        with open(os.path.join(self.node.state, "accelfs.lock")) as f:
            self.assertEqual(f.read().split("\n")[:2], [str(pid), mnt])
        # The job carved through the first daemon is still its job: not reclaimed as an orphan
        # (wait past --orphan-grace and several polls), same instance, same UUID.
        time.sleep(2.5)
        self.assertFalse(exited(pid), "the first daemon died")
        self.assertEqual(self.job_status("job1"), before)
        self.assertIn("job=job1", self.node.read(DEV, "mig", "instances"))
        self.assertIn(before["uuid"], self.node.smi("ppu", "-L").stdout)

    def test_the_lock_is_let_go_on_a_clean_stop(self):
        self.node.start()
        self.node.stop()
        self.node.start()  # the harness fails the test on a refusal
        self.assertTrue(os.path.ismount(self.node.mnt))

    # -- the mountpoint -------------------------------------------------------
    def test_mountpoint_that_is_a_regular_file_is_a_usage_error(self):
        target = self.path("file")
        with open(target, "w") as f:
            f.write("not a directory\n")
        state = self.path("state")
        res = accelfs("--sim", f"--state-dir={state}", target)
        self.assert_refused(res, 2, f"the mountpoint {target} is not a directory")
        self.assertFalse(os.path.exists(state), "a refused start created its state directory")
        self.assertEqual(mounts_at(target), [])
        with open(target) as f:
            self.assertEqual(f.read(), "not a directory\n")

    def test_missing_mountpoint_is_a_usage_error(self):
        target = self.path("nowhere")
        state = self.path("state")
        res = accelfs("--sim", f"--state-dir={state}", target)
        self.assert_refused(res, 2, f"the mountpoint {target} does not exist", "mkdir -p")
        self.assertFalse(os.path.exists(state))
        self.assertFalse(os.path.exists(target))

    def test_a_running_accelfs_on_the_mountpoint_is_refused(self):
        self.node.start()
        self.node.mkdir(DEV, "mig", PROFILE, "job1")
        state = self.path("other-state")
        res = accelfs("--sim", f"--state-dir={state}", self.node.mnt)
        mnt = os.path.realpath(self.node.mnt)
        self.assert_refused(res, 1, f"{mnt} is already mounted by a running accelfs", f"umount {mnt}")
        self.assertFalse(os.path.exists(state), "a refused start created its state directory")
        self.assertEqual(mounts_at(mnt), ["fuse.accelfs"], "mounted twice")
        self.assertEqual(self.job_status("job1")["state"], "ready")

    # -- taking over from a dead holder (fs/takeover.c) -----------------------
    def dead_holder(self, lock_path, record, linger, dead=True):
        """A process holding lock_path's lock, with record (PID for its pid) written in it, that /proc
        calls dead (its main thread gone, one thread still in it) for linger seconds, then is gone:
        what a daemon killed while one of its threads waits in the kernel looks like.  With dead=False
        it stays alive until then, as a daemon does between its unmount and its exit."""
        sys_exit = {"x86_64": 60, "aarch64": 93}.get(os.uname().machine)
        if sys_exit is None:
            self.skipTest(f"no thread-exit syscall number known for {os.uname().machine}")
        code = ("import ctypes, fcntl, os, sys, threading, time\n"
                "fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o644)\n"
                "fcntl.flock(fd, fcntl.LOCK_EX)\n"
                "os.ftruncate(fd, 0)\n"
                "os.pwrite(fd, sys.argv[2].replace('PID', str(os.getpid())).encode(), 0)\n"
                "threading.Thread(target=time.sleep, args=(float(sys.argv[3]),)).start()\n"
                "print('ready', flush=True)\n"
                + (f"ctypes.CDLL(None).syscall({sys_exit}, 0)  # exit(2): this thread only\n" if dead else ""))
        p = subprocess.Popen([sys.executable, "-c", code, lock_path, record, str(linger)],
                             stdout=subprocess.PIPE, text=True)
        self.addCleanup(p.wait)
        self.addCleanup(p.kill)
        self.assertEqual(p.stdout.readline(), "ready\n")

        def leader_exited():
            with open(f"/proc/{p.pid}/stat") as f:
                return f.read().rpartition(")")[2].split()[0] == "Z"
        if dead:
            wait_until(leader_exited, what="the holder's main thread to exit")
        return p.pid

    def test_a_takeover_aborts_only_the_dead_holders_own_connection(self):
        """A connection's number is the device number of its superblock: once the dead holder's
        mount is gone (umount -l), the kernel gives it to the next FUSE mount, here another daemon's.
        A takeover reading that number in the lock must leave that mount alone, whether the record
        names which connection it was (its fusectl directory's inode, as accelfs writes now) or not
        (the three lines an older accelfs wrote, believed only where its mountpoint stands on it)."""
        b = self.node.start()
        conn = os.minor(os.stat(b.mnt).st_dev)
        conn_id = os.stat(f"/sys/fs/fuse/connections/{conn}").st_ino
        with open(os.path.join(b.state, "accelfs.lock")) as f:
            self.assertEqual(f.read().split("\n")[:4],
                             [str(b.pid()), os.path.realpath(b.mnt), str(conn), str(conn_id)],
                             "the lock names the connection and which one it is")
        for name, record in (("recorded id", f"PID\n{{mnt}}\n{conn}\n{conn_id + 1}\n"),
                             ("older record", f"PID\n{{mnt}}\n{conn}\n")):
            with self.subTest(name):
                a = Node()
                self.addCleanup(a.cleanup)
                holder = self.dead_holder(os.path.join(a.state, "accelfs.lock"),
                                          record.format(mnt=os.path.realpath(a.mnt)), 1.5)
                a.start()
                log = a.log()
                self.assertIn(f"accelfs pid {holder}, which served {os.path.realpath(a.mnt)}", log)
                self.assertIn(f"FUSE connection {conn} is no longer the one accelfs pid {holder} had", log)
                self.assertNotIn("aborted the FUSE connection", log)
                # The other daemon's mount still answers, and still stands on its connection.
                self.assertIn(DEV, os.listdir(b.mnt))
                self.assertTrue(b.read("node.json"))
                self.assertTrue(os.path.exists(f"/sys/fs/fuse/connections/{conn}"))
                a.stop()

    def test_a_start_right_after_an_unmount_waits_for_the_old_daemon(self):
        """umount returns before the daemon behind the mount has exited and let go of the state
        lock: `umount /accel; accelfs ...` (scripts/try run a second time does just that) starts once
        the old daemon is gone, instead of being refused for a daemon that is stopping.  The old
        daemon is played by a live process holding the lock whose recorded connection is gone."""
        b = self.node.start()  # a connection that was there, and one that is not (its id is not b's)
        conn = os.minor(os.stat(b.mnt).st_dev)
        conn_id = os.stat(f"/sys/fs/fuse/connections/{conn}").st_ino
        a = Node()
        self.addCleanup(a.cleanup)
        holder = self.dead_holder(os.path.join(a.state, "accelfs.lock"),
                                  f"PID\n{os.path.realpath(a.mnt)}\n{conn}\n{conn_id + 1}\n", 1.0, dead=False)
        a.start()  # refused before: "in use by accelfs pid ..."
        self.assertRegex(a.log(), rf" notice: accelfs pid {holder}, which served {re.escape(os.path.realpath(a.mnt))} from "
                                  r"\S+, had unmounted it and was stopping: waited \d+ ms for it to let go")
        self.assertIn(DEV, os.listdir(b.mnt))  # the other daemon's connection was not touched
        a.stop()

    def test_kill9_then_a_plain_restart(self):
        self.node.start()
        self.node.mkdir(DEV, "mig", PROFILE, "job1")
        before = self.job_status("job1")
        pid = self.node.pid()
        os.kill(pid, signal.SIGKILL)
        wait_until(lambda: exited(pid), what="accelfs to die")
        mnt = os.path.realpath(self.node.mnt)
        with self.assertRaises(OSError) as cm:
            os.statvfs(mnt)
        self.assertEqual(cm.exception.errno, errno.ENOTCONN)
        # No fusermount3 here: the restart itself clears the dead mount.
        self.node.start()
        self.assertEqual(mounts_at(mnt), ["fuse.accelfs"], "the dead mount is still under the new one")
        self.assertNotEqual(self.node.pid(), pid)
        self.assertEqual(self.job_status("job1"), before)
        self.assertIn(f"{mnt} was still mounted by an accelfs that is gone", self.node.log())
        self.assertIn("detached it", self.node.log())

    # -- SIGHUP ------------------------------------------------------------------
    def test_sighup_reopens_the_log_and_nothing_else(self):
        self.node.start()
        pid = self.node.pid()
        self.node.mkdir(DEV, "mig", PROFILE, "job1")
        self.node.mkdir(DEV, "mig", PROFILE, "job2")  # the profile is full now
        log = os.path.join(self.node.state, "accelfs.log")
        rotated = log + ".1"
        os.rename(log, rotated)
        os.kill(pid, signal.SIGHUP)
        time.sleep(0.3)
        self.assertTrue(os.path.ismount(self.node.mnt), "SIGHUP ended the mount")
        self.assertFalse(exited(pid), "SIGHUP ended the daemon")
        # A failing mkdir is a log line; the reopened file gets it, the rotated one does not.
        self.assertEqual(self.node.errno_of(self.node.mkdir, DEV, "mig", PROFILE, "job3"), errno.ENOSPC)

        def new_log_has_it():
            try:
                with open(log) as f:
                    return "job3" in f.read()
            except FileNotFoundError:
                return False
        wait_until(new_log_has_it, timeout=5, what="the reopened log to get the mkdir's line")
        with open(rotated) as f:
            old = f.read()
        self.assertNotIn("job3", old)
        self.assertIn("carved job job2", old)
        # Still serving, and a second SIGHUP is as harmless.
        os.kill(pid, signal.SIGHUP)
        time.sleep(0.2)
        self.assertEqual(self.job_status("job1")["state"], "ready")
        self.assertEqual(self.node.pid(), pid)

    # -- usage errors --------------------------------------------------------------
    def test_usage_errors_exit_2_and_change_nothing(self):
        mnt = self.path("mnt")
        os.mkdir(mnt)
        cases = {
            "unknown option": (["--bogus", mnt], "unknown option --bogus"),
            "unknown short option": (["-x", mnt], "unknown option -x"),
            "bad poll interval": (["--poll-interval=soon", mnt], "--poll-interval=soon"),
            "bad orphan grace": (["--orphan-grace=-1", mnt], "--orphan-grace=-1"),
            "bad busy retries": (["--busy-retries=0", mnt], "--busy-retries=0"),
            "bad foreign": (["--foreign=never", mnt], "--foreign=never: expected keep or reclaim"),
            "bad -o option": (["-o", "no_such_fuse_option", mnt], "-o"),
            "missing topology": ([f"--sim={self.path('none.json')}", mnt], "cannot read the topology"),
            "missing mountpoint": ([], "no mountpoint given"),
            "two mountpoints": ([mnt, mnt], "more than one mountpoint"),
        }
        for name, (args, text) in cases.items():
            with self.subTest(name):
                state = self.path("state-" + name.replace(" ", "-"))
                sim = [] if any(a.startswith("--sim") for a in args) else ["--sim"]
                res = accelfs(*sim, f"--state-dir={state}", *args)
                self.assert_refused(res, 2, text, "usage:")
                self.assertFalse(os.path.exists(state), "a usage error created the state directory")
                self.assertEqual(mounts_at(mnt), [])
                self.assertEqual(os.listdir(mnt), [])

    def test_help_goes_to_stdout_and_exits_0(self):
        res = accelfs("--help")
        self.assertEqual(res.returncode, 0, res.stderr)
        self.assertIn("usage:", res.stdout)
        self.assertIn("one accelfs per state directory", res.stdout)

    # -- the tools' --sim=DIR ------------------------------------------------------
    def test_tools_refuse_a_sim_dir_that_does_not_exist(self):
        missing = self.path("no-such-state")
        for name, cmd in (("accel-smi", [ACCEL_SMI, f"--sim={missing}", "-f", "ppu", "-L"]),
                          ("barswap", [BARSWAP, f"--sim={missing}", "query"])):
            with self.subTest(name):
                res = run(*cmd)
                self.assert_refused(res, 2, f"state directory {missing} does not exist", "--sim-create",
                                    "accelfs --sim")
                self.assertFalse(os.path.exists(missing), f"{name} created {missing}")
        # Asked for explicitly, a fresh node is made.
        res = run(BARSWAP, f"--sim={missing}", "--sim-create", "query")
        self.assertEqual(res.returncode, 0, res.stderr)
        self.assertTrue(os.path.isdir(os.path.join(missing, "sim", "barswap")))
        res = run(ACCEL_SMI, f"--sim={missing}", "--sim-create", "-f", "ppu", "-L")
        self.assertEqual(res.returncode, 0, res.stderr)



class AFailedTest(unittest.TestCase):
    """A test that failed keeps its daemon's log: the state directory it lives in is removed with
    the test, and a daemon that went away says why only there (issue 31: a k8s test lost its
    daemon once, and its cleanup had deleted the log)."""

    class Carves(NodeTestCase):
        outcome = "fail"

        def test_it(self):
            self.node.mkdir(DEV, "mig", PROFILE, "kept")
            if self.outcome == "fail":
                self.fail("on purpose")
            if self.outcome == "error":
                raise OSError(errno.EIO, "on purpose")

    def run_one(self, outcome, logs):
        case = self.Carves("test_it")
        case.outcome = outcome
        result, said = unittest.TestResult(), io.StringIO()
        saved = os.environ.get("MESON_LOG_DIR")
        os.environ["MESON_LOG_DIR"] = logs
        try:
            with contextlib.redirect_stderr(said):
                case.run(result)
        finally:
            if saved is None:
                del os.environ["MESON_LOG_DIR"]
            else:
                os.environ["MESON_LOG_DIR"] = saved
        self.assertFalse(os.path.exists(case.node.state), "the state directory is removed all the same")
        return result, said.getvalue(), glob.glob(os.path.join(logs, "accelfs-*.log"))

    def test_a_failure_and_an_error_keep_the_log_and_show_its_tail(self):
        for outcome in ("fail", "error"):
            with self.subTest(outcome=outcome), tempfile.TemporaryDirectory() as logs:
                result, said, kept = self.run_one(outcome, logs)
                self.assertEqual(len(result.failures) + len(result.errors), 1)
                self.assertEqual(len(kept), 1, said)
                self.assertTrue(os.path.basename(kept[0]).endswith("AFailedTest.Carves.test_it.log"), kept)
                with open(kept[0]) as f:
                    log = f.read()
                self.assertIn("serving /", log)
                self.assertRegex(log, r"notice: unmounted .* \(umount or fusermount3 -u\)")  # after the stop
                self.assertIn(f"its daemon's log is kept in {kept[0]}; its last lines:", said)
                self.assertIn("serving /", said)

    def test_a_pass_keeps_nothing(self):
        with tempfile.TemporaryDirectory() as logs:
            result, said, kept = self.run_one("pass", logs)
            self.assertTrue(result.wasSuccessful(), result.failures + result.errors)
            self.assertEqual(kept, [])
            self.assertEqual(said, "")


if __name__ == "__main__":
    unittest.main()
