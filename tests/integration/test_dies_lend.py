# SPDX-License-Identifier: MIT
"""Lending a die to a driver and the lease, on the simulated slot (docs/dies.md,
"Lend" and "The lease"): the rules the QEMU suite checks over bar_swap.ko, with
the simulated drivers of a topology (nvidia, uio_pci_generic, pci-stub loaded;
nvidia, uio_pci_generic and vfio-pci allowed).

A lender is a child process that opens dies/<n>/vram, writes a driver's name to
dies/<n>/driver (so it is the holder that lends), and then does what its stdin
says, printing each errno.
"""
import errno
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

from harness import daemon_under_valgrind, wait_until
from test_dies import BARSWAP, DiesTestCase, Opener
from test_dies_bound import KernelBound

LENDER = r"""
import os, sys
vram, driver_file, name = sys.argv[1:4]
try:
    fd = os.open(vram, os.O_RDWR)
except OSError as e:
    print("ERR", e.errno, flush=True)
    sys.exit(0)
print("GOT", flush=True)

def attempt(fn):
    try:
        fn()
        return 0
    except OSError as e:
        return e.errno

def write_driver(text):
    def go():
        dfd = os.open(driver_file, os.O_WRONLY)
        try:
            os.write(dfd, text.encode())
        finally:
            os.close(dfd)
    return attempt(go)

if name != "-":
    print("LEND", write_driver(name + "\n"), flush=True)
for line in sys.stdin:
    cmd = line.split()
    if cmd[0] == "driver":
        print("DRIVER", write_driver(cmd[1] + "\n"), flush=True)
    elif cmd[0] == "read":
        print("READ", attempt(lambda: os.pread(fd, 4, 0)), flush=True)
    elif cmd[0] == "write":
        print("WRITE", attempt(lambda: os.pwrite(fd, b"abcd", 0)), flush=True)
os.close(fd)
print("CLOSED", flush=True)
"""

TOPOLOGY = {"barswap": {"dies": 4, "vram_mib": 8,
                        "drivers": ["nvidia", "uio_pci_generic", "pci-stub"],
                        "lend_drivers": ["nvidia", "uio_pci_generic", "vfio-pci"]}}
_topology_dir = tempfile.mkdtemp(prefix="accelfs-lend-topo-")
TOPOLOGY_FILE = os.path.join(_topology_dir, "dies-lend.json")
with open(TOPOLOGY_FILE, "w") as _f:
    json.dump(TOPOLOGY, _f)


def tearDownModule():
    os.unlink(TOPOLOGY_FILE)
    os.rmdir(_topology_dir)


class Lender:
    def __init__(self, node, die, driver):
        self.p = subprocess.Popen([sys.executable, "-c", LENDER, node.path("dies", str(die), "vram"),
                                   node.path("dies", str(die), "driver"), driver],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)

    def said(self):
        words = self.p.stdout.readline().split()
        if not words:
            raise AssertionError(f"lender {self.p.pid} said nothing (exit {self.p.poll()})")
        return words[0], int(words[1]) if len(words) > 1 else None

    def ask(self, cmd):
        self.p.stdin.write(cmd + "\n")
        self.p.stdin.flush()
        return self.said()

    def close(self):
        self.p.stdin.close()
        self.p.wait(timeout=30)
        self.p.stdout.close()

    def reap(self):
        for f in (self.p.stdin, self.p.stdout):
            try:
                f.close()
            except (BrokenPipeError, ValueError):
                pass
        self.p.kill()
        self.p.wait(timeout=10)


