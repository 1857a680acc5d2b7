# SPDX-License-Identifier: MIT
"""Every document (node.json, metrics, mig/map, dies/slot) checked for internal consistency while
the node churns (issue 20)."""
import json
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


if __name__ == "__main__":
    unittest.main()
