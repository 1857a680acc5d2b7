# SPDX-License-Identifier: MIT
"""Cards that are away: restarts forget nothing.  A card absent when the daemon starts keeps its
jobs' records, attachments and reclaim settings, and is shown (absent, its jobs lost) until it is
back; a card that appears after the start, or comes back, joins the tree without a restart, with
its jobs and their containers.  Containers are stood in for by plain processes, as in
test_attachments.py; the card leaves and comes back with `accel-smi sim remove/add`."""
import errno
import json
import os
import subprocess
import unittest

from harness import NodeTestCase, wait_until

PROF = ("ppu5", "mig", "4g.48gb")
CID = "5b1d0c2e9a7f" + "0a1b" * 13  # 64 hex digits, as podman's
OTHER = "7c3e2d1f0b9a" + "1c2d" * 13


class AbsentCase(NodeTestCase):
    def setUp(self):
        super().setUp()
        self.procs = []

    def tearDown(self):
        for p in self.procs:
            if p.poll() is None:
                p.kill()
                p.wait()
        super().tearDown()

    def process(self):
        p = subprocess.Popen(["sleep", "1000"])
        self.procs.append(p)
        return p

    def job(self, name, *more):
        return self.node.path(*PROF, name, *more)

    def write(self, path, text):
        with open(path, "w") as f:
            f.write(text)

    def attach(self, name, pid, cid=CID, prof=PROF):
        self.write(self.node.path(*prof, name, "containers"), f"attach {cid} {pid}\n")

    def status(self, name, prof=PROF):
        return self.node.keyvals(*prof, name, "status")

    def containers(self, name, prof=PROF):
        return [dict(f.split("=", 1) for f in line.split()) for line in
                self.node.read(*prof, name, "containers").splitlines()]

    def registry(self):
        """attachments.json as {job: (reclaim, [container ids])}."""
        with open(os.path.join(self.node.state, "attachments.json")) as f:
            doc = json.load(f)
        out = {}
        for name, e in doc.items():
            out[name] = (e.get("reclaim", "manual"), sorted(c["id"] for c in e.get("containers", [])))
        return out

    def ppus(self):
        return sorted(d for d in os.listdir(self.node.mnt) if d.startswith("ppu"))

    def card(self, verb, index=5):
        self.node.smi("ppu", "sim", verb, "-i", index)

    def swept(self, job):
        """Proof that the reclaimer has run a pass since this start: it cleared job's dead container."""
        wait_until(lambda: f"{job}: container {OTHER[:12]} has exited" in self.node.log(),
                   what=f"the sweep to clear {job}'s dead container")

    def a_dead_container_on_ppu3(self):
        """job 'witness' on ppu3 whose container dies while no daemon runs: its clearing marks a sweep."""
        n = self.node
        os.mkdir(n.path("ppu3", "mig", "4g.48gb", "witness"))
        w = self.process()
        self.attach("witness", w.pid, cid=OTHER, prof=("ppu3", "mig", "4g.48gb"))
        return w

    def carve_held(self):
        """On ppu5: job1 given to a container, when-detached; job2 when-detached, never given to one."""
        os.mkdir(self.job("job1"))
        os.mkdir(self.job("job2"))
        p = self.process()
        self.attach("job1", p.pid)
        self.write(self.job("job1", "reclaim"), "when-detached\n")
        self.write(self.job("job2", "reclaim"), "when-detached\n")
        return p


