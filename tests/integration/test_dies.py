# SPDX-License-Identifier: MIT
"""dies/ on the simulated node: every rule of docs/dies.md's "dies/<n>/vram",
quarantine through dies/<n>/enabled, and the barswap CLI sharing the slot.

Openers run in child processes (the slot is shared between processes), each
a small Python program that opens a vram file through libc (so the errno is
the syscall's own, never retried by Python), says what happened on stdout,
and holds the file until its stdin is closed.
"""
import errno
import os
import random
import shutil
import signal
import subprocess
import sys
import time
import unittest

from harness import ACCELFS, Node, NodeTestCase, daemon_under_valgrind, start_daemon, wait_until

BARSWAP = os.environ.get("BARSWAP", "barswap")
DIES_CHECK = os.environ.get("DIES_CHECK", "dies-check")
MIB = 1024 * 1024
VRAM = 64 * MIB  # the built-in topology's dies

OPENER = r"""
import ctypes, os, signal, sys, time
path, mode = sys.argv[1], sys.argv[2]
libc = ctypes.CDLL(None, use_errno=True)
signal.signal(signal.SIGUSR1, lambda s, f: None)
flags = os.O_RDWR | (os.O_NONBLOCK if "n" in mode else 0)
print("OPENING", flush=True)
fd = libc.open(path.encode(), flags)
if fd < 0:
    print("ERR", ctypes.get_errno(), flush=True)
    sys.exit(0)
print("GOT", time.monotonic(), flush=True)
if "r" in mode:
    print("READ", os.pread(fd, 16, 0).hex(), flush=True)
sys.stdin.read()
os.close(fd)
print("CLOSED", flush=True)
"""


class Opener:
    """A process that opens a vram file and holds it until released."""

    def __init__(self, path, mode=""):
        self.p = subprocess.Popen([sys.executable, "-c", OPENER, path, mode], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, text=True)
        assert self.line() == "OPENING"

    def line(self, timeout=10.0):
        # readline blocks; the tests bound every wait with the slot's own state first
        return self.p.stdout.readline().strip()

    def result(self):
        """('GOT', t) or ('ERR', errno)."""
        words = self.line().split()
        if not words:
            raise AssertionError(f"opener {self.p.pid} said nothing (exit {self.p.poll()})")
        return words[0], float(words[1]) if words[0] == "GOT" else int(words[1])

    def release(self):
        self.p.stdin.close()
        out = self.p.stdout.read()
        self.p.stdout.close()
        self.p.wait(timeout=10)
        return out

    def kill(self, sig=signal.SIGKILL):
        self.p.send_signal(sig)

    def reap(self):
        for f in (self.p.stdin, self.p.stdout):
            try:
                f.close()
            except (BrokenPipeError, ValueError):
                pass
        self.p.kill()
        self.p.wait(timeout=10)


class DiesTestCase(NodeTestCase):
    def setUp(self):
        super().setUp()
        self.openers = []

    def tearDown(self):
        for o in self.openers:
            o.reap()
        super().tearDown()

    def vram(self, die):
        return self.node.path("dies", str(die), "vram")

    def opener(self, die, mode=""):
        o = Opener(self.vram(die), mode)
        self.openers.append(o)
        return o

    def slot(self):
        return self.node.keyvals("dies", "slot")

    def wait_waiters(self, n):
        wait_until(lambda: self.slot()["waiters"] == str(n), what=f"{n} waiters")

    def open_errno(self, die, flags=os.O_RDWR):
        try:
            os.close(os.open(self.vram(die), flags))
        except OSError as e:
            return e.errno
        return 0