class LendCase(DiesTestCase):
    topology = TOPOLOGY_FILE

    def setUp(self):
        super().setUp()
        self.lenders = []
        self.procs = []

    def tearDown(self):
        for lender in self.lenders:
            lender.reap()
        for p in self.procs:
            p.kill()
            p.wait()
            for f in (p.stdin, p.stdout):
                if f:
                    f.close()
        super().tearDown()

    def lender(self, die, driver):
        lender = Lender(self.node, die, driver)
        self.lenders.append(lender)
        self.assertEqual(lender.said(), ("GOT", None))
        return lender

    def lent(self, die, driver="nvidia"):
        lender = self.lender(die, driver)
        self.assertEqual(lender.said(), ("LEND", 0))
        return lender

    def cli(self, *args, stdin=None):
        p = subprocess.Popen([BARSWAP, f"--sim={self.node.state}", *[str(a) for a in args]],
                             stdin=subprocess.PIPE if stdin else None, stdout=subprocess.PIPE, text=True)
        self.procs.append(p)
        return p

    def driver(self, die):
        return self.node.read("dies", str(die), "driver").strip()

    def info(self, die):
        return self.node.keyvals("dies", str(die), "info")

    def write(self, *parts, text):
        try:
            with open(self.node.path(*parts), "w") as f:
                f.write(text)
        except OSError as e:
            return e.errno
        return 0

    def slot_lines(self, key):
        return [line.split(":", 1)[1].strip() for line in self.node.read("dies", "slot").splitlines()
                if line.startswith(key + ":")]


