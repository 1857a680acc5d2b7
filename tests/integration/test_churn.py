# SPDX-License-Identifier: MIT
"""A search for more of the same (issue 20): waiters on every generated file while everything
churns (jobs made and removed in both views, containers attached and gone, vram opened and closed
by six processes, a die quarantined, a policy and the lease written, a mode flipped), and every
document (node.json, metrics, mig/map, dies/slot) checked for internal consistency meanwhile."""
import os
import subprocess
import sys
import tempfile
import threading
import unittest

import documents
from harness import NodeTestCase, wait_until

PROF = ("ppu3", "mig", "4g.48gb")
CID = "5b0e" * 16

# Opens and closes a vram file until the stop file exists; a quarantined die answers ENODEV.
OPENER = r"""
import os, sys, time
path, stop = sys.argv[1], sys.argv[2]
while not os.path.exists(stop):
    try:
        os.close(os.open(path, os.O_RDWR))
    except OSError:
        time.sleep(0.01)
"""


class Churn(NodeTestCase):
    def setUp(self):
        super().setUp()
        self.tmp = tempfile.mkdtemp(prefix="accelfs-churn-")
        self.stop = os.path.join(self.tmp, "stop")
        self.procs = []

    def tearDown(self):
        with open(self.stop, "w"):
            pass
        for p in self.procs:
            if p.args[0] == "sleep":
                p.kill()
            p.wait(timeout=60)
        os.unlink(self.stop)
        os.rmdir(self.tmp)
        super().tearDown()

    def openers(self, dies):
        for die in dies:
            self.procs.append(subprocess.Popen([sys.executable, "-c", OPENER, self.node.path("dies", str(die), "vram"),
                                                self.stop]))

    def check_documents(self, problems):
        n = self.node
        problems += documents.check_node_json(n.read("node.json"))
        problems += documents.check_metrics(n.read("metrics"))
        problems += documents.check_slot(n.read("dies", "slot"))
        for dev in ("ppu3", "ppu0", "ppu7"):
            try:
                problems += documents.check_map(dev, n.read(dev, "mig", "map"))
            except FileNotFoundError:
                pass

    def test_every_document_shows_the_dies_at_one_instant(self):
        """Six processes open and close vram (the slot swaps all the time): node.json, metrics and
        dies/slot each say what the slot and every die were at one instant."""
        n = self.node
        self.openers(range(6))
        problems = []
        for i in range(150):
            self.check_documents(problems)
        self.assertEqual(problems, [])
        self.assertGreater(int(n.keyvals("dies", "slot")["swaps"]), 20, "the slot moved meanwhile")

    def write(self, *parts_and_text):
        *parts, text = parts_and_text
        with open(self.node.path(*parts), "w") as f:
            f.write(text)

    def generated(self, *tops):
        out = []
        for top in tops:
            for root, dirs, files in os.walk(self.node.path(*top.split("/"))):
                dirs[:] = [d for d in dirs if d != "dev"]
                out += [os.path.relpath(os.path.join(root, f), self.node.mnt) for f in files if f != "vram"]
        return sorted(out)

    def test_every_waiter_wakes_while_everything_churns(self):
        n = self.node
        n.mkdir(*PROF, "k")
        n.mkdir(*PROF, "r")
        files = ["metrics", "node.json"] + self.generated("ppu3", "ppu7", "mig/4g.48gb", "dies/3", "dies/5")
        files += ["dies/slot", "dies/lease_ms"]
        # What the churn below never changes: k's identity files (in each of its views: the profile's,
        # the node-level and its placement's), the cards' and profiles' descriptions, k's placement.
        static = {"ppu3/info", "ppu3/mig/mode", "ppu3/mig/4g.48gb/info", "ppu3/mig/8g.96gb/info",
                  "ppu3/mig/8g.96gb/available", "ppu3/mig/8g.96gb/last_error", "ppu3/mig/4g.48gb/placements/0/status",
                  "ppu7/holders", "ppu7/mig/instances", "dies/3/driver", "dies/5/driver", "dies/3/policy",
                  "dies/5/enabled"}

        def expected(f):
            parts = f.split("/")
            if (f.startswith(("ppu3/mig/", "mig/4g.48gb/")) and "r" in parts[:-1]) or (
                    f.startswith("ppu7/mig/") and len(parts) >= 4):
                return "gone"  # r is removed; ppu7's profiles go with its mode
            if f in static or ("k" in parts[:-1] and parts[-1] in ("reclaim", "devices", "cdi.json", "processes")):
                return "static"
            if parts[-1] == "health":
                return "static"  # no driver event is raised here: every card and job stays ok
            if parts[-1] in ("layout", "layout_status", "cordon") or f in ("ppu3/mig/last_error", "ppu7/mig/last_error"):
                return "static"  # no layout is declared, no card cordoned, no card-level mkdir refused
            if parts[-1] in ("foreign", "adopt"):
                return "static"  # every instance here is a job's: nothing foreign to show or adopt
            if parts[-1] in ("holders", "processes", "utilization"):
                return "static"  # live files: a waiter on one is woken only when it goes (docs/tree.md)
            return "changed"

        waiters = {f: self.waiter(n.path(f)) for f in files}
        self.openers(range(6))
        problems, stop = [], threading.Event()

        def reader():
            while not stop.is_set():
                self.check_documents(problems)

        t = threading.Thread(target=reader)
        t.start()
        held = []
        try:
            os.rmdir(n.path(*PROF, "r"))
            # the simulated nodes cannot be opened for real; an O_PATH descriptor holds them as well
            nodes = [d for spec in n.cdi_specs().values() for d in spec["devices"] if d["name"] == "k"]
            nodes = nodes[0]["containerEdits"]["deviceNodes"]
            held += [os.open(x["hostPath"], os.O_PATH) for x in nodes if x["path"] == "/dev/alixpu_ppu3"]
            held += [os.open(x["hostPath"], os.O_PATH) for x in nodes if "-caps/" in x["path"]][:1]
            for i in range(4):
                n.mkdir(*PROF, f"c{i}")
                n.mkdir("mig", "4g.48gb", f"n{i}")
                sleeper = subprocess.Popen(["sleep", "1000"])
                self.procs.append(sleeper)
                self.write(*PROF, "k", "containers", f"attach {CID} {sleeper.pid}\n")
                self.write(*PROF, f"c{i}", "containers", f"attach {CID} {sleeper.pid}\n")
                self.write(*PROF, f"c{i}", "containers", f"detach {CID}\n")
                sleeper.kill()  # the daemon clears k's attachment: its status and containers change
                n.errno_of(os.mkdir, n.path(*PROF, f"bad name {i}"))
                n.errno_of(os.mkdir, n.path("mig", "4g.48gb", f"bad name {i}"))
                self.write("dies", "3", "enabled", "0\n")
                self.write("dies", "lease_ms", f"{100 * (i + 1)}\n")
                self.write("dies", "5", "policy", "resident\n" if i % 2 == 0 else "pinned\n")
                self.write("dies", "3", "enabled", "1\n")
                os.rmdir(n.path(*PROF, f"c{i}"))
                os.rmdir(n.path("mig", "4g.48gb", f"n{i}"))
            n.smi("ppu", "-i", 7, "-mig", 0)
            wait_until(lambda: n.read("ppu7", "mig", "mode") == "disabled\n", what="ppu7's mode to flip")
            n.smi("ppu", "-i", 7, "-mig", 1)
            wait_until(lambda: n.read("ppu7", "mig", "mode") == "enabled\n", what="ppu7's mode to flip back")
            wait_until(lambda: "container:" not in n.read(*PROF, "k", "status"), what="k's attachment cleared")
            for f in files:
                w = waiters[f]
                if expected(f) == "static":
                    self.assertIsNone(w.proc.poll(), f"{f} did not change, and its waiter is still waiting")
                    continue
                rc, out, err = w.result()
                if expected(f) == "gone":
                    self.assertEqual((rc, out), (1, ""), f"{f} went away: {err}")
                else:
                    self.assertEqual(rc, 0, f"{f} changed: {err}")
        finally:
            stop.set()
            t.join()
            for fd in held:
                os.close(fd)
        self.assertEqual(problems, [])


if __name__ == "__main__":
    unittest.main()