class Tree(DiesTestCase):
    def test_dies_tree_info_and_modes(self):
        n = self.node
        self.assertIn("dies", os.listdir(n.mnt))
        names = os.listdir(n.path("dies"))
        self.assertEqual(sorted(names), sorted(["slot", "lease_ms", "last_error"] + [str(i) for i in range(16)]))
        self.assertEqual(sorted(os.listdir(n.path("dies", "3"))), ["driver", "enabled", "info", "policy", "vram"])
        info = n.keyvals("dies", "3", "info")
        self.assertEqual(info["bus_id"], "sim:3")
        self.assertEqual(info["vram_bytes"], str(VRAM))
        self.assertEqual(info["enabled"], "1")
        self.assertEqual(info["active"], "0")
        self.assertEqual(n.read("dies", "3", "enabled"), "1\n")
        self.assertEqual(n.read("dies", "3", "driver"), "bar_swap\n")
        self.assertEqual(n.read("dies", "3", "policy"), "pinned\n")
        self.assertEqual(n.read("dies", "lease_ms"), "0\n")
        self.assertEqual(info["state"], "parked")
        for f in ("driver", "policy", "enabled"):
            self.assertEqual(os.stat(n.path("dies", "3", f)).st_mode & 0o7777, 0o644, f)
        self.assertEqual(os.stat(n.path("dies", "lease_ms")).st_mode & 0o7777, 0o644)
        st = os.stat(self.vram(3))
        self.assertEqual(st.st_size, VRAM)
        self.assertEqual(st.st_mode & 0o7777, 0o600)
        self.assertEqual(os.stat(n.path("dies", "3", "enabled")).st_mode & 0o7777, 0o644)
        slot = self.slot()
        for key, value in (("active", "none"), ("holders", "0"), ("waiters", "0"), ("owner", "none"),
                           ("dies", "16"), ("backend", "simulated")):
            self.assertEqual(slot[key], value, key)
        self.assertFalse(os.path.exists(n.path("dies", "16")))
        self.assertFalse(os.path.exists(n.path("dies", "03")))

    def test_what_the_tree_refuses(self):
        n = self.node
        self.assertErrno(errno.EPERM, os.mkdir, n.path("dies", "x"))
        self.assertErrno(errno.EPERM, os.mkdir, n.path("dies", "3", "x"))
        self.assertErrno(errno.EPERM, os.unlink, self.vram(3))
        self.assertErrno(errno.EPERM, os.truncate, self.vram(3), 0)
        self.assertErrno(errno.EACCES, os.open, n.path("dies", "3", "info"), os.O_WRONLY)
        self.assertErrno(errno.EACCES, os.open, n.path("dies", "slot"), os.O_WRONLY)
        self.assertErrno(errno.ENOENT, os.open, n.path("dies", "99", "vram"), os.O_RDWR)


