# SPDX-License-Identifier: MIT
"""dies/ under the kernel's bound on a FUSE answer (fs.fuse.default_request_timeout, Linux 6.14
and later): a queued open answered ETIMEDOUT at the wait limit, before the kernel would abort the
mount (fs/dies_wait_limit.c, docs/operations.md "The kernel's bound on an answer").  The lend
suite's return under a bound uses KernelBound too (test_dies_lend.py).
"""
import errno
import json
import os
import random
import time
import unittest

from harness import wait_until
from test_dies import DiesTestCase

FUSE_SYSCTL = "/proc/sys/fs/fuse"


class KernelBound:
    """A mixin for a test case whose daemon mounts under a kernel's bound on a FUSE answer of 1 s
    (fs.fuse.default_request_timeout, Linux 6.14 and later), so its dies/ wait limit is 750 ms."""

    def setUp(self):
        paths = [os.path.join(FUSE_SYSCTL, f"{k}_request_timeout") for k in ("default", "max")]
        if os.geteuid() != 0 or not all(os.path.exists(p) for p in paths):
            self.skipTest("no bound on a FUSE answer here (Linux 6.14 and later, as root)")
        for p in paths:
            with open(p) as f:
                if f.read().strip() != "0":
                    self.skipTest(f"{p} is set on this machine: a test does not change it")
        # The kernel takes the bound when the daemon answers FUSE_INIT, which may come after the
        # start returns: set for this start alone, and put back once the mount has answered a
        # request (so INIT before it); a FUSE mount made elsewhere in that instant would get it too.
        with open(paths[0], "w") as f:
            f.write("1")
        try:
            super().setUp()
            os.listdir(self.node.mnt)
        finally:
            with open(paths[0], "w") as f:
                f.write("0")


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
        self.assertTrue(os.path.exists(f"/proc/{pid}"), "accelfs ended")
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
            queued = [self.opener(1 + i % 3) for i in range(8)]
            self.wait_waiters(8)
            time.sleep(0.6)
            killed = set()
            for i, o in enumerate(queued):
                if rng.random() < 0.5:
                    time.sleep(rng.uniform(0, 0.05))
                    o.kill()
                    killed.add(i)
            for i, o in enumerate(queued):
                if i in killed:
                    o.p.wait(timeout=30)
                else:
                    self.assertIn(o.result(), [("ERR", errno.ETIMEDOUT), ("ERR", errno.EINTR)])
            wait_until(lambda: self.slot()["waiters"] == "0", what="no waiter left")
        self.assertEqual(self.slot()["active"], "0")
        self.assertNotIn("was aborted while still mounted", n.log())
        holder.release()


if __name__ == "__main__":
    unittest.main(verbosity=2)
