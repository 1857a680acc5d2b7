# SPDX-License-Identifier: MIT
"""dies/ under the kernel's bound on a FUSE answer (fs.fuse.default_request_timeout, Linux 6.14
and later): a queued open answered ETIMEDOUT at the wait limit, before the kernel would abort the
mount (fs/dies_wait_limit.c, docs/operations.md "The kernel's bound on an answer").  The lend
suite's return under a bound uses KernelBound too (test_dies_lend.py).
"""
import contextlib
import errno
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
import unittest

from harness import KERNEL_BOUND_LOCK, daemon_under_valgrind, exited, kernel_bound_lock, wait_until
from test_dies import DiesTestCase, Opener

FUSE_SYSCTL = "/proc/sys/fs/fuse"
SYSCTLS = [os.path.join(FUSE_SYSCTL, f"{k}_request_timeout") for k in ("default", "max")]


# A bound this suite set and never put back (a run killed inside the window) says so here: the
# next run puts it back, where a bound the machine's owner set is left alone.
LEFT_SET = KERNEL_BOUND_LOCK + ".set"


def skip_without_a_bound(test):
    if os.geteuid() != 0 or not all(os.path.exists(p) for p in SYSCTLS):
        test.skipTest("no bound on a FUSE answer here (Linux 6.14 and later, as root)")
    with kernel_bound_lock(alone=True):
        with open(SYSCTLS[0]) as f:
            now = f.read().strip()
        try:
            with open(LEFT_SET) as f:
                left = f.read().strip()
        except FileNotFoundError:
            left = None
        if now != "0" and now == left:
            print(f"{SYSCTLS[0]} was {now}, set by a run of this suite that was killed before it put it "
                  "back: 0 again", file=sys.stderr)
            with open(SYSCTLS[0], "w") as f:
                f.write("0")
            now = "0"
        if left is not None:
            os.unlink(LEFT_SET)
    for p in SYSCTLS:
        with open(p) as f:
            if f.read().strip() != "0":
                test.skipTest(f"{p} is set on this machine: a test does not change it")


@contextlib.contextmanager
def bound_for_the_next_mount(seconds):
    """The kernel takes the bound when the daemon answers FUSE_INIT, which may come after the start
    returns: set it for one start alone, and put it back once the mount has answered a request (so
    INIT came before it), inside this block.  The setting is the whole machine's: while it is not 0,
    this process holds harness.KERNEL_BOUND_LOCK alone, so that no other test's daemon mounts then,
    and a SIGTERM (meson's timeout) still puts it back."""
    def stop(signum, frame):
        raise SystemExit(f"signal {signum} while {SYSCTLS[0]} was {seconds}")

    with kernel_bound_lock(alone=True):
        previous = signal.signal(signal.SIGTERM, stop)
        try:
            with open(LEFT_SET, "w") as f:
                f.write(f"{seconds}\n")
            with open(SYSCTLS[0], "w") as f:
                f.write(str(seconds))
            try:
                yield
            finally:
                with open(SYSCTLS[0], "w") as f:
                    f.write("0")
                os.unlink(LEFT_SET)
        finally:
            signal.signal(signal.SIGTERM, previous)


class KernelBound:
    """A mixin for a test case whose daemon mounts under a kernel's bound on a FUSE answer of 1 s
    (fs.fuse.default_request_timeout, Linux 6.14 and later), so its dies/ wait limit is 750 ms."""

    def setUp(self):
        skip_without_a_bound(self)
        with bound_for_the_next_mount(1):
            super().setUp()
            os.listdir(self.node.mnt)