class Data(DiesTestCase):
    def test_data_survives_other_dies_and_reads_are_large(self):
        rnd = random.Random(5)
        pattern = {d: rnd.randbytes(3 * MIB + 17) for d in (0, 1, 2)}
        for d, data in pattern.items():
            fd = os.open(self.vram(d), os.O_RDWR)
            self.assertEqual(os.pwrite(fd, data, MIB + d), len(data))
            os.close(fd)
        for d, data in pattern.items():
            fd = os.open(self.vram(d), os.O_RDONLY)
            self.assertEqual(os.pread(fd, len(data), MIB + d), data, f"die {d}")
            os.close(fd)
        # and through plain read(2) of a 4 MiB buffer (the kernel splits it into 1 MiB requests)
        with open(self.vram(1), "rb", buffering=0) as f:
            f.seek(MIB + 1)
            self.assertEqual(f.read(4 * MIB)[:len(pattern[1])], pattern[1])

    def test_reads_at_and_past_the_end(self):
        fd = os.open(self.vram(4), os.O_RDWR)
        self.assertEqual(os.pwrite(fd, b"tail", VRAM - 4), 4)
        self.assertEqual(os.pread(fd, 100, VRAM - 4), b"tail")  # short: stops at the end
        self.assertEqual(os.pread(fd, 100, VRAM), b"")
        self.assertEqual(os.pread(fd, 100, VRAM + 4096), b"")
        os.lseek(fd, VRAM - 2, os.SEEK_SET)
        self.assertEqual(os.read(fd, 10), b"il")
        self.assertEqual(os.read(fd, 10), b"")
        os.close(fd)

    def test_writes_past_the_end_are_enospc(self):
        fd = os.open(self.vram(4), os.O_RDWR)
        self.assertErrno(errno.ENOSPC, os.pwrite, fd, b"x", VRAM)
        self.assertErrno(errno.ENOSPC, os.pwrite, fd, b"x", VRAM + MIB)
        # a write across the end is short, the next one fails
        os.lseek(fd, VRAM - 4, os.SEEK_SET)
        self.assertEqual(os.write(fd, b"12345678"), 4)
        self.assertErrno(errno.ENOSPC, os.write, fd, b"5678")
        self.assertEqual(os.pread(fd, 4, VRAM - 4), b"1234")
        os.close(fd)
        self.assertEqual(os.stat(self.vram(4)).st_size, VRAM)  # VRAM does not grow

    def test_shell_redirections(self):
        # `cat x > vram` (O_TRUNC is ignored: VRAM cannot shrink) and `cat vram`
        with open(os.path.join(self.node.state, "in"), "wb") as f:
            f.write(b"from the shell")
        subprocess.run(["sh", "-c", f"cat {self.node.state}/in > {self.vram(6)}"], check=True)
        out = subprocess.run(["sh", "-c", f"head -c 14 < {self.vram(6)}"], check=True, capture_output=True)
        self.assertEqual(out.stdout, b"from the shell")
        self.assertEqual(os.stat(self.vram(6)).st_size, VRAM)
        # the fd a redirection leaves open still holds the slot; closing it lets go
        script = (f"exec 3<{self.vram(6)}; cat {self.node.path('dies', 'slot')}; exec 3<&-; "
                  f"cat {self.node.path('dies', 'slot')}")
        out = subprocess.run(["sh", "-c", script], check=True, capture_output=True, text=True).stdout
        first, second = out.split("active:")[1:3]
        self.assertTrue(first.startswith(" 6\nholders: 1\n"), first)
        self.assertTrue(second.startswith(" none\nholders: 0\n"), second)

    def test_data_survives_a_restart(self):
        fd = os.open(self.vram(7), os.O_RDWR)
        os.pwrite(fd, b"persistent", 12345)
        os.close(fd)
        self.node.restart()
        fd = os.open(self.vram(7), os.O_RDONLY)
        self.assertEqual(os.pread(fd, 10, 12345), b"persistent")
        os.close(fd)


