# SPDX-License-Identifier: MIT
"""The daemon under valgrind: a simulated node carved and given back through
the filesystem, unmounted cleanly, with no memory error and no definite leak."""
import errno
import os
import shutil
import subprocess
import time
import unittest

from harness import ACCEL_SMI, daemon_under_valgrind, wait_until


@unittest.skipIf(os.environ.get("ACCELFS_NO_VALGRIND") or not shutil.which("valgrind"),
                 "valgrind is not available here, or the build is sanitized (ASan and valgrind exclude each other)")
class Valgrind(unittest.TestCase):
    def test_layouts_are_clean_under_valgrind(self):
        """Layouts (fs/layout_files.c, core/policy/layout_*.c, core/engine/layout*.c): written a line at a time, pending, applied by the thread."""
        with daemon_under_valgrind(self, "gpu0", extra=["--poll-interval=0.3"]) as mnt:
            mig = os.path.join(mnt, "gpu0", "mig")
            os.mkdir(os.path.join(mig, "3g.71gb", "mine"))
            res = subprocess.run(["bash", "-c", 'printf "3g.71gb@0\\n1g.18gb x3\\ndrain\\n" > "$1"', "-",
                                  os.path.join(mig, "layout")], capture_output=True, text=True)
            self.assertEqual(res.returncode, 0, res.stderr)
            with open(os.path.join(mig, "layout_status")) as f:
                self.assertIn("3g.71gb@0: pending: placement 0:4 held by mine", f.read())
            with open(os.path.join(mig, "cordon")) as f:
                self.assertEqual(f.read(), "1\n")
            with self.assertRaises(OSError) as bad:
                with open(os.path.join(mig, "layout"), "w") as f:
                    f.write("nonsense here now x\n")
            self.assertEqual(bad.exception.errno, errno.EINVAL)
            os.rmdir(os.path.join(mig, "3g.71gb", "mine"))

            def applied():
                with open(os.path.join(mig, "layout_status")) as f:
                    return f.read() == "3g.71gb@0: applied\n1g.18gb x3: applied\ndrain: applied\n"
            wait_until(applied, timeout=60, what="the layout to apply by itself")
            with self.assertRaises(OSError) as busy:
                with open(os.path.join(mig, "mode"), "w") as f:
                    f.write("disabled\n")
            self.assertEqual(busy.exception.errno, errno.EBUSY)
            with open(os.path.join(mig, "layout"), "w") as f:
                f.write("mode disabled\n")
            with open(os.path.join(mig, "mode")) as f:
                self.assertEqual(f.read(), "disabled\n")

    def test_daemon_is_clean_under_valgrind(self):
        with daemon_under_valgrind(self, "ppu3", extra=["--poll-interval=0.3"]) as mnt:
            prof = os.path.join(mnt, "ppu3", "mig", "4g.48gb")
            os.mkdir(os.path.join(prof, "a"))
            os.mkdir(os.path.join(mnt, "mig", "1g.18gb", "b"))
            # a carve at a chosen placement, its view and its refusals (fs/tree.c, core/policy/place_exact.c)
            at = os.path.join(prof, "placements", "4", "p")
            os.mkdir(at)
            self.assertEqual(os.readlink(os.path.join(at, "device")), "../../../p")
            self.assertEqual(sorted(os.listdir(os.path.join(prof, "placements"))), ["0", "4"])
            for start in ("0", "4"):
                with open(os.path.join(prof, "placements", start, "status")) as f:
                    self.assertTrue(f.read().startswith("state: taken\n"), start)
            for path, err in ((os.path.join(prof, "placements", "0", "q"), errno.ENOSPC),
                              (os.path.join(prof, "placements", "9"), errno.EINVAL)):
                with self.assertRaises(OSError) as refused:
                    os.mkdir(path)
                self.assertEqual(refused.exception.errno, err, path)
            os.rmdir(at)
            # the event thread: an event of the card, written into a's health and stored
            subprocess.run([ACCEL_SMI, f"--sim={self.vg_state}", "-f", "ppu", "sim", "xid", "-i", "3", "62"],
                           check=True, capture_output=True, timeout=120)

            def failed():
                with open(os.path.join(prof, "a", "health")) as f:
                    return f.read().startswith("failed: Xid 62")

            wait_until(failed, timeout=120, what="a's health under valgrind")
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

    def test_quotas_are_clean_under_valgrind(self):
        """The quota file written (and refused), a carve over it, a node-level choice among devices,
        and the texts that show it (fs/quota_file.c, core/policy/quota_*.c, core/engine/quota_check.c)."""
        with daemon_under_valgrind(self, "ppu3", extra=["--poll-interval=0.3"]) as mnt:
            quota = os.path.join(mnt, "quota")
            with open(quota, "w") as f:
                f.write("user:0 slices=5 4g.48gb=1\ngroup:0 jobs=9\ndefault jobs=1\n")
            with self.assertRaises(OSError) as bad:
                with open(quota, "w") as f:
                    f.write("user:0 slices=x\n")
            self.assertEqual(bad.exception.errno, errno.EINVAL)
            os.mkdir(os.path.join(mnt, "ppu3", "mig", "4g.48gb", "a"))
            os.mkdir(os.path.join(mnt, "mig", "1g.18gb", "b"))
            for path in (os.path.join(mnt, "ppu4", "mig", "4g.48gb", "c"), os.path.join(mnt, "mig", "1g.18gb", "d")):
                with self.assertRaises(OSError) as over:
                    os.mkdir(path)
                self.assertEqual(over.exception.errno, errno.EDQUOT, path)
            for name in ("quota", "metrics", "node.json"):
                with open(os.path.join(mnt, name)) as f:
                    self.assertIn("slices", f.read(), name)
            os.rmdir(os.path.join(mnt, "ppu3", "mig", "4g.48gb", "a"))
            os.rmdir(os.path.join(mnt, "mig", "1g.18gb", "b"))

    def test_attachments_are_clean_under_valgrind(self):
        """A job's containers, reclaim and holders files, rmdir refused, a stale attachment cleared and the
        job reclaimed by the daemon's own thread (fs/jobctl.c, fs/reclaimer.c, core/state/attach.c)."""
        with daemon_under_valgrind(self, "ppu3", extra=["--poll-interval=0.3"]) as mnt:
            job = os.path.join(mnt, "ppu3", "mig", "4g.48gb", "a")
            os.mkdir(job)
            with self.assertRaises(OSError) as bad:
                os.mkdir(os.path.join(mnt, "ppu3", "mig", "4g.48gb", "b-"))
            self.assertEqual(bad.exception.errno, errno.EINVAL)
            ctr = subprocess.Popen(["sleep", "1000"])
            try:
                with open(os.path.join(job, "containers"), "w") as f:
                    f.write(f"attach ctr1 {ctr.pid}\n")
                with self.assertRaises(OSError):
                    with open(os.path.join(job, "containers"), "w") as f:
                        f.write("attach\n")
                with open(os.path.join(job, "reclaim"), "w") as f:
                    f.write("when-detached\n")
                for name in ("containers", "holders", "status", "reclaim", "cdi.json"):
                    with open(os.path.join(job, name)) as f:
                        self.assertTrue(f.read(), name)
                with self.assertRaises(OSError) as busy:
                    os.rmdir(job)
                self.assertEqual(busy.exception.errno, errno.EBUSY)
            finally:
                ctr.kill()
                ctr.wait()
            wait_until(lambda: not os.path.exists(job), timeout=60, what="the job to be reclaimed")

    def test_handles_the_kernel_never_released_are_freed_at_exit(self):
        """A directory and a file open when the connection ends: no RELEASEDIR or RELEASE ever comes
        (as for a close racing an unmount), and the daemon frees them at exit (fs/ops_dir.c, fs/ops_file.c)."""
        with daemon_under_valgrind(self, "ppu3") as mnt:
            held = [os.open(os.path.join(mnt, "ppu3", "mig"), os.O_RDONLY | os.O_DIRECTORY),
                    os.open(os.path.join(mnt, "ppu3", "mig", "instances"), os.O_RDONLY)]
            try:
                ctl = f"/sys/fs/fuse/connections/{os.minor(os.stat(mnt).st_dev)}"
                if not os.path.exists(ctl):
                    subprocess.run(["mount", "-t", "fusectl", "none", os.path.dirname(ctl)], check=False)
                with open(f"{ctl}/abort", "w") as f:
                    f.write("1")
            finally:
                for fd in held:
                    os.close(fd)


if __name__ == "__main__":
    unittest.main(verbosity=2)
