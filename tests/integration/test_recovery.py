# SPDX-License-Identifier: MIT
"""Restart and recovery, live state and holders: what survives a crash, what
the daemon notices without a restart, and what it cleans up on its own."""
import errno
import os
import subprocess
import time
import unittest

from harness import MIG_FILES, NVIDIA, THEAD, NodeTestCase, wait_until


def status(node, device, profile, job):
    return node.keyvals(device, "mig", profile, job, "status")


class Recovery(NodeTestCase):
    def test_kill9_and_restart_keep_ids_and_uuids(self):
        n = self.node
        os.mkdir(n.path("ppu3", "mig", "4g.48gb", "a"))
        os.mkdir(n.path("ppu3", "mig", "4g.48gb", "b"))
        os.mkdir(n.path("gpu0", "mig", "1g.18gb", "g"))
        before = {j: status(n, d, p, j) for d, p, j in
                  (("ppu3", "4g.48gb", "a"), ("ppu3", "4g.48gb", "b"), ("gpu0", "1g.18gb", "g"))}
        devices_before = n.read("ppu3", "mig", "4g.48gb", "a", "devices")
        n.kill9()
        n.start()
        for (d, p, j) in (("ppu3", "4g.48gb", "a"), ("ppu3", "4g.48gb", "b"), ("gpu0", "1g.18gb", "g")):
            after = status(n, d, p, j)
            for key in ("state", "gi", "ci", "uuid", "placement", "profile_id"):
                self.assertEqual(after[key], before[j][key], f"{d}/{j} {key}")
        self.assertEqual(n.read("ppu3", "mig", "4g.48gb", "a", "devices"), devices_before)
        self.assertEqual(n.available("ppu3", "4g.48gb"), 0)
        # and a clean restart too
        n.restart()
        self.assertEqual(status(n, "ppu3", "4g.48gb", "a")["uuid"], before["a"]["uuid"])
        os.rmdir(n.path("ppu3", "mig", "4g.48gb", "a"))
        self.assertEqual(n.available("ppu3", "4g.48gb"), 1)

    def test_record_without_instance_is_lost_and_fails_closed(self):
        n = self.node
        os.mkdir(n.path("ppu3", "mig", "4g.48gb", "job1"))
        st = status(n, "ppu3", "4g.48gb", "job1")
        n.stop()
        n.smi("ppu", "mig", "-i", 3, "-gi", st["gi"], "-ci", st["ci"], "-dci")
        n.smi("ppu", "mig", "-i", 3, "-gi", st["gi"], "-dgi")
        n.start()
        st2 = status(n, "ppu3", "4g.48gb", "job1")
        self.assertEqual(st2["state"], "lost")
        self.assertIn("no longer exists", st2["reason"])
        self.assertErrno(errno.ENODEV, n.read, "ppu3", "mig", "4g.48gb", "job1", "devices")
        self.assertErrno(errno.ENODEV, n.read, "ppu3", "mig", "4g.48gb", "job1", "cdi.json")
        # the capacity is free: the lost job holds nothing
        self.assertEqual(n.available("ppu3", "4g.48gb"), 2)
        os.rmdir(n.path("ppu3", "mig", "4g.48gb", "job1"))
        self.assertFalse(os.path.exists(n.path("ppu3", "mig", "4g.48gb", "job1")))
        n.restart()
        self.assertFalse(os.path.exists(n.path("ppu3", "mig", "4g.48gb", "job1")))

    def test_instance_lost_while_running_is_seen_live(self):
        n = self.node
        os.mkdir(n.path("ppu3", "mig", "4g.48gb", "job1"))
        st = status(n, "ppu3", "4g.48gb", "job1")
        n.smi("ppu", "mig", "-i", 3, "-gi", st["gi"], "-ci", st["ci"], "-dci")
        n.smi("ppu", "mig", "-i", 3, "-gi", st["gi"], "-dgi")
        wait_until(lambda: status(n, "ppu3", "4g.48gb", "job1")["state"] == "lost", what="job to be lost")

    def reclaim_foreign(self, device):
        """The operator asks for the card's foreign instances to be reclaimed (they are kept by default)."""
        with open(self.node.path(device, "mig", "foreign"), "w") as f:
            f.write("reclaim\n")
        self.assertEqual(self.node.read(device, "mig", "foreign"), "reclaim\n")

    def test_foreign_is_reclaimed_once_idle_when_asked(self):
        n = self.node
        n.smi("ppu", "mig", "-i", 3, "-cgi", 5, "-C")
        # seen live, without a restart: the capacity is taken and the instance listed as foreign
        wait_until(lambda: n.available("ppu3", "4g.48gb") == 1, what="hand-carved instance to show")
        self.assertIn("job=-", n.read("ppu3", "mig", "instances"))
        self.assertIn("foreign: not made by accelfs; kept", n.read("ppu3", "mig", "instances"))
        self.reclaim_foreign("ppu3")
        # then reclaimed after the grace period, said at notice with what it was
        wait_until(lambda: n.available("ppu3", "4g.48gb") == 2, timeout=15, what="foreign reclaim")
        self.assertEqual(n.read("ppu3", "mig", "instances"), "")
        line = [l for l in n.log().splitlines() if "destroyed foreign GPU instance" in l]
        self.assertEqual(len(line), 1, n.log())
        for what in (" notice: ppu3:", "compute instance 0", "profile 4g.48gb id 5", "placement 0:4", "MIG-"):
            self.assertIn(what, line[0])

    def test_busy_orphan_is_left_alone_and_rechecked(self):
        n = self.node
        self.reclaim_foreign("ppu4")
        n.smi("ppu", "mig", "-i", 4, "-cgi", 5, "-C")
        wait_until(lambda: "job=-" in n.read("ppu4", "mig", "instances"), what="orphan to show")
        line = n.read("ppu4", "mig", "instances").splitlines()[0]
        fields = dict(f.split("=", 1) for f in line.split() if "=" in f)
        n.smi("ppu", "sim", "busy", "-i", 4, "-gi", fields["gi"], "-ci", fields["ci"], 1)
        time.sleep(3 * self.grace + 1)
        self.assertIn("job=-", n.read("ppu4", "mig", "instances"), "a busy orphan was destroyed")
        n.smi("ppu", "sim", "busy", "-i", 4, "-gi", fields["gi"], "-ci", fields["ci"], 0)
        wait_until(lambda: n.read("ppu4", "mig", "instances") == "", timeout=15, what="orphan reclaim")

    def test_orphan_on_a_held_card_is_kept(self):
        n = self.node
        self.reclaim_foreign("ppu5")
        holder = subprocess.Popen([*n.smi_cmd("ppu"), "sim", "hold", "-i", "5"])
        try:
            wait_until(lambda: str(holder.pid) in n.read("ppu5", "holders"), what="holder to show")
            n.smi("ppu", "mig", "-i", 5, "-cgi", 5, "-C")
            time.sleep(3 * self.grace + 1)
            self.assertIn("job=-", n.read("ppu5", "mig", "instances"))
            self.assertIn("held", n.read("ppu5", "mig", "instances"))
        finally:
            holder.kill()
            holder.wait()
        wait_until(lambda: n.read("ppu5", "mig", "instances") == "", timeout=15, what="orphan reclaim")