class Slot(DiesTestCase):
    def test_shared_openers_of_one_die(self):
        a = self.opener(0)
        self.assertEqual(a.result()[0], "GOT")
        b = self.opener(0, "n")  # even non-blocking: the slot already holds die 0
        self.assertEqual(b.result()[0], "GOT")
        self.assertEqual(self.slot()["holders"], "2")
        self.assertEqual(self.slot()["active"], "0")
        self.assertEqual(self.open_errno(1, os.O_RDWR | os.O_NONBLOCK), errno.EAGAIN)
        a.release()
        self.assertEqual(self.slot()["holders"], "1")
        self.assertEqual(self.open_errno(1, os.O_RDWR | os.O_NONBLOCK), errno.EAGAIN)
        b.release()
        self.assertEqual(self.slot()["holders"], "0")
        self.assertEqual(self.slot()["active"], "none")
        self.assertEqual(self.open_errno(1, os.O_RDWR | os.O_NONBLOCK), 0)

    def test_nonblock_is_eagain_at_once(self):
        holder = self.opener(0)
        self.assertEqual(holder.result()[0], "GOT")
        t0 = time.monotonic()
        self.assertEqual(self.open_errno(1, os.O_RDWR | os.O_NONBLOCK), errno.EAGAIN)
        self.assertLess(time.monotonic() - t0, 1.0)
        self.assertEqual(self.slot()["waiters"], "0")
        # a blocking opener of the same die as the holder is not blocked either
        self.assertEqual(self.open_errno(0), 0)

    def test_three_waiters_are_served_in_fifo_order(self):
        holder = self.opener(0)
        self.assertEqual(holder.result()[0], "GOT")
        waiters = []
        for i, die in enumerate((3, 1, 2)):  # not in die order: arrival order decides
            waiters.append(self.opener(die))
            self.wait_waiters(i + 1)
        holder.release()
        got = []
        for w in waiters:
            kind, t = w.result()
            self.assertEqual(kind, "GOT")
            got.append(t)
            # nobody else gets the slot while this one holds it
            time.sleep(0.2)
            for other in waiters[len(got):]:
                self.assertIsNone(other.p.poll())
            self.assertEqual(self.slot()["waiters"], str(3 - len(got)))
            w.release()
        self.assertEqual(got, sorted(got))
        self.assertEqual(self.slot()["active"], "none")

    def test_a_signal_interrupts_the_wait(self):
        holder = self.opener(0)
        self.assertEqual(holder.result()[0], "GOT")
        w = self.opener(1)
        self.wait_waiters(1)
        w.kill(signal.SIGUSR1)
        self.assertEqual(w.result(), ("ERR", errno.EINTR))
        self.assertEqual(self.slot()["waiters"], "0")
        # a waiter killed outright leaves the queue too
        k = self.opener(2)
        self.wait_waiters(1)
        k.kill()
        k.p.wait(timeout=10)
        self.wait_waiters(0)
        # the queue is clean: once the holder closes, the slot is free
        holder.release()
        self.assertEqual(self.slot()["active"], "none")
        self.assertEqual(self.open_errno(3, os.O_RDWR | os.O_NONBLOCK), 0)

    def test_sequential_close_and_open_never_fail(self):
        # in one process, with O_NONBLOCK: a closed handle never holds the slot
        for i in range(300):
            fd = os.open(self.vram(i % 3), os.O_RDWR | os.O_NONBLOCK)
            os.pread(fd, 64, i)
            os.close(fd)
        # one process after another, the way a shell script does it
        script = " && ".join(f"dd if={self.vram(i % 4)} iflag=nonblock bs=4k count=1 of=/dev/null 2>/dev/null"
                             for i in range(40))
        subprocess.run(["sh", "-c", script], check=True)
        # the swaps counter saw every one of them
        self.assertGreaterEqual(int(self.slot()["swaps"]), 340)

    def test_a_forked_copy_closing_does_not_release(self):
        fd = os.open(self.vram(0), os.O_RDWR)
        pid = os.fork()
        if pid == 0:
            os.close(fd)
            os._exit(0)
        os.waitpid(pid, 0)
        self.assertEqual(self.slot()["holders"], "1")
        self.assertEqual(self.open_errno(1, os.O_RDWR | os.O_NONBLOCK), errno.EAGAIN)
        dup = os.dup(fd)
        os.close(fd)  # the process still has the file through dup
        self.assertEqual(self.slot()["holders"], "1")
        self.assertEqual(os.pread(dup, 4, 0), os.pread(dup, 4, 0))
        os.close(dup)
        self.assertEqual(self.slot()["holders"], "0")
        self.assertEqual(self.open_errno(1, os.O_RDWR | os.O_NONBLOCK), 0)

    def test_a_killed_holder_releases(self):
        holder = self.opener(0)
        self.assertEqual(holder.result()[0], "GOT")
        w = self.opener(1)
        self.wait_waiters(1)
        holder.kill()
        kind, _ = w.result()
        self.assertEqual(kind, "GOT")
        self.assertEqual(self.slot()["active"], "1")
        w.release()


