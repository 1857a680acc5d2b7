# SPDX-License-Identifier: MIT
"""Health: the driver's events, attributed to the jobs they touch (and to no other), in
<device>/health, <job>/health, node.json and the metrics; through bursts, carves and reclaims,
driver errors, a card that falls off the bus and kill -9.  The simulated drivers raise the events
through the same event API a real driver answers (accel-smi sim xid/ecc/recover)."""
import errno
import os
import re
import subprocess
import threading
import unittest

from harness import NVIDIA, THEAD, NodeTestCase, load_json, wait_until
from test_attachments import CID, HOOK


class Health(NodeTestCase):
    F = NVIDIA

    # -- helpers ---------------------------------------------------------------
    def jobdir(self, job, device=None):
        return (device or self.F["device"], "mig", self.F["profile"], job)

    def mkjob(self, job, device=None):
        os.mkdir(self.node.path(*self.jobdir(job, device)))
        st = self.node.keyvals(*self.jobdir(job, device), "status")
        return int(st["gi"]), int(st["ci"])

    def health(self, job=None, device=None):
        parts = self.jobdir(job, device) if job else (device or self.F["device"],)
        return self.node.read(*parts, "health")

    def first(self, job=None, device=None):
        return self.health(job, device).splitlines()[0]

    def events(self, job=None, device=None):
        return int(re.search(r"^events: (\d+)", self.health(job, device), re.M).group(1))

    def sim(self, *args, index=None, check=True):
        return self.node.smi(self.F["family"], "sim", *args, "-i", self.F["index"] if index is None else index,
                             check=check)

    def xid(self, xid, gi=None, ci=None, *more, index=None):
        where = (["-gi", gi] if gi is not None else []) + (["-ci", ci] if ci is not None else [])
        return self.sim("xid", *where, *more, xid, index=index)

    def until(self, pred, what):
        wait_until(pred, timeout=30, what=what)

    def metric(self, name, **labels):
        want = ",".join(f'{k}="{v}"' for k, v in labels.items())
        for line in self.node.read("metrics").splitlines():
            if line.startswith(f"{name}{{") and all(f'{k}="{v}"' in line for k, v in labels.items()):
                return float(line.rsplit(" ", 1)[1])
        raise AssertionError(f"no {name}{{{want}}} in the metrics")

    def node_json_job(self, job):
        doc = load_json(self.node.read("node.json"))
        for d in doc["devices"]:
            for j in d["jobs"]:
                if j["name"] == job:
                    return j
        raise AssertionError(f"{job} not in node.json")

    # -- attribution -------------------------------------------------------------
    def test_every_file_says_ok_before_anything_happens(self):
        self.mkjob("j1")
        self.assertEqual(self.first("j1"), "ok")
        self.assertEqual(self.first(), "ok")
        self.assertEqual(self.node_json_job("j1")["health"]["state"], "ok")
        self.assertEqual(self.metric("accelfs_job_health", job="j1", state="ok"), 1)

    def test_an_instance_event_touches_its_job_and_no_other(self):
        gi, ci = self.mkjob("j1")
        self.mkjob("j2")
        self.xid(48, gi, ci)
        self.until(lambda: self.first("j1").startswith("failed: Xid 48: double-bit ECC error"), "j1 failed")
        h = self.health("j1")
        self.assertIn("\nxid: 48\n", h)
        self.assertIn(f"\nscope: gpu instance {gi} compute instance {ci}\n", h)
        self.assertRegex(h, r"\ntime: \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ\n")
        self.assertIn("\nrecovery: ", h)
        self.assertEqual(self.first("j2"), "ok")
        self.assertEqual(self.events("j2"), 0)
        self.assertEqual(self.first(), "ok", "a fault of one instance leaves the card ok")
        j = self.node_json_job("j1")["health"]
        self.assertEqual((j["state"], j["xid"], j["scope"]["gi"], j["events"]), ("failed", 48, gi, {"48": 1}))
        self.assertEqual(self.metric("accelfs_job_health", job="j1", state="failed"), 1)
        self.assertEqual(self.metric("accelfs_job_health", job="j2", state="ok"), 1)
        self.assertEqual(self.metric("accelfs_health_events_total", job="j1", xid="48"), 1)

    def test_a_card_event_touches_every_job_on_the_card_and_names_them(self):
        self.mkjob("j1")
        self.mkjob("j2")
        self.xid(62)
        self.until(lambda: self.first().startswith("failed: Xid 62"), "the card failed")
        for job in ("j1", "j2", None):
            h = self.health(job)
            self.assertTrue(h.startswith("failed: Xid 62: internal micro-controller halt\n"), h)
            self.assertIn("\nscope: card\njobs touched: j1 j2\n", h)
        self.assertEqual(self.node_json_job("j2")["health"]["touched"], "j1 j2")
        # a job made after the fault was not touched by it
        self.node.smi(self.F["family"], "mig", "-i", self.F["index"], "-lgi")
        os.rmdir(self.node.path(*self.jobdir("j2")))
        # a failed card takes no new job (issue 32) until the operator acknowledges it (or a reset is reported)
        self.assertEqual(self.node.errno_of(self.mkjob, "j3"), errno.EIO)
        with open(self.node.path(self.F["device"], "health"), "w") as f:
            f.write("ok\n")
        self.mkjob("j3")
        self.assertEqual(self.first("j3"), "ok")

    def test_an_unknown_instance_goes_to_the_card_and_the_log(self):
        self.mkjob("j1")
        self.xid(31, 6, 0)
        self.until(lambda: self.first().startswith("degraded: Xid 31"), "the card degraded")
        self.assertIn("on GPU instance 6, which no job holds", self.first())
        self.assertEqual(self.first("j1"), "ok")
        self.assertIn("Xid 31 on GPU instance 6 compute instance 0, which no job holds", self.node.log())
        self.assertEqual(self.metric("accelfs_health_events_total", job="", xid="31"), 1)

    def test_poll_wakes_on_a_change_of_health(self):
        gi, ci = self.mkjob("j1")
        w = self.waiter(self.node.path(*self.jobdir("j1"), "health"))
        self.xid(13, gi, ci)
        rc, out, err = w.result()
        self.assertEqual(rc, 0, err)
        self.assertTrue(out.startswith("degraded: Xid 13"), out)

    # -- bursts, carves and reclaims ---------------------------------------------
    def test_a_burst_during_carves_and_reclaims_reaches_exactly_its_job(self):
        gi, ci = self.mkjob("steady")
        errors = []

        def churn():
            try:
                for i in range(15):
                    self.mkjob(f"c{i}")
                    os.rmdir(self.node.path(*self.jobdir(f"c{i}")))
            except Exception as e:  # reported below: a carve must never be refused by health
                errors.append(e)

        other = self.F["other_device"]
        if other:
            self.mkjob("elsewhere", device=other)
        t = threading.Thread(target=churn)
        t.start()
        self.xid(13, gi, ci, "--count", 300)
        self.xid(43, gi, ci, "--count", 200)
        self.xid(63, None, None, "--count", 100)  # the card's: every job on it at that moment
        t.join(timeout=300)
        self.assertFalse(t.is_alive(), "carves and reclaims went on while the events came")
        self.assertEqual(errors, [])
        self.until(lambda: self.events("steady") == 600, "600 events on steady")
        self.assertEqual(self.metric("accelfs_health_events_total", job="steady", xid="13"), 300)
        self.assertEqual(self.metric("accelfs_health_events_total", job="steady", xid="43"), 200)
        self.assertEqual(self.metric("accelfs_health_events_total", job="steady", xid="63"), 100)
        self.assertEqual(self.events(), 100, "the card counts its own events, none of an instance's")
        for line in self.node.read("metrics").splitlines():
            if line.startswith("accelfs_health_events_total{") and 'job="steady"' not in line:
                self.assertIn('xid="63"', line, f"an instance's event counted elsewhere: {line}")
                self.assertIn(f'device="{self.F["device"]}"', line, f"another card's job touched: {line}")
        if other:
            self.assertEqual(self.first("elsewhere", device=other), "ok")
            self.assertEqual(self.events("elsewhere", device=other), 0)

    # -- recovery ------------------------------------------------------------------
    def test_the_gauge_returns_to_ok_after_the_recovery_the_driver_reports(self):
        self.mkjob("j1")
        self.xid(48, None, None, "--action", "reset")
        self.until(lambda: "recovery: GPU_RESET" in self.health("j1"), "the reset asked for")
        self.assertTrue(self.first("j1").startswith("failed: Xid 48"))
        self.assertEqual(self.metric("accelfs_job_health", job="j1", state="failed"), 1)
        self.sim("recover")
        self.until(lambda: self.first("j1") == "ok", "j1 ok again")
        self.assertEqual(self.first(), "ok")
        self.assertEqual(self.metric("accelfs_job_health", job="j1", state="failed"), 0)
        self.assertEqual(self.metric("accelfs_job_health", job="j1", state="ok"), 1)
        self.assertEqual(self.metric("accelfs_health_events_total", job="j1", xid="48"), 1, "counters stay")

    def test_uncorrected_ecc_degrades_the_card_until_the_reset(self):
        self.sim("ecc", "3")
        self.until(lambda: "ecc: corrected=3 uncorrected=0" in self.health(), "3 corrected")
        self.assertEqual(self.first(), "ok")
        self.sim("ecc", "--uncorrected", "1")
        self.until(lambda: self.first().startswith("failed: double-bit ECC error"), "failed")
        self.assertIn("ecc: corrected=3 uncorrected=1", self.health())

    # -- the event thread survives ---------------------------------------------------
    def test_the_event_thread_survives_driver_errors(self):
        gi, ci = self.mkjob("j1")
        self.node.smi(self.F["family"], "sim", "fault", "EventSetWait_v2", "UNKNOWN", "--times", "3")
        self.xid(13, gi, ci)
        self.until(lambda: self.events("j1") == 1, "the first event")
        self.until(lambda: "waiting for the driver's events failed" in self.node.log(), "the failure logged")

        def delivered():
            if self.events("j1") > 1:
                return True
            self.xid(43, gi, ci)  # a set made again sees only what comes after it
            return False

        wait_until(delivered, timeout=60, step=0.5, what="events again after the errors")
        self.assertTrue(self.first("j1").startswith("degraded:"))

    def test_kill9_loses_no_health_the_driver_still_reports(self):
        gi, ci = self.mkjob("j1")
        self.mkjob("j2")
        self.xid(48, gi, ci)
        self.until(lambda: self.first("j1").startswith("failed"), "j1 failed")
        before = self.health("j1")
        self.node.kill9()
        self.node.start()
        self.assertEqual(self.health("j1"), before)
        self.assertEqual(self.first("j2"), "ok")

    def test_a_reset_done_while_the_daemon_was_down_is_seen_at_start(self):
        self.mkjob("j1")
        self.xid(48, None, None, "--action", "reset")
        self.until(lambda: "recovery: GPU_RESET" in self.health("j1"), "the reset asked for")
        before = self.health("j1")
        self.node.kill9()
        self.node.start()
        self.assertEqual(self.health("j1"), before, "the driver still asks for the reset")
        self.node.kill9()
        self.sim("recover")
        self.node.start()
        self.assertEqual(self.first("j1"), "ok")
        self.assertIn("the driver reports the card recovered", self.node.log())

    # -- containers ---------------------------------------------------------------------
    def test_a_failed_job_is_refused_to_new_containers_with_the_reason(self):
        gi, ci = self.mkjob("j1")
        uuid = self.node.keyvals(*self.jobdir("j1"), "status")["uuid"]
        sleeper = subprocess.Popen(["sleep", "1000"])
        self.addCleanup(sleeper.wait)
        self.addCleanup(sleeper.kill)
        self.xid(13, gi, ci)
        self.until(lambda: self.first("j1").startswith("degraded"), "degraded")
        hook = [HOOK, "attach", self.node.path(*self.jobdir("j1")), uuid]
        state = '{"id": "%s", "pid": %d}' % (CID, sleeper.pid)
        res = subprocess.run(hook, input=state, capture_output=True, text=True, timeout=30)
        self.assertEqual(res.returncode, 0, f"a degraded job is still given: {res.stderr}")
        subprocess.run([HOOK, "detach", self.node.path(*self.jobdir("j1")), uuid], input=state, text=True,
                       check=True, timeout=30)
        self.xid(95, gi, ci)
        self.until(lambda: self.first("j1").startswith("failed: Xid 95"), "failed")
        res = subprocess.run(hook, input=state, capture_output=True, text=True, timeout=30)
        self.assertEqual(res.returncode, 1)
        self.assertIn("is failed: Xid 95: uncontained ECC error", res.stderr)
        fd = os.open(self.node.path(*self.jobdir("j1"), "containers"), os.O_WRONLY)
        try:
            with self.assertRaises(OSError) as cm:
                os.write(fd, f"attach {CID} {sleeper.pid} {uuid}\n".encode())
        finally:
            os.close(fd)
        self.assertEqual(cm.exception.errno, errno.EIO)
        self.assertIn("j1 is failed (Xid 95", self.node.read(self.F["device"], "mig", self.F["profile"],
                                                             "last_error"))
        self.assertEqual(self.node.read(*self.jobdir("j1"), "containers").strip(), "")


