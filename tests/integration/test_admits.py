# SPDX-License-Identifier: MIT
"""What a card can take now (issue 32): health, cordon and layouts reach mkdir and every file a
scheduler reads.  Each observation of the issue is reproduced first: a failed card that keeps taking
jobs (and wins the node-level choice), a cordon nobody but mkdir sees, a T-Head card-level failure
nothing clears, a layout's mode line that never gets there on a busy node.  Then, for every card
state, `available` (the card's and the node's), `placements/*/status`, node.json, metrics and mkdir
itself must say the same thing."""
import errno
import os
import threading
import unittest

from harness import NVIDIA, THEAD, Node, NodeTestCase, load_json, topology_path, wait_until
from invariants import driver_view

P = THEAD["profile"]  # 4g.48gb: two per PPU


def write(path, text):
    with open(path, "w") as f:
        f.write(text)


class AdmitsCase(NodeTestCase):
    def sim(self, family, index, *args, check=True):
        return self.node.smi(family, "sim", *args, "-i", index, check=check)

    def doc(self):
        return load_json(self.node.read("node.json"))

    def dev_json(self, dev):
        for d in self.doc()["devices"]:
            if d["name"] == dev:
                return d
        raise AssertionError(f"{dev} not in node.json")

    def metric(self, name, **labels):
        for line in self.node.read("metrics").splitlines():
            if line.startswith(f"{name}{{") and all(f'{k}="{v}"' in line for k, v in labels.items()):
                return float(line.rsplit(" ", 1)[1])
        raise AssertionError(f"no {name}{labels} in the metrics")

    def first(self, *parts):
        return self.node.read(*parts, "health").splitlines()[0]

    def node_available(self, profile=P):
        return int(self.node.read("mig", profile, "available"))

    def placement_status(self, dev, profile, start):
        return self.node.read(dev, "mig", profile, "placements", str(start), "status")

    def assertRefusedHere(self, dev, profile, err, condition, words):
        """The card takes no new job, and every scheduler-facing file says so, with mkdir's reason."""
        job = f"refused-{dev}"
        self.assertErrno(err, os.mkdir, self.node.path(dev, "mig", profile, job))
        why = self.node.read(dev, "mig", profile, "last_error")
        self.assertIn(words, why)
        self.assertEqual(self.node.available(dev, profile), 0)
        d = self.dev_json(dev)
        self.assertEqual(d["admits"]["new_jobs"], False)
        self.assertEqual(d["admits"]["condition"], condition)
        self.assertIn(words, d["admits"]["why"])
        self.assertTrue(all(p["available"] == 0 for p in d["profiles"]), d["profiles"])
        self.assertEqual(self.metric("accelfs_device_admits_jobs", device=dev), 0)
        self.assertEqual(self.metric("accelfs_device_condition", device=dev, condition=condition), 1)
        self.assertEqual(self.metric("accelfs_profile_available", device=dev, profile=profile), 0)
        for start in os.listdir(self.node.path(dev, "mig", profile, "placements")):
            st = self.placement_status(dev, profile, start)
            if not st.startswith("state: taken"):
                self.assertTrue(st.startswith(f"state: blocked\nblocked: {condition}: "), st)

    def assertTakesJobs(self, dev, profile, condition="ok"):
        d = self.dev_json(dev)
        self.assertEqual(d["admits"], {"new_jobs": True, "condition": condition, "why": None})
        self.assertEqual(self.metric("accelfs_device_admits_jobs", device=dev), 1)
        self.assertGreater(self.node.available(dev, profile), 0)