class Quarantine(DiesTestCase):
    def set_enabled(self, die, text):
        with open(self.node.path("dies", str(die), "enabled"), "w") as f:
            f.write(text)

    def test_disable_refuses_opens_and_fails_waiters(self):
        n = self.node
        holder = self.opener(0)
        self.assertEqual(holder.result()[0], "GOT")
        w = self.opener(3)
        self.wait_waiters(1)
        subprocess.run(["sh", "-c", f"echo 0 > {n.path('dies', '3', 'enabled')}"], check=True)
        self.assertEqual(w.result(), ("ERR", errno.ENODEV))
        self.assertEqual(n.read("dies", "3", "enabled"), "0\n")
        self.assertEqual(n.keyvals("dies", "3", "info")["enabled"], "0")
        self.assertEqual(self.open_errno(3), errno.ENODEV)
        self.assertEqual(self.open_errno(3, os.O_RDWR | os.O_NONBLOCK), errno.ENODEV)
        holder.release()
        self.assertEqual(self.open_errno(3), errno.ENODEV)
        self.set_enabled(3, "1\n")
        self.assertEqual(self.open_errno(3), 0)

    def test_disabling_the_die_in_use_revokes_it(self):
        fd = os.open(self.vram(5), os.O_RDWR)
        os.pwrite(fd, b"kept", 0)
        self.set_enabled(5, "0")
        self.assertErrno(errno.ENODEV, os.pread, fd, 4, 0)
        self.assertErrno(errno.ENODEV, os.pwrite, fd, b"x", 0)
        self.assertEqual(self.slot()["active"], "none")
        # the slot is free for the others at once
        self.assertEqual(self.open_errno(6, os.O_RDWR | os.O_NONBLOCK), 0)
        os.close(fd)
        self.set_enabled(5, "1")
        fd = os.open(self.vram(5), os.O_RDWR)
        self.assertEqual(os.pread(fd, 4, 0), b"kept")  # quarantine keeps the data
        os.close(fd)

    def test_only_0_and_1(self):
        for bad in ("2", "yes", "\n", "01"):
            self.assertErrno(errno.EINVAL, self.set_enabled, 2, bad)
        self.assertEqual(self.node.read("dies", "2", "enabled"), "1\n")