class Lend(LendCase):
    def test_lend_pins_the_slot_until_the_lender_closes(self):
        a = self.lent(1)
        self.assertEqual(self.driver(1), "nvidia")
        info = self.info(1)
        self.assertEqual((info["state"], info["lent_to"], info["lender_pid"]), ("lent", "nvidia", str(a.p.pid)))
        self.assertEqual(self.slot()["lent"], f"die 1 to nvidia by pid {a.p.pid} (lent, pinned)")
        self.assertIn(f"pid {a.p.pid}, the lender", self.slot()["waiting_on"])
        # its memory is the driver's now
        self.assertEqual(a.ask("read"), ("READ", errno.EBUSY))
        # another die's opener waits while the die is lent
        w = self.opener(2)
        self.wait_waiters(1)
        time.sleep(0.5)
        self.assertIsNone(w.p.poll())
        self.assertEqual(self.slot()["active"], "1")
        # the lender's close returns the die, then the slot moves on
        a.close()
        self.assertEqual(w.result()[0], "GOT")
        self.assertEqual(self.driver(1), "bar_swap")
        self.assertEqual(self.info(1)["state"], "parked")
        self.assertEqual(self.slot()["active"], "2")
        self.assertEqual(self.slot()["lent"], "none")
        self.assertIn("die 1 lent to nvidia by pid", self.node.log())

    def test_writing_bar_swap_takes_it_back_and_keeps_the_slot(self):
        a = self.lent(0, "uio_pci_generic")
        self.assertEqual(a.ask("write"), ("WRITE", errno.EBUSY))
        self.assertEqual(a.ask("driver bar_swap"), ("DRIVER", 0))
        self.assertEqual(self.driver(0), "bar_swap")
        self.assertEqual(self.slot()["active"], "0")
        self.assertEqual(self.info(0)["state"], "held")
        self.assertEqual(a.ask("write"), ("WRITE", 0))
        self.assertEqual(a.ask("read"), ("READ", 0))
        # and again: lend twice in one hold
        self.assertEqual(a.ask("driver nvidia"), ("DRIVER", 0))
        self.assertEqual(self.driver(0), "nvidia")
        a.close()
        self.assertEqual(self.driver(0), "bar_swap")

    def test_a_killed_lender_returns_the_die(self):
        a = self.lent(3)
        w = self.opener(2)
        self.wait_waiters(1)
        a.p.kill()
        self.assertEqual(w.result()[0], "GOT")
        self.assertEqual(self.driver(3), "bar_swap")

    def test_refusals(self):
        # no hold on the die: EPERM, even as root
        self.assertEqual(self.write("dies", "1", "driver", text="nvidia\n"), errno.EPERM)
        a = self.lender(1, "pci-stub")            # loaded, but not in the allowlist
        self.assertEqual(a.said(), ("LEND", errno.EPERM))
        self.assertEqual(a.ask("driver nosuchdriver"), ("DRIVER", errno.EPERM))
        self.assertEqual(a.ask("driver vfio-pci"), ("DRIVER", errno.ENOENT))  # allowed, not loaded
        self.assertEqual(a.ask("driver bar_swap"), ("DRIVER", 0))  # not lent: nothing to do
        self.assertEqual(self.driver(1), "bar_swap")
        self.assertEqual(a.ask("driver nvidia"), ("DRIVER", 0))
        self.assertEqual(a.ask("driver uio_pci_generic"), ("DRIVER", errno.EBUSY))  # lent elsewhere
        # a lent die keeps its policy and stays enabled until it is back
        self.assertEqual(self.write("dies", "1", "policy", text="resident"), errno.EBUSY)
        self.assertEqual(self.write("dies", "1", "enabled", text="0"), errno.EBUSY)
        self.assertEqual(self.write("dies", "2", "policy", text="sometimes"), errno.EINVAL)
        log = self.node.log()
        self.assertIn("not in the module's lend_drivers= allowlist", log)
        self.assertIn("no PCI driver of that name is loaded", log)
        self.assertIn("without holding dies/1/vram: refused", log)

    def test_a_driver_that_does_not_let_go_holds_the_slot(self):
        a = self.lent(1)
        user = self.cli("use", 1, "-", stdin=True)
        self.assertTrue(user.stdout.readline().startswith("using 1 through nvidia"))
        w = self.opener(2)
        self.wait_waiters(1)
        a.close()  # the die is asked back; the simulated driver waits for its user
        wait_until(lambda: "nvidia to let go of die 1" in self.slot()["waiting_on"], what="the slot to wait")
        self.assertEqual(self.driver(1), "nvidia")
        self.assertEqual(self.info(1)["state"], "returning")
        time.sleep(0.5)
        self.assertIsNone(w.p.poll())
        user.stdin.close()  # the user lets go: the driver lets go, the slot moves on
        self.assertEqual(w.result()[0], "GOT")
        self.assertEqual(self.driver(1), "bar_swap")

    def test_resident_stays_with_its_driver_when_the_slot_moves_on(self):
        self.assertEqual(self.write("dies", "1", "policy", text="resident\n"), 0)
        self.assertEqual(self.node.read("dies", "1", "policy"), "resident\n")
        a = self.lent(1)
        w = self.opener(2)
        self.wait_waiters(1)
        a.close()
        self.assertEqual(w.result()[0], "GOT")     # no return: the slot moved on at once
        self.assertEqual(self.driver(1), "nvidia")
        info = self.info(1)
        self.assertEqual((info["state"], info["active"]), ("lent", "0"))
        w.release()
        # the next holder maps it in for its driver, and can take it back
        b = self.lender(1, "-")
        self.assertEqual(self.info(1)["state"], "lent")
        self.assertEqual(b.ask("read"), ("READ", errno.EBUSY))
        self.assertEqual(b.ask("driver bar_swap"), ("DRIVER", 0))
        self.assertEqual(b.ask("read"), ("READ", 0))
        b.close()
        self.assertEqual(self.driver(1), "bar_swap")

    def test_the_cli_lends_and_returns(self):
        hold = self.cli("lend", 2, "uio_pci_generic", "-", stdin=True)
        self.assertEqual(hold.stdout.readline().strip(), "lent 2 to uio_pci_generic")
        self.assertEqual(self.driver(2), "uio_pci_generic")
        slot = self.slot()
        self.assertEqual((slot["owner"], slot["owner_pid"]), ("other", str(hold.pid)))
        self.assertEqual(slot["lent"], f"die 2 to uio_pci_generic by pid {hold.pid} (lent, pinned)")
        hold.stdin.close()
        self.assertEqual(hold.stdout.readline().strip(), "returned 2")
        self.assertEqual(hold.wait(timeout=30), 0)
        self.assertEqual(self.driver(2), "bar_swap")
        refused = subprocess.run([BARSWAP, f"--sim={self.node.state}", "lend", "2", "pci-stub", "0"],
                                 capture_output=True, text=True, timeout=30)
        self.assertEqual(refused.returncode, 1)
        self.assertIn("Operation not permitted", refused.stderr)


