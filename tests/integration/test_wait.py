# SPDX-License-Identifier: MIT
"""Waiting for a change without a loop: poll() on a generated file reports
POLLPRI (and POLLERR) once its content differs from what the reader last
read, and accel-wait builds on that for shell scripts."""
import json
import os
import select
import subprocess
import threading
import time
import unittest

from harness import ACCEL_WAIT, NodeTestCase

PROF = ("ppu3", "mig", "4g.48gb")
CID = "7c1d" * 16


def poll_pri(fd, timeout_ms):
    p = select.poll()
    p.register(fd, select.POLLPRI)
    events = p.poll(timeout_ms)
    return events[0][1] if events else 0


class Wait(NodeTestCase):
    def test_poll_is_quiet_until_the_mode_flips(self):
        n = self.node
        fd = os.open(n.path("ppu7", "mig", "mode"), os.O_RDONLY)
        try:
            self.assertEqual(os.pread(fd, 4096, 0), b"enabled\n")
            self.assertEqual(poll_pri(fd, 300), 0, "nothing changed, nothing to report")
            started = time.monotonic()
            threading.Timer(0.3, lambda: n.smi("ppu", "-i", 7, "-mig", 0)).start()
            ev = poll_pri(fd, 10000)
            self.assertTrue(ev & select.POLLPRI, f"woken by the flip (events {ev:#x})")
            self.assertTrue(ev & select.POLLERR)
            self.assertLess(time.monotonic() - started, 9)
            self.assertEqual(os.pread(fd, 4096, 0), b"disabled\n")
            # Read again: the reader has seen it, so poll is quiet again.
            self.assertEqual(poll_pri(fd, 200), 0)
        finally:
            os.close(fd)

    def test_a_carve_wakes_a_reader_of_available(self):
        n = self.node
        fd = os.open(n.path("ppu8", "mig", "4g.48gb", "available"), os.O_RDONLY)
        try:
            self.assertEqual(os.pread(fd, 4096, 0), b"2\n")
            threading.Timer(0.2, lambda: n.mkdir("ppu8", "mig", "4g.48gb", "w")).start()
            ev = poll_pri(fd, 10000)
            self.assertTrue(ev & select.POLLPRI)
            self.assertEqual(os.pread(fd, 4096, 0), b"1\n")
        finally:
            os.close(fd)
        os.rmdir(n.path("ppu8", "mig", "4g.48gb", "w"))

    def test_a_change_before_poll_is_reported_at_once(self):
        n = self.node
        fd = os.open(n.path("ppu9", "mig", "4g.48gb", "available"), os.O_RDONLY)
        try:
            os.pread(fd, 4096, 0)
            n.mkdir("ppu9", "mig", "4g.48gb", "early")
            self.assertTrue(poll_pri(fd, 0) & select.POLLPRI, "changed since the last read")
        finally:
            os.close(fd)
        os.rmdir(n.path("ppu9", "mig", "4g.48gb", "early"))

    def test_last_error_wakes_its_reader(self):
        """last_error changes with no new snapshot: the notifier's tick finds it."""
        n = self.node
        fd = os.open(n.path("ppu10", "mig", "4g.48gb", "last_error"), os.O_RDONLY)
        bad = threading.Timer(0.2, lambda: n.errno_of(os.mkdir, n.path("ppu10", "mig", "4g.48gb", "bad name")))
        try:
            self.assertEqual(os.pread(fd, 4096, 0), b"")
            bad.start()
            self.assertTrue(poll_pri(fd, 10000) & select.POLLPRI)
            self.assertIn(b"job name", os.pread(fd, 4096, 0))
        finally:
            os.close(fd)
            # last_error is set before mkdir answers: its thread may still be in the mount
            bad.join()

    def test_accel_wait_until_a_value(self):
        n = self.node
        threading.Timer(0.3, lambda: n.smi("ppu", "-i", 11, "-mig", 0)).start()
        res = subprocess.run([ACCEL_WAIT, "--until=disabled", "--timeout=20", n.path("ppu11", "mig", "mode")],
                             capture_output=True, text=True, timeout=60)
        self.assertEqual(res.returncode, 0, res.stderr)
        self.assertEqual(res.stdout, "disabled\n")

    def test_accel_wait_times_out_and_refuses_bad_usage(self):
        n = self.node
        res = subprocess.run([ACCEL_WAIT, "--until=disabled", "--timeout=0.5", n.path("ppu12", "mig", "mode")],
                             capture_output=True, text=True, timeout=60)
        self.assertEqual(res.returncode, 1)
        self.assertIn("timed out", res.stderr)
        res = subprocess.run([ACCEL_WAIT], capture_output=True, text=True, timeout=60)
        self.assertEqual(res.returncode, 2)
        self.assertIn("usage", res.stderr)
        res = subprocess.run([ACCEL_WAIT, "--bogus", "x"], capture_output=True, text=True, timeout=60)
        self.assertEqual(res.returncode, 2)


