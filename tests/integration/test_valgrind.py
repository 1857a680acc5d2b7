# SPDX-License-Identifier: MIT
"""The daemon under valgrind: a simulated node carved and given back through
the filesystem, unmounted cleanly, with no memory error and no definite leak."""
import os
import shutil
import time
import unittest

from harness import daemon_under_valgrind


@unittest.skipIf(os.environ.get("ACCELFS_NO_VALGRIND") or not shutil.which("valgrind"),
                 "valgrind is not available here, or the build is sanitized (ASan and valgrind exclude each other)")
class Valgrind(unittest.TestCase):
    def test_daemon_is_clean_under_valgrind(self):
        with daemon_under_valgrind(self, "ppu3", extra=["--poll-interval=0.3"]) as mnt:
            prof = os.path.join(mnt, "ppu3", "mig", "4g.48gb")
            os.mkdir(os.path.join(prof, "a"))
            os.mkdir(os.path.join(mnt, "mig", "1g.18gb", "b"))
            for path in (os.path.join(prof, "a", "status"), os.path.join(prof, "a", "devices"),
                         os.path.join(prof, "a", "cdi.json"), os.path.join(mnt, "ppu3", "info"),
                         os.path.join(mnt, "ppu3", "mig", "instances")):
                with open(path) as f:
                    self.assertTrue(f.read(), path)
            with open(os.path.join(mnt, "ppu3", "holders")) as f:
                self.assertEqual(f.read(), "")
            self.assertEqual(len(os.listdir(os.path.join(prof, "a", "dev"))), 4)
            with self.assertRaises(OSError):
                os.mkdir(os.path.join(prof, "c"))
                os.mkdir(os.path.join(prof, "d"))
            os.rmdir(os.path.join(prof, "a"))
            os.rmdir(os.path.join(mnt, "mig", "1g.18gb", "b"))
            time.sleep(1)  # a few poller passes


if __name__ == "__main__":
    unittest.main(verbosity=2)