class RestartWithACardAbsent(AbsentCase):
    def test_restart_with_a_card_absent_keeps_every_attachment_and_reclaim_setting(self):
        n = self.node
        p = self.carve_held()
        before = {j: self.status(j) for j in ("job1", "job2")}
        uuid5 = n.keyvals("ppu5", "info")["uuid"]
        registry = self.registry()
        self.assertEqual(registry["job1"], ("when-detached", [CID]))
        self.assertEqual(registry["job2"], ("when-detached", []))
        w = self.a_dead_container_on_ppu3()
        n.kill9()
        w.kill()
        w.wait()
        self.card("remove")
        n.start()
        self.swept("witness")
        # nothing of ppu5's jobs was forgotten, on disk or in the tree
        after = self.registry()
        self.assertEqual(after.get("job1"), ("when-detached", [CID]), after)
        self.assertEqual(after.get("job2"), ("when-detached", []), after)
        self.assertEqual(len(self.ppus()), 16, "the absent ppu5 is shown")
        info = n.keyvals("ppu5", "info")
        self.assertTrue(info["state"].startswith("absent: "), info["state"])
        self.assertEqual(info["uuid"], uuid5)
        st = self.status("job1")
        self.assertEqual(st["state"], "lost")
        self.assertIn("ppu5 is absent", st["reason"])
        self.assertEqual(st["reclaim"], "when-detached")
        for key in ("gi", "ci", "uuid", "placement"):
            self.assertEqual(st[key], before["job1"][key], key)
        self.assertIn(f"container: {CID} pid={p.pid}", n.read(*PROF, "job1", "status"))
        self.assertEqual([c["id"] for c in self.containers("job1")], [CID])
        self.assertEqual(n.read(*PROF, "job1", "reclaim"), "when-detached\n")
        self.assertEqual(n.read(*PROF, "job2", "reclaim"), "when-detached\n")
        self.assertErrno(errno.ENODEV, n.read, *PROF, "job1", "devices")
        # the container lives: the job is busy, absent card or not
        self.assertErrno(errno.EBUSY, os.rmdir, self.job("job1"))
        self.assertIn(f"job1 is attached to 1 container: {CID[:12]}", n.read(*PROF, "last_error"))
        self.assertTrue(os.path.isdir(self.job("job1")))
        # nothing is carved on a card that is not there, and no other job takes its jobs' names
        self.assertErrno(errno.ENODEV, os.mkdir, self.job("job3"))
        self.assertIn("ppu5 is absent", n.read(*PROF, "last_error"))
        self.assertErrno(errno.EEXIST, os.mkdir, n.path("ppu4", "mig", "4g.48gb", "job1"))
        dev = [d for d in json.loads(n.read("node.json"))["devices"] if d["name"] == "ppu5"][0]
        self.assertEqual(dev["state"], "absent")
        # a second restart with the card still away keeps them too
        n.restart()
        self.assertEqual(self.registry().get("job1"), ("when-detached", [CID]))
        self.assertErrno(errno.EBUSY, os.rmdir, self.job("job1"))

        # the card back: joins at once, its jobs ready with the same identity and their containers
        self.card("add")
        wait_until(lambda: n.keyvals("ppu5", "info")["state"] == "ok", what="ppu5 to come back")
        st = self.status("job1")
        self.assertEqual(st["state"], "ready")
        for key in ("gi", "ci", "uuid", "placement"):
            self.assertEqual(st[key], before["job1"][key], key)
        self.assertEqual(st["reclaim"], "when-detached")
        self.assertEqual([c["id"] for c in self.containers("job1")], [CID])
        self.assertEqual(self.status("job2")["state"], "ready")
        self.assertEqual(n.read(*PROF, "job2", "reclaim"), "when-detached\n")
        self.assertErrno(errno.EBUSY, os.rmdir, self.job("job1"))
        # and they survive a restart with the card present
        n.kill9()
        n.start()
        self.assertEqual(self.status("job1")["reclaim"], "when-detached")
        self.assertEqual([c["id"] for c in self.containers("job1")], [CID])
        self.assertErrno(errno.EBUSY, os.rmdir, self.job("job1"))
        # the container ends: the when-detached job is given back by the reclaimer
        p.kill()
        p.wait()
        wait_until(lambda: not os.path.exists(self.job("job1")), what="job1 to be reclaimed")
        self.assertEqual(n.available("ppu5", "4g.48gb"), 1, "job2 holds the other placement")

    def test_a_container_that_died_while_its_card_was_away_is_reclaimed_once_the_card_is_back(self):
        n = self.node
        p = self.carve_held()
        os.rmdir(self.job("job2"))
        w = self.a_dead_container_on_ppu3()
        n.kill9()
        w.kill()
        w.wait()
        self.card("remove")
        n.start()
        p.kill()
        p.wait()
        self.swept("witness")
        wait_until(lambda: "job1: its last container is gone" in n.log(), what="the reclaimer to see job1 due")
        # the card is away: the job waits for it, with its policy, rather than being forgotten
        self.assertTrue(os.path.isdir(self.job("job1")))
        self.assertEqual(self.registry().get("job1"), ("when-detached", []))
        self.assertEqual(self.containers("job1"), [])
        self.assertIn("ppu5 is absent", n.log())
        self.card("add")
        wait_until(lambda: not os.path.exists(self.job("job1")), what="job1 to be reclaimed once ppu5 is back")
        # the job leaves the tree when the removal publishes; the reclaimer says so just after
        wait_until(lambda: "job1: reclaimed (reclaim when-detached)" in n.log(), what="the reclaimer to say so")
        self.assertEqual(n.available("ppu5", "4g.48gb"), 2, "the instance was destroyed")
        gis = n.smi("ppu", "mig", "-i", 5, "-lgi", check=False).stdout
        self.assertNotIn("4g48gb", gis)

    def test_rmdir_on_an_absent_card_forgets_the_job_and_its_instance_becomes_an_orphan(self):
        n = self.node
        os.mkdir(self.job("job1"))
        n.kill9()
        self.card("remove")
        n.start()
        self.assertEqual(self.status("job1")["state"], "lost")
        records = os.path.join(n.state, "records", "ppu")
        self.assertTrue(any(os.listdir(os.path.join(records, d)) for d in os.listdir(records)))
        os.rmdir(self.job("job1"))
        self.assertFalse(os.path.exists(self.job("job1")))
        self.assertFalse(any(f.endswith(".json") for d in os.listdir(records)
                             for f in os.listdir(os.path.join(records, d))), "the record is deleted")
        self.assertIn("job1: forgotten", n.log())
        # with no job left, the absent card is no longer shown
        wait_until(lambda: "ppu5" not in self.ppus(), what="ppu5 to leave the tree")
        self.assertEqual(len(self.ppus()), 15)
        # back with the instance still carved: nobody owns it, and it is swept as an orphan
        self.card("add")
        wait_until(lambda: "ppu5" in self.ppus(), what="ppu5 to come back")
        wait_until(lambda: n.available("ppu5", "4g.48gb") == 2, what="the orphan to be reclaimed")
        self.assertIn("ppu5: reclaimed orphan GPU instance", n.log())


