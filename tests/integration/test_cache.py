# SPDX-License-Identifier: MIT
"""The kernel keeps generated files in its page cache and entries for long;
these tests read right after every change and require the new content: a
carve, a reclaim, a mode flipped from outside, a job lost.  Sizes are exact,
since the kernel reads a cached file only up to its size."""
import os
import unittest

from harness import NodeTestCase, wait_until


class CacheIsNeverStale(NodeTestCase):
    def read_exact(self, *parts):
        """The content, checked against the size the kernel was told."""
        text = self.node.read(*parts)
        self.assertEqual(os.stat(self.node.path(*parts)).st_size, len(text.encode()), "/".join(parts))
        return text

    def test_available_follows_every_carve_at_once(self):
        n = self.node
        prof = ("ppu3", "mig", "4g.48gb")
        node_prof = ("mig", "4g.48gb")
        total = int(self.read_exact(*node_prof, "available"))
        for i in range(20):
            self.assertEqual(self.read_exact(*prof, "available"), "2\n")
            n.mkdir(*prof, "a")
            self.assertEqual(self.read_exact(*prof, "available"), "1\n")
            self.assertEqual(int(self.read_exact(*node_prof, "available")), total - 1)
            self.assertIn("job=a", self.read_exact("ppu3", "mig", "instances"))
            n.mkdir(*prof, "b")
            self.assertEqual(self.read_exact(*prof, "available"), "0\n")
            status = self.read_exact(*prof, "b", "status")
            self.assertIn("state: ready", status)
            os.rmdir(n.path(*prof, "a"))
            self.assertEqual(self.read_exact(*prof, "available"), "1\n")
            self.assertNotIn("job=a", self.read_exact("ppu3", "mig", "instances"))
            self.assertFalse(os.path.exists(n.path(*node_prof, "a")))
            os.rmdir(n.path(*node_prof, "b"))
            self.assertEqual(self.read_exact(*prof, "available"), "2\n")
            self.assertFalse(os.path.exists(n.path(*prof, "b")))
            self.assertEqual(int(self.read_exact(*node_prof, "available")), total)

    def test_a_file_held_open_is_reread_after_a_change(self):
        n = self.node
        path = n.path("ppu4", "mig", "4g.48gb", "available")
        with open(path) as f:
            self.assertEqual(f.read(), "2\n")
            n.mkdir("ppu4", "mig", "4g.48gb", "held")
            f.seek(0)
            self.assertEqual(f.read(), "1\n")
        os.rmdir(n.path("ppu4", "mig", "4g.48gb", "held"))
        self.assertEqual(self.read_exact("ppu4", "mig", "4g.48gb", "available"), "2\n")

    def test_outside_changes_reach_every_cached_file(self):
        n = self.node
        self.assertEqual(self.read_exact("ppu5", "mig", "mode"), "enabled\n")
        info_before = self.read_exact("ppu5", "info")
        n.smi("ppu", "-i", 5, "-mig", 0)
        wait_until(lambda: n.read("ppu5", "mig", "mode") == "disabled\n", what="the mode flip")
        # Everything drawn from the same snapshot shows it too, and the profiles are gone.
        self.assertFalse(os.path.exists(n.path("ppu5", "mig", "4g.48gb")))
        self.assertNotEqual(self.read_exact("ppu5", "info"), info_before)
        n.smi("ppu", "-i", 5, "-mig", 1)
        wait_until(lambda: n.read("ppu5", "mig", "mode") == "enabled\n", what="the mode flip back")
        self.assertEqual(self.read_exact("ppu5", "mig", "4g.48gb", "available"), "2\n")

    def test_a_job_lost_outside_shows_at_once_in_its_status(self):
        n = self.node
        n.mkdir("ppu6", "mig", "4g.48gb", "gone")
        # other jobs seen through the node-level mig/ on other cards: their files stay cached and true
        n.mkdir("ppu7", "mig", "4g.48gb", "stays")
        n.mkdir("mig", "8g.96gb", "also")
        for job in ("gone", "stays"):
            self.assertIn("state: ready", self.read_exact("mig", "4g.48gb", job, "status"))
        self.assertIn("state: ready", self.read_exact("mig", "8g.96gb", "also", "status"))
        self.assertIn("state: ready", self.read_exact("ppu6", "mig", "4g.48gb", "gone", "status"))
        st = n.keyvals("ppu6", "mig", "4g.48gb", "gone", "status")
        n.smi("ppu", "mig", "-i", 6, "-gi", st["gi"], "-ci", st["ci"], "-dci")
        n.smi("ppu", "mig", "-i", 6, "-gi", st["gi"], "-dgi")
        wait_until(lambda: "state: lost" in n.read("ppu6", "mig", "4g.48gb", "gone", "status"),
                   what="the job to be lost")
        self.assertIn("state: lost", self.read_exact("ppu6", "mig", "4g.48gb", "gone", "status"))
        # the same job seen from the node shows it too, at once
        self.assertIn("state: lost", self.read_exact("mig", "4g.48gb", "gone", "status"))
        self.assertIn("state: ready", self.read_exact("mig", "4g.48gb", "stays", "status"))
        os.rmdir(n.path("ppu6", "mig", "4g.48gb", "gone"))
        self.assertFalse(os.path.exists(n.path("mig", "4g.48gb", "gone")))
        os.rmdir(n.path("mig", "8g.96gb", "also"))
        self.assertFalse(os.path.exists(n.path("mig", "8g.96gb", "also", "status")))

    def test_node_level_profiles_follow_the_one_device_that_offers_them(self):
        n = self.node
        # 1g.18gb only the H200 offers: its node-level directory goes and comes with the H200's mode
        self.assertEqual(self.read_exact("mig", "1g.18gb", "available"), "7\n")
        n.mkdir("gpu0", "mig", "1g.18gb", "one")
        self.assertEqual(self.read_exact("mig", "1g.18gb", "available"), "6\n")
        self.assertIn("state: ready", self.read_exact("mig", "1g.18gb", "one", "status"))
        os.rmdir(n.path("mig", "1g.18gb", "one"))
        self.assertEqual(self.read_exact("mig", "1g.18gb", "available"), "7\n")
        n.smi("gpu", "-i", 0, "-mig", 0)
        wait_until(lambda: n.read("gpu0", "mig", "mode") == "disabled\n", what="the mode flip")
        self.assertFalse(os.path.exists(n.path("mig", "1g.18gb", "available")))
        self.assertFalse(os.path.exists(n.path("mig", "1g.18gb")))
        n.smi("gpu", "-i", 0, "-mig", 1)
        wait_until(lambda: os.path.exists(n.path("mig", "1g.18gb")), what="the mode flip back")
        self.assertEqual(self.read_exact("mig", "1g.18gb", "available"), "7\n")


if __name__ == "__main__":
    unittest.main()