class FailedCard(AdmitsCase):
    """Observation 1: a failed card keeps taking jobs, and node-level mkdir prefers it."""

    def test_a_card_fallen_off_the_bus_takes_no_job_and_the_node_level_choice_goes_elsewhere(self):
        self.node.mkdir("ppu14", "mig", P, "j1")  # half used: the least-capacity choice would take it
        total = self.node_available()
        self.sim("ppu", 14, "xid", "79")
        wait_until(lambda: self.first("ppu14").startswith("failed: Xid 79"), timeout=30, what="ppu14 failed")
        self.assertRefusedHere("ppu14", P, errno.EIO, "failed", "ppu14 has failed")
        self.assertEqual(self.node_available(), total - 1, "ppu14's placement left the node's sum")
        self.node.mkdir("mig", P, "nl1")
        self.assertFalse(os.path.isdir(self.node.path("ppu14", "mig", P, "nl1")), "the node chose the failed card")
        self.assertEqual(self.first("mig", P, "nl1"), "ok")

    def test_a_degraded_card_stays_usable(self):
        self.node.mkdir("ppu3", "mig", P, "j1")
        self.sim("ppu", 3, "xid", "13")  # an application's fault on the card: the driver asks for nothing
        wait_until(lambda: self.first("ppu3").startswith("degraded"), timeout=30, what="ppu3 degraded")
        self.assertTakesJobs("ppu3", P, "degraded")
        self.node.mkdir("ppu3", "mig", P, "j2")


class FailedGpu(AdmitsCase):
    """Observation 1 on the H200: an Xid whose recovery action is a GPU reset; the driver's reset clears it."""

    def test_an_xid_asking_for_a_reset_fails_the_card_until_the_driver_reports_it_done(self):
        F = NVIDIA
        self.node.mkdir(F["device"], "mig", F["profile"], "j1")
        self.sim("gpu", 0, "xid", "--action", "reset", "79")
        wait_until(lambda: self.first("gpu0").startswith("failed"), timeout=30, what="gpu0 failed")
        self.assertRefusedHere("gpu0", F["profile"], errno.EIO, "failed", "gpu0 has failed")
        self.assertEqual(self.first("gpu0", "mig", F["profile"], "j1").split(":")[0], "failed")
        self.sim("gpu", 0, "recover")
        wait_until(lambda: self.dev_json("gpu0")["admits"]["new_jobs"], timeout=30, what="gpu0 recovered")
        self.assertTakesJobs("gpu0", F["profile"])
        self.node.mkdir(F["device"], "mig", F["profile"], "j2")


class Cordon(AdmitsCase):
    """Observation 2: a cordon is invisible to everything that schedules."""

    def test_a_cordon_reaches_every_file_a_scheduler_reads(self):
        before = self.node_available()
        write(self.node.path("ppu8", "mig", "cordon"), "1\n")
        self.assertRefusedHere("ppu8", P, errno.EBUSY, "cordoned", "ppu8 is cordoned")
        self.assertEqual(self.node_available(), before - 2)
        self.assertTrue(self.dev_json("ppu8")["cordon"])
        self.assertEqual(self.metric("accelfs_device_cordoned", device="ppu8"), 1)
        write(self.node.path("ppu8", "mig", "cordon"), "0\n")
        self.assertTakesJobs("ppu8", P)
        self.assertFalse(self.dev_json("ppu8")["cordon"])
        self.assertEqual(self.node_available(), before)
        self.assertEqual(self.placement_status("ppu8", P, 0), "state: free\nplacement: 0:4\n")
        self.node.mkdir("ppu8", "mig", P, "j1")


class TheadRecovery(AdmitsCase):
    """Observation 4: a T-Head card-level failed never clears; the operator acknowledges it in health."""

    def test_echo_ok_to_health_clears_a_card_level_failure_and_it_stays_cleared(self):
        self.node.mkdir("ppu14", "mig", P, "j1")
        self.sim("ppu", 14, "xid", "79")
        wait_until(lambda: self.first("ppu14").startswith("failed"), timeout=30, what="ppu14 failed")
        self.assertErrno(errno.EINVAL, write, self.node.path("ppu14", "health"), "maybe\n")
        write(self.node.path("ppu14", "health"), "ok\n")
        self.assertEqual(self.first("ppu14"), "ok")
        self.assertEqual(self.first("ppu14", "mig", P, "j1"), "ok")
        self.assertTakesJobs("ppu14", P)
        self.assertEqual(self.metric("accelfs_device_health", device="ppu14", state="failed"), 0)
        self.assertIn("acknowledged", self.node.log())
        self.node.restart()
        self.assertEqual(self.first("ppu14"), "ok", "the acknowledgement is kept in the health book")
        self.node.mkdir("ppu14", "mig", P, "j2")

    def test_only_root_or_the_delegate_acknowledges(self):
        self.sim("ppu", 14, "xid", "79")
        wait_until(lambda: self.first("ppu14").startswith("failed"), timeout=30, what="ppu14 failed")
        mode = os.stat(self.node.path("ppu14", "health")).st_mode & 0o777
        self.assertEqual(mode, 0o644)
        write(self.node.path("ppu14", "health"), "clear\n")
        self.assertEqual(self.first("ppu14"), "ok")