class Lease(LendCase):
    def test_lease_revokes_a_sleeping_holder_and_hands_the_slot_on(self):
        self.assertEqual(self.write("dies", "lease_ms", text="600\n"), 0)
        self.assertEqual(self.node.read("dies", "lease_ms"), "600\n")
        a = self.opener(0)
        self.assertEqual(a.result()[0], "GOT")
        self.assertEqual(self.slot()["lease_left_ms"], "none")  # nobody waits: the lease does not run
        time.sleep(0.8)
        self.assertEqual(self.slot()["active"], "0")
        t0 = time.monotonic()
        b = self.opener(1)
        self.wait_waiters(1)
        holder = [h for h in self.slot_lines("holder") if h.startswith(f"pid={a.p.pid} die=0 ")]
        self.assertEqual(len(holder), 1, self.slot_lines("holder"))
        self.assertLessEqual(int(holder[0].split("lease_left_ms=")[1]), 600)
        self.assertTrue(any(w.startswith(f"pid={b.p.pid} die=1 ") for w in self.slot_lines("waiter")))
        self.assertEqual(b.result()[0], "GOT")
        waited = time.monotonic() - t0
        self.assertGreaterEqual(waited, 0.5)
        self.assertLess(waited, 5)
        self.assertEqual(self.slot()["active"], "1")
        self.assertIn("the lease ran out with others waiting", self.node.log())
        # One holder, named as such (not "the holds of pids 9842 are").
        self.assertIn(f"the hold of pid {a.p.pid} is revoked (its reads and writes fail with ETIME until it opens "
                      "again)", self.node.log())

    def test_the_revoked_holder_s_reads_and_writes_fail_until_it_reopens(self):
        self.assertEqual(self.write("dies", "lease_ms", text="300"), 0)
        fd = os.open(self.vram(0), os.O_RDWR)
        b = self.opener(1)
        self.assertEqual(b.result()[0], "GOT")
        self.assertErrno(errno.ETIME, os.pread, fd, 4, 0)
        self.assertErrno(errno.ETIME, os.pwrite, fd, b"x", 0)
        b.release()
        self.assertErrno(errno.ETIME, os.pread, fd, 4, 0)  # still: it must open again
        os.close(fd)
        fd = os.open(self.vram(0), os.O_RDWR)
        self.assertEqual(len(os.pread(fd, 4, 0)), 4)
        os.close(fd)

    def test_a_lent_die_comes_back_first_and_a_driver_that_holds_on_keeps_it(self):
        self.assertEqual(self.write("dies", "lease_ms", text="300"), 0)
        a = self.lent(1)
        user = self.cli("use", 1, "-", stdin=True)
        self.assertTrue(user.stdout.readline().startswith("using 1"))
        b = self.opener(2)
        self.wait_waiters(1)
        wait_until(lambda: "nvidia to let go of die 1" in self.slot()["waiting_on"], what="the return to start")
        self.assertIn("a lease never takes a die from its driver", self.slot()["waiting_on"])
        time.sleep(0.6)
        self.assertIsNone(b.p.poll())  # the lease cannot revoke what the driver holds
        self.assertEqual(self.driver(1), "nvidia")
        wait_until(lambda: "has not let go" in self.node.log(), timeout=5, what="the log to say so")
        user.stdin.close()
        self.assertEqual(b.result()[0], "GOT")
        self.assertEqual(self.driver(1), "bar_swap")
        self.assertEqual(a.ask("read"), ("READ", errno.ETIME))

    def test_the_lease_revokes_a_cli_holder(self):
        self.assertEqual(self.write("dies", "lease_ms", text="400"), 0)
        hold = self.cli("acquire", 3, "-", stdin=True)
        self.assertTrue(hold.stdout.readline().startswith("acquired 3"))
        w = self.opener(1)
        self.assertEqual(w.result()[0], "GOT")
        hold.stdin.close()
        self.assertEqual(hold.wait(timeout=30), 1)  # its release says the lease took it back
        q = subprocess.run([BARSWAP, f"--sim={self.node.state}", "query"], capture_output=True, text=True)
        self.assertIn("lease_ms: 400", q.stdout)

    def test_values(self):
        for bad in ("-1", "abc", "\n", "1 2", "99999999999"):
            self.assertEqual(self.write("dies", "lease_ms", text=bad), errno.EINVAL, bad)
        self.assertEqual(self.write("dies", "lease_ms", text="0"), 0)
        self.assertEqual(self.node.read("dies", "lease_ms"), "0\n")