class KernelBoundOnAnAnswer(KernelBound, DiesTestCase):
    """The kernel aborts a connection one of whose requests waits longer than its bound, and an
    open queued for the slot would be such a request.  Under a bound, accelfs answers such an open
    ETIMEDOUT a margin before it (a quarter of it: 750 ms under 1 s), so the one caller fails and
    the mount lives (fs/dies_wait_limit.c, fs/request_timeout.h, docs/operations.md).  Before this
    limit, the kernel aborted the whole connection here within about 16 s (ECONNABORTED)."""

    def test_an_open_queued_past_the_limit_fails_and_the_mount_lives(self):
        n = self.node
        self.assertRegex(n.log(), r"warning: the kernel aborts the FUSE connection of \S+ when a request "
                                  r"waits more than 1 s for its answer .*dies/<n>/vram.* is answered ETIMEDOUT "
                                  r"after 750 ms \(dies/slot's wait_limit_ms\)")
        self.assertEqual(self.slot()["wait_limit_ms"], "750")
        pid = n.pid()
        holder = self.opener(0)
        self.assertEqual(holder.result()[0], "GOT")
        # Openers queued behind die 0, one after another, across more than one of the kernel's looks
        # (every 15 s): each is answered ETIMEDOUT, none waits long enough to end the mount.
        began, answered = time.monotonic(), 0
        while time.monotonic() - began < 17:
            queued = self.opener(1)
            # A liveness bound, not a timing: a wait the limit did not end would be the kernel's.
            wait_until(lambda: queued.p.poll() is not None, timeout=90, what="the queued open's answer")
            self.assertEqual(queued.result(), ("ERR", errno.ETIMEDOUT))
            answered += 1
        self.assertFalse(exited(pid), "accelfs ended")
        self.assertIn("dies", os.listdir(n.mnt))
        self.assertEqual(self.slot()["active"], "0")  # the holder kept the slot through it all
        self.assertEqual(self.slot()["waiters"], "0")
        self.assertRegex(n.log(), r"notice: die 1: the open of pid \d+ waited \d+ ms for the slot, as long as "
                                  r"the kernel's bound on a FUSE answer lets a request wait: answered ETIMEDOUT")
        self.assertNotIn("was aborted while still mounted", n.log())
        metrics = n.read("metrics")
        self.assertIn("accelfs_dies_wait_limit_seconds 0.750\n", metrics)
        self.assertRegex(metrics, rf"accelfs_dies_waits_timed_out_total {answered}\n")
        self.assertEqual(json.loads(n.read("node.json"))["dies"]["slot"]["wait_limit_ms"], 750)
        holder.release()

    def test_openers_killed_around_the_limit_leave_nothing_behind(self):
        # A kill is an interrupt that races the limit for the same parked open: whichever withdraws it
        # answers it, once.  Rounds of eight queued openers, some killed around 750 ms.
        n = self.node
        holder = self.opener(0)
        self.assertEqual(holder.result()[0], "GOT")
        rng = random.Random(31)
        for _ in range(5):
            # Each kill at a random moment around its own opener's limit, counted from when it opened:
            # not from when all eight wait, since starting eight openers can take longer than 750 ms.
            queued = []
            for i in range(8):
                o = self.opener(1 + i % 3)
                queued.append((o, time.monotonic()))
            plan = sorted((t + rng.uniform(0.55, 0.95), i) for i, (_, t) in enumerate(queued) if rng.random() < 0.5)
            for at, i in plan:
                time.sleep(max(0.0, at - time.monotonic()))
                queued[i][0].kill()
            killed = {i for _, i in plan}
            for i, (o, _) in enumerate(queued):
                if i in killed:
                    o.p.wait(timeout=30)
                else:
                    self.assertEqual(o.result(), ("ERR", errno.ETIMEDOUT))
            wait_until(lambda: self.slot()["waiters"] == "0", what="no waiter left")
        self.assertEqual(self.slot()["active"], "0")
        self.assertNotIn("was aborted while still mounted", n.log())
        holder.release()


# Another run of the tests on the machine, played by a process of its own: it says when it asks for
# its node, starts it, and says when the start returned and what its daemon logged.
OTHER_RUN = """
import json, sys, time
import harness
node = harness.Node()
try:
    print("starting", flush=True)
    node.start()
    print(json.dumps({"mounted": time.monotonic(), "log": node.log()}), flush=True)
finally:
    node.cleanup()
"""


class AnotherRunsMount(unittest.TestCase):
    def test_a_mount_made_while_the_bound_is_set_waits_and_gets_none(self):
        """The bound is the whole machine's.  Another run's daemon, asking to mount while a test has it
        set, mounts once it is 0 again, with no bound: before the lock, it mounted under this one (its
        log warned of a 1 s bound), and the first of its requests the kernel caught waiting more than
        1 s would have aborted the mount, ECONNABORTED for every caller."""
        skip_without_a_bound(self)
        other = subprocess.Popen([sys.executable, "-c", OTHER_RUN], cwd=os.path.dirname(os.path.abspath(__file__)),
                                 stdout=subprocess.PIPE, text=True)
        try:
            with bound_for_the_next_mount(1):
                self.assertEqual(other.stdout.readline().strip(), "starting")
                time.sleep(2)  # long enough for a start (0.3 s here) that did not wait
                still_set = time.monotonic()  # the last moment known to be inside the window
            out, _ = other.communicate(timeout=120)
        finally:
            if other.poll() is None:
                other.kill()
                other.wait()
        self.assertEqual(other.returncode, 0)
        seen = json.loads(out)
        self.assertGreater(seen["mounted"], still_set, "the other run mounted while the bound was set")
        self.assertNotIn("the kernel aborts the FUSE connection", seen["log"])


@unittest.skipIf(os.environ.get("ACCELFS_NO_VALGRIND") or not shutil.which("valgrind"),
                 "valgrind is not available here, or the build is sanitized (ASan and valgrind exclude each other)")
class UnderValgrind(unittest.TestCase):
    def test_the_wait_limit_with_the_daemon_under_valgrind(self):
        """The limit's thread, a request it cuts short and one an interrupt withdraws: no memory error, no
        leak.  A bound of 8 s (a 6 s limit), since valgrind makes every request slower."""
        skip_without_a_bound(self)
        openers = []

        def opener(die):
            o = Opener(os.path.join(mnt, "dies", str(die), "vram"))
            openers.append(o)
            return o

        def slot():
            with open(os.path.join(mnt, "dies", "slot")) as f:
                return dict(line.split(": ", 1) for line in f.read().splitlines())

        with contextlib.ExitStack() as stack:
            with bound_for_the_next_mount(8):
                mnt = stack.enter_context(daemon_under_valgrind(self, os.path.join("dies", "slot")))
                os.listdir(mnt)
            try:
                self.assertEqual(slot()["wait_limit_ms"], "6000")
                holder = opener(0)
                self.assertEqual(holder.result()[0], "GOT")
                queued, killed = opener(1), opener(2)
                wait_until(lambda: slot()["waiters"] == "2", timeout=60, what="two waiters")
                killed.kill()  # an interrupt withdraws it
                killed.p.wait(timeout=30)
                wait_until(lambda: queued.p.poll() is not None, timeout=90, what="the queued open's answer")
                self.assertEqual(queued.result(), ("ERR", errno.ETIMEDOUT))
                holder.release()
            finally:
                for o in openers:
                    o.reap()


if __name__ == "__main__":
    unittest.main(verbosity=2)