class LoneWaiter(NodeTestCase):
    """A waiter on a file whose content moves without a new snapshot, alone: nothing else is waiting
    and nothing is published, so only the rechecks it starts can wake it.  No --timeout: a waiter
    that is never woken fails the bound of result()."""

    def wait_for(self, parts, change):
        n = self.node
        before = n.read(*parts)
        w = self.waiter(n.path(*parts))
        change()
        rc, out, err = w.result()
        self.assertEqual(rc, 0, err)
        self.assertNotEqual(out, before, "it printed the file as it changed")
        return out

    def test_dies_slot(self):
        out = self.wait_for(("dies", "slot"), lambda: os.close(os.open(self.node.path("dies", "3", "vram"), os.O_RDWR)))
        self.assertIn("swaps: 1\n", out)

    def test_a_dies_info(self):
        out = self.wait_for(("dies", "5", "info"),
                            lambda: os.close(os.open(self.node.path("dies", "5", "vram"), os.O_RDWR)))
        self.assertIn("acquires: 1\n", out)

    def quiet_node_json(self):
        """Until node.json has nothing left to move on its own.  Each read of it shows the usage
        readings it has and asks the sampler for those older than a window (a card's first two, to
        begin with), published after the read: a waiter that read before them would wake for them,
        not for the change the test makes.  Once two reads a window apart agree, an idle node's
        readings say what the last ones said, and move nothing."""
        text = self.node.read("node.json")
        for _ in range(10):
            time.sleep(1.2)
            again = self.node.read("node.json")
            if again == text:
                return
            text = again
        self.fail("node.json kept moving on an idle node")

    def test_node_json_with_the_slot(self):
        """node.json says the slot too, which moves under other processes with nobody counting: a
        waiter's check compares what the slot says (its fingerprint), not only the counts."""
        self.quiet_node_json()
        out = self.wait_for(("node.json",), lambda: os.close(os.open(self.node.path("dies", "4", "vram"), os.O_RDWR)))
        self.assertEqual(json.loads(out)["dies"]["slot"]["swaps"], 1)

    def test_node_json_with_a_usage_reading(self):
        """node.json shows the usage last read: a reading, published with no new snapshot, moves it.

        The waiter's own read is the node's first of node.json: it shows every card and job with no
        reading yet and asks the sampler thread for one of each, which that thread takes and
        publishes after (a scrape never waits for the driver).  Those readings, not a snapshot,
        are what wake it, whatever the timing.  A second reading would not do: an idle simulated
        job reads the same each time, and a reading that says what the last one said moves nothing
        (the waiter is right to sleep on), so a test waiting for one could wait for good."""
        n = self.node
        n.mkdir(*PROF, "use")
        w = self.waiter(n.path("node.json"))
        rc, out, err = w.result()
        self.assertEqual(rc, 0, err)
        devices = json.loads(out)["devices"]
        read = [d["name"] for d in devices if d.get("utilization") is not None]
        read += [j["name"] for d in devices for j in d["jobs"] if j.get("utilization") is not None]
        self.assertTrue(read, "it woke, and what it printed shows a reading")

    def test_last_error_of_a_device_profile(self):
        out = self.wait_for((*PROF, "last_error"), lambda: self.node.errno_of(os.mkdir, self.node.path(*PROF, "a b")))
        self.assertIn("job name 'a b' is not valid", out)

    def test_last_error_of_a_node_level_profile(self):
        out = self.wait_for(("mig", "4g.48gb", "last_error"),
                            lambda: self.node.errno_of(os.mkdir, self.node.path("mig", "4g.48gb", "a b")))
        self.assertIn("job name 'a b' is not valid", out)

    def test_live_files_are_not_rendered_while_waited_on_and_wake_when_they_go(self):
        """holders and processes are live files (docs/tree.md, "Snapshot files and live files"): a
        waiter on them asks neither /proc nor the driver, whatever moves; it wakes when its job goes."""
        n = self.node
        n.mkdir(*PROF, "j")
        st = n.keyvals(*PROF, "j", "status")
        nodes = [d for spec in n.cdi_specs().values() for d in spec["devices"] if d["name"] == "j"]
        cap = [x["hostPath"] for x in nodes[0]["containerEdits"]["deviceNodes"] if "-caps/" in x["path"]][0]

        def queries():
            calls = dict(line.split() for line in n.smi("ppu", "sim", "calls").stdout.splitlines())
            return int(calls.get("DeviceGetComputeRunningProcesses_v3", 0))

        waiters = [self.waiter(n.path(*PROF, "j", f)) for f in ("processes", "holders")]
        before = queries()
        fd = os.open(cap, os.O_PATH)
        try:
            n.smi("ppu", "sim", "busy", "-i", 3, "-gi", st["gi"], "-ci", st["ci"], 1)
            time.sleep(1)  # four of the notifier's rechecks, were these files rechecked
            self.assertEqual(queries(), before, "a waiter on processes asked the driver")
            for w in waiters:
                self.assertIsNone(w.proc.poll(), f"{w.path}: woken with the file still there")
            self.assertIn(f"pid={os.getpid()} ", n.read(*PROF, "j", "holders"), "a read sees what holds it now")
            self.assertNotEqual(n.read(*PROF, "j", "processes"), "", "a read asks the driver now")
            n.smi("ppu", "sim", "busy", "-i", 3, "-gi", st["gi"], "-ci", st["ci"], 0)
        finally:
            os.close(fd)
        os.rmdir(n.path(*PROF, "j"))
        for w in waiters:
            rc, out, err = w.result()
            self.assertEqual((rc, out), (1, ""), f"{w.path}: {err}")
            self.assertIn("went away", err, w.path)