class ReturnUnderKernelBound(KernelBound, LendCase):
    """Under the kernel's bound on a FUSE answer, a write of bar_swap waiting for a driver that does
    not let go is answered ETIMEDOUT at the wait limit (750 ms under 1 s), and the die still comes
    back once the driver lets go: the writer learns why, the mount lives (fs/dies_wait_limit.c)."""

    def test_a_return_past_the_limit_fails_and_the_die_still_comes_back(self):
        self.assertEqual(self.slot()["wait_limit_ms"], "750")
        a = self.lent(1)
        user = self.cli("use", 1, "-", stdin=True)
        self.assertTrue(user.stdout.readline().startswith("using 1 through nvidia"))
        self.assertEqual(a.ask("driver bar_swap"), ("DRIVER", errno.ETIMEDOUT))
        self.assertRegex(self.node.log(), r"notice: die 1: pid \d+ waited \d+ ms for its lent die to come back, "
                                          r"as long as the kernel's bound on a FUSE answer lets a request wait: "
                                          r"answered ETIMEDOUT; the die still comes back")
        self.assertIn("nvidia to let go of die 1", self.slot()["waiting_on"])
        self.assertEqual(self.info(1)["state"], "returning")
        user.stdin.close()  # the user lets go: the driver lets go, the die is back
        # The arbiter sees it back at its next look (the log's line), and only then lets I/O through.
        wait_until(lambda: "die 1 is back on bar_swap" in self.node.log(), what="the die to come back")
        self.assertEqual(self.driver(1), "bar_swap")
        self.assertEqual(a.ask("write"), ("WRITE", 0))  # the lender holds it again, on bar_swap
        self.assertRegex(self.node.read("metrics"), r"accelfs_dies_waits_timed_out_total 1\n")
        self.assertNotIn("was aborted while still mounted", self.node.log())


class _Mount:
    """What a Lender needs of a node: paths below a mountpoint."""

    def __init__(self, mnt):
        self.mnt = mnt

    def path(self, *parts):
        return os.path.join(self.mnt, *parts)


@unittest.skipIf(os.environ.get("ACCELFS_NO_VALGRIND") or not shutil.which("valgrind"),
                 "valgrind is not available here, or the build is sanitized (ASan and valgrind exclude each other)")
class UnderValgrind(unittest.TestCase):
    def test_lend_return_and_lease_with_the_daemon_under_valgrind(self):
        with daemon_under_valgrind(self, os.path.join("dies", "slot"), extra=[f"--sim={TOPOLOGY_FILE}"]) as mnt:
            m = _Mount(mnt)
            with open(m.path("dies", "lease_ms"), "w") as f:
                f.write("500")
            lender = Lender(m, 1, "nvidia")
            try:
                self.assertEqual(lender.said(), ("GOT", None))
                self.assertEqual(lender.said(), ("LEND", 0))
                self.assertEqual(lender.ask("read"), ("READ", errno.EBUSY))
                self.assertEqual(lender.ask("driver bar_swap"), ("DRIVER", 0))
                self.assertEqual(lender.ask("driver nvidia"), ("DRIVER", 0))
                w = Opener(m.path("dies", "2", "vram"))
                # the lease returns the lent die first, then revokes the lender and serves the waiter
                self.assertEqual(w.result()[0], "GOT")
                self.assertEqual(lender.ask("read"), ("READ", errno.ETIME))
                with open(m.path("dies", "1", "driver")) as f:
                    self.assertEqual(f.read(), "bar_swap\n")
                with open(m.path("dies", "slot")) as f:
                    self.assertIn("holder: pid=", f.read())
                w.release()
                lender.close()
            finally:
                lender.reap()


if __name__ == "__main__":
    unittest.main(verbosity=2)