class Identity(AdmitsCase):
    """Observation 5: an Xid on an instance being removed was charged to the next job on the same id."""

    def test_an_event_of_a_removed_instance_is_never_charged_to_the_job_made_on_its_id(self):
        F = NVIDIA
        jobdir = ("gpu0", "mig", F["profile"])
        for n in range(3):
            old, new = f"old{n}", f"new{n}"
            os.mkdir(self.node.path(*jobdir, old))
            gi = self.node.keyvals(*jobdir, old, "status")["gi"]
            # the event thread is held while the instance raises its Xid, is removed and its id taken again
            with self.node.thread_paused("events-gpu"):
                self.sim("gpu", 0, "xid", "-gi", gi, "48")
                os.rmdir(self.node.path(*jobdir, old))
                os.mkdir(self.node.path(*jobdir, new))
                self.assertEqual(self.node.keyvals(*jobdir, new, "status")["gi"], gi, "the id was not reused")
            wait_until(lambda: self.node.log().count("Xid 48") > n, timeout=30, what="the event handled")
            self.assertEqual(self.first(*jobdir, new), "ok")
            self.assertIn(f"is removed job {old}'s", self.node.log())
            self.assertEqual(self.first("gpu0"), "ok")
            self.assertTrue(self.dev_json("gpu0")["admits"]["new_jobs"])
            os.rmdir(self.node.path(*jobdir, new))

    def test_an_event_of_a_reclaimed_orphan_is_never_charged_to_the_job_made_on_its_id(self):
        """A reclaimed orphan (a carve cut between the driver's create and its record) leaves the
        trail a removal does: an Xid it raised, read once a new job has its id, is the orphan's, and
        the log says what was reclaimed and why."""
        n, jobdir = self.node, ("gpu0", "mig", NVIDIA["profile"])
        # the compute instance cannot be made, nor the GPU instance destroyed: an orphan is left
        n.smi("gpu", "sim", "fault", "GpuInstanceCreateComputeInstance", "--ret", "UNKNOWN", "--times", 100)
        n.smi("gpu", "sim", "fault", "GpuInstanceDestroy", "--ret", "UNKNOWN", "--times", 100)
        self.assertErrno(errno.EIO, os.mkdir, n.path(*jobdir, "cut"))
        n.smi("gpu", "sim", "clear-faults")
        gis = sorted(driver_view(n, ["gpu"]).get("gpu0", {}))
        self.assertTrue(gis, "the cut carve left nothing")
        with n.thread_paused("events-gpu"):
            self.sim("gpu", 0, "xid", "-gi", gis[0], "48")
            wait_until(lambda: not driver_view(n, ["gpu"]).get("gpu0"), timeout=3 * n.grace + 10,
                       what="the orphans reclaimed")
            os.mkdir(n.path(*jobdir, "new"))
            self.assertEqual(int(n.keyvals(*jobdir, "new", "status")["gi"]), gis[0], "the id was not reused")
        wait_until(lambda: "Xid 48" in n.log(), timeout=30, what="the event handled")
        self.assertEqual(self.first(*jobdir, "new"), "ok")
        self.assertEqual(self.first("gpu0"), "ok")
        line = [l for l in n.log().splitlines() if "Xid 48" in l][0]
        self.assertIn(f"on GPU instance {gis[0]} belongs to the orphan job cut left", line)
        reclaimed = [l for l in n.log().splitlines() if "reclaimed orphan GPU instance" in l]
        self.assertTrue(reclaimed and all(" notice: " in l and "left by job cut" in l for l in reclaimed), reclaimed)
        os.rmdir(n.path(*jobdir, "new"))

    def test_an_event_after_the_new_job_is_made_is_its_own(self):
        F = NVIDIA
        jobdir = ("gpu0", "mig", F["profile"])
        os.mkdir(self.node.path(*jobdir, "old"))
        os.rmdir(self.node.path(*jobdir, "old"))
        os.mkdir(self.node.path(*jobdir, "new"))
        gi = self.node.keyvals(*jobdir, "new", "status")["gi"]
        # the queue is seen empty once the removal is past: the next event is the new job's
        wait_until(lambda: self.sim("gpu", 0, "xid", "-gi", gi, "13") and
                   self.first(*jobdir, "new").startswith("degraded"), timeout=30, step=0.5,
                   what="the new job's own Xid charged to it")


