# SPDX-License-Identifier: MIT
"""Instances accelfs did not make (docs/tree.md, "Foreign instances"): a node partitioned by hand
before accelfs starts keeps its partitions across starts, restarts and kill -9; an instance a carve
left between the driver's create and its record is still accelfs's own and reclaimed; a foreign
instance is adopted as a job through mig/adopt and removed by rmdir; the operator's reclaim (the
--foreign option, a card's mig/foreign) destroys them and says so at notice."""
import errno
import json
import os
import threading
import time
import unittest

from harness import NodeTestCase, wait_until
from invariants import driver_view


def fields(line):
    return dict(f.split("=", 1) for f in line.split() if "=" in f)


def intents_on_disk(state):
    """The intents under STATE/records, "<job>@<start>" each: the slots of each card's intents file
    (core/state/intent_slots.h: 512 bytes, a header line, the key on the next, a free slot starts with 0)
    and any file of its own (<job>@<start>.intent)."""
    keys = []
    for d, _, files in os.walk(os.path.join(state, "records")):
        for f in files:
            if f.endswith(".intent"):
                keys.append(f[: -len(".intent")])
            elif f == "intents":
                with open(os.path.join(d, f), "rb") as fh:
                    data = fh.read()
                for at in range(0, len(data), 512):
                    slot = data[at:at + 512]
                    if slot[:1] not in (b"", b"\0"):
                        keys.append(slot[21:].split(b"\n", 1)[0].decode())
    return keys