class CardsComingAndGoing(AbsentCase):
    def test_a_card_added_after_the_start_appears_without_a_restart(self):
        n = self.node
        n.stop()
        self.card("remove")
        n.start()
        self.assertNotIn("ppu5", self.ppus(), "a card without records that is not there is not shown")
        self.assertEqual(len(self.ppus()), 15)
        self.card("add")
        wait_until(lambda: "ppu5" in self.ppus(), what="ppu5 to appear")
        self.assertEqual(n.keyvals("ppu5", "info")["state"], "ok")
        os.mkdir(self.job("job1"))
        self.assertEqual(self.status("job1")["state"], "ready")
        self.assertEqual(n.available("ppu5", "4g.48gb"), 1)

    def test_a_card_removed_while_running_and_added_back(self):
        n = self.node
        p = self.carve_held()
        before = self.status("job1")
        self.card("remove")
        wait_until(lambda: n.keyvals("ppu5", "info")["state"] != "ok", what="ppu5 to be seen gone")
        self.assertIn("GPU_IS_LOST", n.keyvals("ppu5", "info")["state"])
        self.assertErrno(errno.EBUSY, os.rmdir, self.job("job1"))
        self.assertEqual([c["id"] for c in self.containers("job1")], [CID])
        self.assertEqual(self.registry().get("job1"), ("when-detached", [CID]))
        # a restart while it is away shows it absent, with the same attachments
        n.kill9()
        n.start()
        self.assertTrue(n.keyvals("ppu5", "info")["state"].startswith("absent: "))
        self.assertEqual(self.registry().get("job1"), ("when-detached", [CID]))
        self.assertErrno(errno.EBUSY, os.rmdir, self.job("job1"))
        self.card("add")
        wait_until(lambda: n.keyvals("ppu5", "info")["state"] == "ok", what="ppu5 to come back")
        st = self.status("job1")
        self.assertEqual(st["state"], "ready")
        for key in ("gi", "ci", "uuid", "placement"):
            self.assertEqual(st[key], before[key], key)
        self.assertEqual(st["reclaim"], "when-detached")
        self.assertEqual([c["id"] for c in self.containers("job1")], [CID])
        self.assertErrno(errno.EBUSY, os.rmdir, self.job("job1"))
        # removed again while running, without a restart, then back: nothing lost either way
        self.card("remove")
        wait_until(lambda: n.keyvals("ppu5", "info")["state"] != "ok", what="ppu5 to be seen gone again")
        self.card("add")
        wait_until(lambda: n.keyvals("ppu5", "info")["state"] == "ok", what="ppu5 to come back again")
        self.assertEqual(self.status("job1")["uuid"], before["uuid"])
        self.assertEqual([c["id"] for c in self.containers("job1")], [CID])
        os.rmdir(self.job("job2"))
        p.kill()
        p.wait()
        wait_until(lambda: not os.path.exists(self.job("job1")), what="job1 to be reclaimed")


if __name__ == "__main__":
    unittest.main()