class LayoutMode(AdmitsCase):
    """Observation 6: a layout's mode line does not cordon, so on a busy node it never gets there."""
    topology = topology_path("layouts.json")

    def test_a_waiting_mode_line_cordons_the_card_until_the_mode_has_changed(self):
        F = NVIDIA
        self.node.mkdir("gpu1", "mig", F["profile"], "user1")
        write(self.node.path("gpu1", "mig", "layout"), "mode disabled\n")
        wait_until(lambda: self.dev_json("gpu1")["admits"]["condition"] == "mode-pending", timeout=10,
                   what="gpu1 mode-pending")
        self.assertRefusedHere("gpu1", F["profile"], errno.EBUSY, "mode-pending", "layout's mode line")
        self.assertTrue(self.dev_json("gpu1")["cordon"])
        self.assertEqual(self.dev_json("gpu1")["layout"]["pending"], 1)
        self.assertEqual(self.metric("accelfs_device_mode_pending", device="gpu1"), 1)
        # node-level mkdir goes to another card
        self.node.mkdir("mig", F["profile"], "nl1")
        self.assertFalse(os.path.isdir(self.node.path("gpu1", "mig", F["profile"], "nl1")))
        os.rmdir(self.node.path("gpu1", "mig", F["profile"], "user1"))
        wait_until(lambda: self.node.read("gpu1", "mig", "mode") == "disabled\n", timeout=30,
                   what="gpu1's mode disabled once it emptied")
        wait_until(lambda: self.dev_json("gpu1")["admits"]["condition"] == "mig-disabled", timeout=10,
                   what="gpu1 mig-disabled")
        self.assertFalse(self.dev_json("gpu1")["cordon"])

    def test_a_mode_the_driver_holds_pending_takes_no_job(self):
        F = NVIDIA
        self.assertErrno(errno.EIO, write, self.node.path("gpu2", "mig", "mode"), "disabled\n")
        self.assertRefusedHere("gpu2", F["profile"], errno.EBUSY, "mode-pending", "pending")


ERRNO = {"cordoned": errno.EBUSY, "draining": errno.EBUSY, "mode-pending": errno.EBUSY, "failed": errno.EIO,
         "absent": errno.ENODEV, "refused": errno.EBUSY}