class LiveState(NodeTestCase):
    def test_mode_flip_is_seen_without_restart(self):
        n = self.node
        self.assertEqual(n.read("ppu5", "mig", "mode").strip(), "enabled")
        n.smi("ppu", "-i", 5, "-mig", 0)
        wait_until(lambda: n.read("ppu5", "mig", "mode").strip() == "disabled", what="mode off to show")
        self.assertEqual(sorted(os.listdir(n.path("ppu5", "mig"))), sorted(MIG_FILES))
        self.assertErrno(errno.ENOENT, os.mkdir, n.path("ppu5", "mig", "4g.48gb", "x"))
        n.smi("ppu", "-i", 5, "-mig", 1)
        wait_until(lambda: os.path.isdir(n.path("ppu5", "mig", "4g.48gb")), what="profiles to come back")
        os.mkdir(n.path("ppu5", "mig", "4g.48gb", "x"))

    def test_holders_name_the_processes_and_block_a_mode_change(self):
        n = self.node
        holder = subprocess.Popen([*n.smi_cmd("ppu"), "sim", "hold", "-i", "7", "--control"])
        try:
            wait_until(lambda: str(holder.pid) in n.read("ppu7", "holders"), what="holder to show")
            line = [l for l in n.read("ppu7", "holders").splitlines() if f"pid={holder.pid} " in l][0]
            self.assertIn("fds=", line)
            self.assertIn("command=", line)
            # a holder of the shared control nodes holds every PPU
            self.assertIn(f"pid={holder.pid} ", n.read("ppu2", "holders"))
            res = n.smi("ppu", "-i", 2, "-mig", 0, check=False)
            self.assertNotEqual(res.returncode, 0)
            self.assertEqual(n.read("ppu2", "mig", "mode").strip(), "enabled")
        finally:
            holder.kill()
            holder.wait()
        wait_until(lambda: n.read("ppu7", "holders") == "", what="holders to clear")
        n.smi("ppu", "-i", 2, "-mig", 0)
        wait_until(lambda: n.read("ppu2", "mig", "mode").strip() == "disabled", what="mode change")


if __name__ == "__main__":
    unittest.main(verbosity=2)