class WakeUps(NodeTestCase):
    """Every waiter is woken by every change of what it reads, the file going away included: then
    accel-wait exits 1 (docs/tree.md, "Waiting for a change")."""

    JOB_FILES = ("status", "devices", "cdi.json", "containers", "reclaim", "holders", "processes")

    def job_files(self, *job):
        names = os.listdir(self.node.path(*job))
        return [f for f in self.JOB_FILES if f in names]

    def assertWentAway(self, w):
        rc, out, err = w.result()
        self.assertEqual((rc, out), (1, ""), f"{w.path}: {err}")
        self.assertIn("went away", err, w.path)

    def test_waiters_on_a_removed_job_exit_1(self):
        n = self.node
        n.mkdir(*PROF, "gone")
        n.mkdir("mig", "4g.48gb", "gone2")
        waiters = [self.waiter(n.path(*PROF, "gone", f)) for f in self.job_files(*PROF, "gone")]
        waiters += [self.waiter(n.path("mig", "4g.48gb", "gone2", f)) for f in self.job_files("mig", "4g.48gb", "gone2")]
        self.assertGreaterEqual(len(waiters), 10)
        os.rmdir(n.path(*PROF, "gone"))
        os.rmdir(n.path("mig", "4g.48gb", "gone2"))
        for w in waiters:
            self.assertWentAway(w)

    def test_a_status_waiter_on_a_job_made_again_exits_1(self):
        n = self.node
        for view in (PROF, ("mig", "4g.48gb")):
            n.mkdir(*view, "again")
            old = n.keyvals(*view, "again", "status")["uuid"]
            w = self.waiter(n.path(*view, "again", "status"))
            os.rmdir(n.path(*view, "again"))
            n.mkdir(*view, "again")
            new = n.keyvals(*view, "again", "status")["uuid"]
            self.assertNotEqual(new, old)
            rc, out, err = w.result()
            self.assertNotIn(old, out, "the removed job's text")
            self.assertEqual((rc, out), (1, ""), err)
            # The new job's own waiter sees the new job.
            w = self.waiter(n.path(*view, "again", "status"), "--until=never")
            os.rmdir(n.path(*view, "again"))
            self.assertWentAway(w)

    def test_a_status_waiter_wakes_when_a_dead_containers_attachment_is_cleared(self):
        n = self.node
        n.mkdir(*PROF, "held")
        p = subprocess.Popen(["sleep", "1000"])
        try:
            with open(n.path(*PROF, "held", "containers"), "w") as f:
                f.write(f"attach {CID} {p.pid}\n")
            self.assertIn(f"container: {CID} pid={p.pid}", n.read(*PROF, "held", "status"))
            status = self.waiter(n.path(*PROF, "held", "status"))
            containers = self.waiter(n.path(*PROF, "held", "containers"))
        finally:
            p.kill()
            p.wait()
        # The daemon sees the container's process gone within a poll interval and clears it.
        rc, out, err = status.result()
        self.assertEqual(rc, 0, err)
        self.assertIn("state: ready\n", out)
        self.assertNotIn("container:", out)
        self.assertEqual(containers.result()[:2], (0, ""))
        os.rmdir(n.path(*PROF, "held"))


if __name__ == "__main__":
    unittest.main()