class Churn(AdmitsCase):
    """For every card state, every scheduler-facing file agrees with mkdir's answer, under churn."""

    def card_states(self):
        """ppu3 ok, ppu4 cordoned, ppu5 failed, ppu6 degraded, ppu7 mode-pending (a layout's mode line
        waiting for a user's job), ppu9 refused (off the bus with a job)."""
        self.node.mkdir("ppu7", "mig", P, "user7")
        self.node.mkdir("ppu9", "mig", P, "user9")
        write(self.node.path("ppu4", "mig", "cordon"), "1\n")
        self.sim("ppu", 5, "xid", "79")
        self.sim("ppu", 6, "xid", "13")
        write(self.node.path("ppu7", "mig", "layout"), "mode disabled\n")
        self.sim("ppu", 9, "remove")
        want = {"ppu3": "ok", "ppu4": "cordoned", "ppu5": "failed", "ppu6": "degraded", "ppu7": "mode-pending",
                "ppu9": "refused"}
        wait_until(lambda: all(self.dev_json(d)["admits"]["condition"] == c for d, c in want.items()), timeout=30,
                   what=f"the cards in {want}")
        return want

    def assertAgree(self, quiet=True):
        """Every card: node.json, metrics, available, placements and mkdir say one thing; the node's sum too
        (while jobs come and go, quiet=False: the numbers of the cards that take jobs move between reads)."""
        doc = self.doc()
        metrics = self.node.read("metrics")
        node_sum = 0
        for d in doc["devices"]:
            name, adm = d["name"], d["admits"]
            self.assertIn(f'accelfs_device_admits_jobs{{device="{name}"}} {int(adm["new_jobs"])}\n', metrics)
            self.assertIn(f'accelfs_device_condition{{device="{name}",condition="{adm["condition"]}"}} 1\n', metrics)
            prof = {p["name"]: p for p in d["profiles"]}
            if P in prof:
                node_sum += prof[P]["available"]
            if not d["name"].startswith("ppu") or d["state"] == "absent":
                self.assertFalse(adm["new_jobs"]) if d["state"] == "absent" else None
                continue
            avail = self.node.available(name, P) if P in prof else 0
            if quiet or not adm["new_jobs"]:
                self.assertEqual(avail, prof[P]["available"] if P in prof else 0, name)
            if not adm["new_jobs"]:
                self.assertEqual(avail, 0, name)
                for start in os.listdir(self.node.path(name, "mig", P, "placements")) if P in prof else ():
                    st = self.placement_status(name, P, start)
                    self.assertTrue(st.startswith("state: taken") or st.startswith("state: blocked\n"), st)
                if P in prof:
                    self.assertErrno(ERRNO[adm["condition"]], os.mkdir, self.node.path(name, "mig", P, "probe"))
                    self.assertTrue(self.node.read(name, "mig", P, "last_error").endswith(f" {adm['why']}\n"))
            elif avail and quiet:
                os.mkdir(self.node.path(name, "mig", P, "probe"))
                os.rmdir(self.node.path(name, "mig", P, "probe"))
        if quiet:
            self.assertEqual(self.node_available(), node_sum)

    def churn(self, stop, errors, who):
        n = 0
        while not stop.is_set():
            job = f"c{who}-{n}"
            n += 1
            try:
                os.mkdir(self.node.path("mig", P, job))
            except OSError as e:
                if e.errno != errno.ENOSPC:
                    errors.append(f"mkdir {job}: {e}")
                continue
            dev = os.readlink(self.node.path("mig", P, job, "device")).rstrip("/").split("/")[-1]
            if dev in self.held:
                errors.append(f"{job} landed on {dev}, which takes no job")
            os.rmdir(self.node.path("mig", P, job))

    def test_every_scheduler_file_agrees_with_mkdir_in_every_state_under_churn(self):
        want = self.card_states()
        for rnd in range(3):
            doc = self.doc()
            self.held = {d["name"] for d in doc["devices"] if not d["admits"]["new_jobs"]}
            stop, errors = threading.Event(), []
            threads = [threading.Thread(target=self.churn, args=(stop, errors, i)) for i in range(3)]
            for t in threads:
                t.start()
            try:
                for _ in range(5):
                    self.assertAgree(quiet=False)  # the held cards' files, while jobs come and go elsewhere
            finally:
                stop.set()
                for t in threads:
                    t.join()
            self.assertEqual(errors, [])
            self.assertAgree()
            # the states move: the cordon lifted or laid again, the failed card acknowledged or failed again
            write(self.node.path("ppu4", "mig", "cordon"), "0\n" if rnd % 2 == 0 else "1\n")
            if rnd % 2 == 0:
                write(self.node.path("ppu5", "health"), "ok\n")
            else:
                self.sim("ppu", 5, "xid", "79")
                wait_until(lambda: self.dev_json("ppu5")["admits"]["condition"] == "failed", timeout=30,
                           what="ppu5 failed again")
        self.assertEqual(want["ppu9"], self.dev_json("ppu9")["admits"]["condition"])
        self.sim("ppu", 9, "add")


if __name__ == "__main__":
    unittest.main()