class Foreign(NodeTestCase):
    def hand_carve(self, family, index, profile_id):
        """Carved as mig-parted or an operator would: through the driver, behind accelfs's back."""
        self.node.smi(family, "mig", "-i", index, "-cgi", profile_id, "-C")

    def gis(self, family, device):
        return driver_view(self.node, [family]).get(device, {})

    def instance_lines(self, device):
        return self.node.read(device, "mig", "instances").splitlines()

    def passes(self):
        """Long enough for the orphan grace and several poller passes: an orphan would be gone by then."""
        time.sleep(3 * self.grace + 4 * self.poll + 1)

    def write(self, device, name, text):
        """Write <device>/mig/<name> in one write."""
        with open(self.node.path(device, "mig", name), "w") as f:
            f.write(text)

    def test_hand_partitions_survive_start_restart_and_kill9(self):
        n = self.node
        n.stop()
        # partitioned while accelfs is down, before it starts
        self.hand_carve("ppu", 3, 5)
        self.hand_carve("ppu", 3, 5)
        self.hand_carve("gpu", 0, 9)
        before = {"ppu3": self.gis("ppu", "ppu3"), "gpu0": self.gis("gpu", "gpu0")}
        self.assertEqual(len(before["ppu3"]), 2)
        self.assertEqual(len(before["gpu0"]), 1)
        for how in ("start", "restart", "kill -9"):
            with self.subTest(how):
                if how == "start":
                    n.start()
                elif how == "restart":
                    n.restart()
                else:
                    n.kill9()
                    n.start()
                self.passes()
                for dev, fam in (("ppu3", "ppu"), ("gpu0", "gpu")):
                    self.assertEqual(self.gis(fam, dev), before[dev], f"{dev}: partitions changed ({how})")
                    lines = self.instance_lines(dev)
                    self.assertEqual(len(lines), len(before[dev]))
                    for line in lines:
                        self.assertIn("job=-", line)
                        self.assertIn('note="foreign: not made by accelfs; kept', line)
                self.assertEqual(n.available("ppu3", "4g.48gb"), 0)  # counted as taken
                self.assertIn(" foreign", n.read("ppu3", "mig", "map"))
                doc = json.loads(n.read("node.json"))
                ppu3 = [d for d in doc["devices"] if d["name"] == "ppu3"][0]
                self.assertEqual(ppu3["foreign"], "keep")
                self.assertEqual({i["owner"] for i in ppu3["instances"]}, {"foreign"})
                self.assertEqual(n.read("ppu3", "mig", "foreign"), "keep\n")
        self.assertNotIn("destroyed foreign", n.log())
        self.assertNotIn("reclaimed orphan", n.log())

    def test_carve_cut_between_create_and_record_is_ours(self):
        n = self.node
        self.hand_carve("ppu", 4, 5)  # a foreign one on another card, for contrast
        # the compute instance cannot be made and the rollback cannot destroy the GPU instance:
        # what a crash between the driver's create and the record leaves
        n.smi("ppu", "sim", "fault", "GpuInstanceCreateComputeInstance", "--ret", "UNKNOWN", "--times", 100)
        n.smi("ppu", "sim", "fault", "GpuInstanceDestroy", "--ret", "UNKNOWN", "--times", 100)
        self.assertErrno(errno.EIO, os.mkdir, n.path("ppu3", "mig", "4g.48gb", "cut"))
        n.kill9()
        n.smi("ppu", "sim", "clear-faults")
        left = self.gis("ppu", "ppu3")
        self.assertTrue(left, "the cut carve left nothing to recognise")
        intents = intents_on_disk(n.state)
        self.assertTrue(intents and all(k.startswith("cut@") for k in intents), intents)
        n.start()
        # ours: reclaimed as an orphan once its grace is over; the foreign one stays
        wait_until(lambda: not self.gis("ppu", "ppu3"), timeout=3 * self.grace + 10, what="the cut carve reclaimed")
        self.assertIn("ppu3: reclaimed orphan GPU instance", n.log())
        self.assertIn("left by job cut", n.log())
        self.passes()
        self.assertEqual(len(self.gis("ppu", "ppu4")), 1)
        self.assertFalse(intents_on_disk(n.state), "a spent intent was kept")
        os.mkdir(n.path("ppu3", "mig", "4g.48gb", "cut"))  # the name is free again

    def test_adopt_then_rmdir(self):
        n = self.node
        self.hand_carve("ppu", 3, 5)
        wait_until(lambda: n.read("ppu3", "mig", "adopt"), what="the foreign instance to be offered")
        offer = n.read("ppu3", "mig", "adopt").splitlines()
        self.assertEqual(len(offer), 1)
        self.assertTrue(offer[0].endswith(" foreign"), offer)
        f = fields(offer[0])
        self.assertEqual(f["profile"], "4g.48gb")
        # what is refused, with errno and last_error; nothing changes
        bad = {
            "nonsense": ("adopt everything", errno.EINVAL, "unknown word"),
            "no name": (f"gi={f['gi']}", errno.EINVAL, "gi and name are needed"),
            "no such gi": ("gi=99 name=x", errno.ENOENT, "has no GPU instance 99"),
            "another uuid": (f"gi={f['gi']} uuid=MIG-0 name=x", errno.ESTALE, "nothing was adopted"),
            "a layout's name": (f"gi={f['gi']} name=layout-x", errno.EINVAL, "layouts'"),
        }
        for what, (text, code, said) in bad.items():
            with self.subTest(what):
                self.assertErrno(code, self.write, "ppu3", "adopt", text)
                self.assertIn(said, n.read("ppu3", "mig", "last_error"))
        self.assertFalse(os.path.exists(n.path("ppu3", "mig", "4g.48gb", "train")))
        # the listed line, pasted back with a name: atomic, one durable record
        self.write("ppu3", "adopt", f"{offer[0]} name=train\n")
        self.assertEqual(n.read("ppu3", "mig", "last_error"), "")
        st = n.keyvals("ppu3", "mig", "4g.48gb", "train", "status")
        self.assertEqual(st["state"], "ready")
        self.assertEqual(st["uuid"], f["uuid"])
        self.assertEqual(st["gi"], f["gi"])
        self.assertEqual(os.stat(n.path("ppu3", "mig", "4g.48gb", "train")).st_uid, os.getuid())
        self.assertEqual(n.read("ppu3", "mig", "adopt"), "")
        self.assertIn("adopted GPU instance", n.log())
        # a job like any other: across kill -9 and restart
        n.kill9()
        n.start()
        self.assertEqual(n.keyvals("ppu3", "mig", "4g.48gb", "train", "status")["uuid"], f["uuid"])
        self.assertErrno(errno.EBUSY, self.write, "ppu3", "adopt", f"gi={f['gi']} name=again")
        os.rmdir(n.path("ppu3", "mig", "4g.48gb", "train"))
        self.assertEqual(self.gis("ppu", "ppu3"), {})
        self.assertEqual(n.available("ppu3", "4g.48gb"), 2)

    def test_kill9_mid_adopt_leaves_foreign_or_adopted(self):
        """The daemon killed at some point of an adoption: after the restart the instance is foreign
        (no job, no record) or the job (ready, its record), never half; and still there either way."""
        n = self.node
        outcomes = set()
        for round_ in range(6):
            job = f"adopted{round_}"
            if not self.gis("ppu", "ppu3"):
                self.hand_carve("ppu", 3, 5)
            wait_until(lambda: n.read("ppu3", "mig", "adopt"), what="an instance to adopt")
            line = n.read("ppu3", "mig", "adopt").splitlines()[0]
            uuid = fields(line)["uuid"]
            writer = threading.Thread(target=lambda: self.try_write("ppu3", "adopt", f"{line} name={job}"))
            writer.start()
            time.sleep(0.002 * round_)  # a different point of the adoption each round, not a timing assertion
            n.kill9()
            writer.join()
            n.start()
            self.assertEqual(self.gis("ppu", "ppu3") and
                             [g["uuids"].get(0) for g in self.gis("ppu", "ppu3").values()], [uuid])
            records = [f for d, _, fs in os.walk(os.path.join(n.state, "records")) for f in fs
                       if f == f"{job}.json"]
            there = os.path.isdir(n.path("ppu3", "mig", "4g.48gb", job))
            self.assertEqual(bool(records), there, f"round {round_}: record {records}, job shown {there}")
            if there:
                self.assertEqual(n.keyvals("ppu3", "mig", "4g.48gb", job, "status")["uuid"], uuid)
                os.rmdir(n.path("ppu3", "mig", "4g.48gb", job))
                outcomes.add("adopted")
            else:
                self.assertIn('note="foreign:', n.read("ppu3", "mig", "instances"))
                outcomes.add("foreign")
        print(f"kill -9 mid-adopt: outcomes seen {sorted(outcomes)}")

    def subdivide(self, family, index, gi, *ci_profiles):
        """Compute instances made by hand under GPU instance gi: several, or one not covering it."""
        ids = self.node.smi(family, "mig", "-i", index, "-gi", gi, "-lcip", "--ids").stdout.split()
        by_slices = sorted((int(s), int(i)) for i, s in (p.split(":") for p in ids))
        for which in ci_profiles:  # 0: the smallest profile, 1: the next
            self.node.smi(family, "mig", "-i", index, "-gi", gi, "-cci", by_slices[which][1])

    def test_subdivided_foreign_instance_blocks_nothing_else(self):
        """A foreign GPU instance subdivided by hand (two compute instances; one compute instance on
        part of it) is shown as foreign, counted as taken, never destroyed, not adoptable, and the
        rest of its card carves, counts and places as usual."""
        n = self.node
        n.smi("ppu", "mig", "-i", 3, "-cgi", "5:0")  # 4g.48gb at 0:4, no compute instance yet
        n.smi("ppu", "mig", "-i", 5, "-cgi", "5:4")
        gi3, gi5 = list(self.gis("ppu", "ppu3"))[0], list(self.gis("ppu", "ppu5"))[0]
        self.subdivide("ppu", 3, gi3, 0, 0)  # two compute instances of the smallest profile
        self.subdivide("ppu", 5, gi5, 1)  # one compute instance on half of it
        made = {"ppu3": self.gis("ppu", "ppu3"), "ppu5": self.gis("ppu", "ppu5")}
        self.assertEqual([len(made["ppu3"][gi3]["cis"]), len(made["ppu5"][gi5]["cis"])], [2, 1])
        self.write("ppu5", "foreign", "reclaim")  # even when the operator asks, a subdivided one stays
        self.passes()
        for dev, gi in (("ppu3", gi3), ("ppu5", gi5)):
            with self.subTest(dev):
                self.assertEqual(n.keyvals(dev, "info")["state"], "ok", "a subdivided foreign instance refused its card")
                line = [l for l in self.instance_lines(dev) if f"gi={gi} " in l]
                self.assertEqual(len(line), 1, self.instance_lines(dev))
                self.assertIn("job=-", line[0])
                self.assertIn('note="foreign: subdivided by hand', line[0])
                self.assertEqual(n.available(dev, "4g.48gb"), 1)  # taken, and the other placement free
                self.assertEqual(n.read(dev, "mig", "adopt"), "")  # nothing there is one device to adopt
                doc = json.loads(n.read("node.json"))
                d = [d for d in doc["devices"] if d["name"] == dev][0]
                self.assertEqual(d["state"], "ok")
                self.assertEqual([i["owner"] for i in d["instances"]], ["foreign"])
                self.assertIn("taken", n.read(dev, "mig", "4g.48gb", "placements", str(0 if dev == "ppu3" else 4),
                                              "status"))
                self.assertErrno(errno.EBUSY, self.write, dev, "adopt", f"gi={gi} name=sub{dev}")
                self.assertIn("subdivided by hand", n.read(dev, "mig", "last_error"))
                # the rest of the card: carved, at the other placement, and removed
                os.mkdir(n.path(dev, "mig", "4g.48gb", f"j{dev}"))
                self.assertEqual(n.available(dev, "4g.48gb"), 0)
                os.rmdir(n.path(dev, "mig", "4g.48gb", f"j{dev}"))
        # the node-level directory places there too, and every hand-made compute instance is still there
        os.mkdir(n.path("mig", "4g.48gb", "nl"))
        os.rmdir(n.path("mig", "4g.48gb", "nl"))
        self.passes()
        for dev in made:
            self.assertEqual(self.gis("ppu", dev), made[dev], f"{dev}: the hand-made instances changed")
        self.assertNotIn("destroyed foreign", n.log())
        self.assertNotIn("refused", n.log())
        self.write("ppu5", "foreign", "default")

    def try_write(self, device, name, text):
        try:
            self.write(device, name, text)
        except OSError:
            pass  # the daemon was killed under it

    def test_reclaim_is_the_operators_choice_and_said_at_notice(self):
        n = self.node
        n.stop()
        self.hand_carve("ppu", 3, 5)
        self.hand_carve("ppu", 4, 5)
        n.extra = ["--foreign=reclaim"]
        n.start()
        # ppu4 says keep before its grace is over: the card's setting wins over the option
        self.write("ppu4", "foreign", "keep\n")
        wait_until(lambda: not self.gis("ppu", "ppu3"), timeout=3 * self.grace + 10, what="ppu3's foreign reclaimed")
        line = [l for l in n.log().splitlines() if "destroyed foreign GPU instance" in l]
        self.assertEqual(len(line), 1, n.log())
        for what in (" notice: ppu3: ", "compute instance 0", "profile 4g.48gb id 5", "placement 0:4", "MIG-"):
            self.assertIn(what, line[0])
        self.passes()
        self.assertEqual(len(self.gis("ppu", "ppu4")), 1)
        # the card's setting is kept across a restart, without the option too
        n.extra = []
        n.restart()
        self.assertEqual(n.read("ppu4", "mig", "foreign"), "keep\n")
        self.write("ppu4", "foreign", "reclaim")
        wait_until(lambda: not self.gis("ppu", "ppu4"), timeout=3 * self.grace + 10, what="ppu4's foreign reclaimed")
        self.assertErrno(errno.EINVAL, self.write, "ppu4", "foreign", "sometimes")
        self.assertIn("keep", n.read("ppu4", "mig", "last_error"))
        self.write("ppu4", "foreign", "default")
        self.assertEqual(n.read("ppu4", "mig", "foreign"), "keep\n")


if __name__ == "__main__":
    unittest.main()