class Cli(DiesTestCase):
    def cli(self, *args, **kw):
        return subprocess.run([BARSWAP, f"--sim={self.node.state}", *[str(a) for a in args]],
                              capture_output=True, timeout=30, **kw)

    def test_query_read_write_share_the_filesystem_s_dies(self):
        q = self.cli("query", text=True)
        self.assertEqual(q.returncode, 0, q.stderr)
        self.assertIn("backend: simulated", q.stdout)
        self.assertIn("dies: 16", q.stdout)
        fd = os.open(self.vram(2), os.O_RDWR)
        os.pwrite(fd, b"written by the fs", 4096)
        os.close(fd)
        r = self.cli("read", 2, 4096, 17)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout, b"written by the fs")
        w = self.cli("write", 2, "8K", input=b"written by the cli")
        self.assertEqual(w.returncode, 0, w.stderr)
        fd = os.open(self.vram(2), os.O_RDONLY)
        self.assertEqual(os.pread(fd, 18, 8192), b"written by the cli")
        os.close(fd)
        big = self.cli("write", 2, VRAM - 2, input=b"abcd")
        self.assertNotEqual(big.returncode, 0)
        self.assertIn(b"No space left", big.stderr)
        self.assertEqual(self.cli("info", 99).returncode, 1)

    def test_a_cli_holder_makes_the_filesystem_wait(self):
        hold = subprocess.Popen([BARSWAP, f"--sim={self.node.state}", "acquire", "5", "-"],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        try:
            self.assertTrue(hold.stdout.readline().startswith("acquired 5"))
            slot = self.slot()
            self.assertEqual(slot["active"], "5")
            self.assertEqual(slot["owner"], "other")
            self.assertEqual(slot["owner_pid"], str(hold.pid))
            self.assertEqual(self.open_errno(1, os.O_RDWR | os.O_NONBLOCK), errno.EAGAIN)
            w = self.opener(1)
            wait_until(lambda: self.slot()["slot_waiters"] == "1", what="the daemon queued on the slot")
            self.assertEqual(self.slot()["waiters"], "1")
            hold.stdin.close()  # the CLI releases
            self.assertEqual(w.result()[0], "GOT")
            self.assertEqual(self.slot()["owner"], "accelfs")
            w.release()
        finally:
            hold.kill()
            hold.wait()
            hold.stdout.close()

    def test_a_killed_cli_holder_releases(self):
        hold = subprocess.Popen([BARSWAP, f"--sim={self.node.state}", "acquire", "5"],
                                stdout=subprocess.PIPE, text=True)
        try:
            self.assertTrue(hold.stdout.readline().startswith("acquired 5"))
            w = self.opener(1)
            wait_until(lambda: self.slot()["slot_waiters"] == "1", what="the daemon queued on the slot")
            hold.kill()
            self.assertEqual(w.result()[0], "GOT")
            w.release()
        finally:
            hold.kill()
            hold.wait()
            hold.stdout.close()

    def test_cli_quarantine_is_seen_by_the_filesystem(self):
        self.assertEqual(self.cli("disable", 9).returncode, 0)
        self.assertEqual(self.node.read("dies", "9", "enabled"), "0\n")
        self.assertEqual(self.open_errno(9), errno.ENODEV)
        self.assertEqual(self.cli("enable", 9).returncode, 0)
        self.assertEqual(self.open_errno(9), 0)


class SharedChecks(DiesTestCase):
    def test_the_checks_the_qemu_suite_runs(self):
        # tests/dies/dies_check.c: the same program runs inside QEMU over bar_swap.ko
        res = subprocess.run([DIES_CHECK, self.node.path("dies")], capture_output=True, text=True, timeout=300)
        self.assertEqual(res.returncode, 0, res.stdout + res.stderr)
        self.assertRegex(res.stdout, r"\n[1-9][0-9]* passed, 0 failed\n")


def stop_and_report(node):
    """Unmount, then what the daemon's sanitizers said (the harness's convention)."""
    try:
        node.stop()
    finally:
        reports = node.sanitizer_reports()
        node.cleanup()
    return reports


class WithoutSim(unittest.TestCase):
    def test_no_dies_without_sim_and_without_the_module(self):
        if os.path.exists("/dev/bar_swap"):
            self.skipTest("this machine has the module loaded")
        node = Node()
        env = dict(os.environ)
        env["ASAN_OPTIONS"] = f"log_path={node.state}/sanitizer:" + env.get("ASAN_OPTIONS", "")
        env["TSAN_OPTIONS"] = f"log_path={node.state}/sanitizer:" + env.get("TSAN_OPTIONS", "")
        env["UBSAN_OPTIONS"] = f"log_path={node.state}/sanitizer:" + env.get("UBSAN_OPTIONS", "")
        # Without --sim the CDI directory defaults to the system's, which a node mounted by scripts/try holds
        # (one daemon per CDI directory): a private one, so that the test never meets the host's daemon.
        res = start_daemon([ACCELFS, f"--state-dir={node.state}", f"--cdi-dir={node.state}/cdi", node.mnt], node.mnt,
                           capture_output=True, text=True, timeout=60, env=env)
        self.assertEqual(res.returncode, 0, res.stderr)
        node.mounted = True
        try:
            # a simulator never stands in for a missing module
            self.assertNotIn("dies", os.listdir(node.mnt))
            self.assertFalse(os.path.exists(os.path.join(node.state, "sim", "barswap")))
        finally:
            self.assertEqual(stop_and_report(node), "")


class ReadOnly(unittest.TestCase):
    def test_read_only_mount_never_takes_the_slot(self):
        node = Node(extra=["--read-only"]).start()
        try:
            self.assertEqual(node.keyvals("dies", "3", "info")["enabled"], "1")
            with self.assertRaises(OSError) as cm:
                os.open(node.path("dies", "3", "vram"), os.O_RDONLY)
            self.assertEqual(cm.exception.errno, errno.EROFS)
            with self.assertRaises(OSError) as cm:
                with open(node.path("dies", "3", "enabled"), "w") as f:
                    f.write("0")
            self.assertEqual(cm.exception.errno, errno.EROFS)
        finally:
            self.assertEqual(stop_and_report(node), "")


@unittest.skipIf(os.environ.get("ACCELFS_NO_VALGRIND") or not shutil.which("valgrind"),
                 "valgrind is not available here, or the build is sanitized (ASan and valgrind exclude each other)")
class UnderValgrind(unittest.TestCase):
    def test_dies_check_with_the_daemon_under_valgrind(self):
        with daemon_under_valgrind(self, os.path.join("dies", "slot")) as mnt:
            res = subprocess.run([DIES_CHECK, os.path.join(mnt, "dies")], capture_output=True, text=True,
                                 timeout=900)
            self.assertEqual(res.returncode, 0, res.stdout + res.stderr)


if __name__ == "__main__":
    unittest.main(verbosity=2)