class HealthThead(Health):
    """The T-Head family: its driver has no recovery-action field or event."""
    F = THEAD

    def test_the_gauge_returns_to_ok_after_the_recovery_the_driver_reports(self):
        self.mkjob("j1")
        self.xid(48)
        self.until(lambda: self.first("j1").startswith("failed: Xid 48"), "failed")
        self.assertIn("\nrecovery: unknown (the driver does not say", self.health("j1"))
        res = self.sim("recover", check=False)
        self.assertNotEqual(res.returncode, 0, "HGML has no recovery action to report")

    def test_a_reset_done_while_the_daemon_was_down_is_seen_at_start(self):
        self.skipTest("HGML reports no recovery action: a stored fault stays (test_kill9_...)")

    def test_uncorrected_ecc_degrades_the_card_until_the_reset(self):
        self.sim("ecc", "--uncorrected", "2")
        self.until(lambda: self.first().startswith("failed: double-bit ECC error"), "failed")
        res = self.sim("ecc", "--location", "sram", "1", check=False)
        self.assertNotEqual(res.returncode, 0, "a PPU counts DRAM errors only")

    def test_a_card_that_falls_off_the_bus_leaves_the_others_watched(self):
        gi, ci = self.mkjob("j1")
        gi4, ci4 = self.mkjob("k1", device="ppu4")
        self.sim("remove")
        self.until(lambda: self.first("j1").startswith("failed: Xid 79: GPU has fallen off the bus"), "j1 failed")
        self.assertEqual(self.first("k1", device="ppu4"), "ok")

        def delivered():
            if self.events("k1", device="ppu4"):
                return True
            self.xid(13, gi4, ci4, index=4)
            return False

        wait_until(delivered, timeout=60, step=0.5, what="ppu4 still watched")
        self.assertTrue(self.first("k1", device="ppu4").startswith("degraded: Xid 13"))
        self.assertTrue(self.first("j1").startswith("failed: Xid 79"), "the fault stays shown")
        self.sim("add")


if __name__ == "__main__":
    unittest.main()
