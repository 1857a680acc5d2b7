# SPDX-License-Identifier: MIT
"""The kernel keeps generated files in its page cache and entries for long;
these tests read right after every change and require the new content: a
carve, a reclaim, a mode flipped from outside, a job lost.  Sizes are exact,
since the kernel reads a cached file only up to its size."""
import errno
import json
import os
import shutil
import stat
import time
import subprocess
import tempfile
import threading
import unittest

from harness import NodeTestCase, topology_path, wait_until

JOB_FILES = ["cdi.json", "containers", "dev", "devices", "health", "holders", "processes", "reclaim", "status",
             "utilization"]


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

    def test_a_job_removed_through_another_view_is_gone_from_the_device_at_once(self):
        """The device's entry for a job is cached for long; an rmdir through mig/<profile>/ or
        placements/<start>/ drops it before it answers, so the very next stat misses it.  The
        notifier, which deletes gone entries later, is held still meanwhile: a quick notifier is not
        what makes this true (a crash storm under load once saw the entry after rmdir's 0)."""
        n = self.node
        dev = ("ppu6", "mig", "4g.48gb")
        for other in (("mig", "4g.48gb"), (*dev, "placements", "0")):
            n.mkdir(*dev, "v")
            self.assertTrue(os.path.isdir(n.path(*dev, "v")))  # the device's entry, now cached
            with n.thread_paused("notifier"):
                os.rmdir(n.path(*other, "v"))
                self.assertFalse(os.path.isdir(n.path(*dev, "v")), f"removed through {'/'.join(other)}")
                self.assertNotIn("v", os.listdir(n.path(*dev)))
            self.assertEqual(n.read(*dev, "available"), "2\n")

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


class MadeAgain(NodeTestCase):
    """A job removed and made again under the same name while files of the old one are open (an
    accel-wait is enough): the new job is another directory, live at once, in both views."""

    VIEWS = (("ppu3", "mig", "4g.48gb"), ("mig", "4g.48gb"))

    def assertLive(self, job):
        """Every file of the job directory answers, and dev/ holds its nodes; the job's UUID."""
        n = self.node
        self.assertEqual(sorted(f for f in os.listdir(n.path(*job)) if f != "device"), JOB_FILES, "/".join(job))
        status = n.keyvals(*job, "status")
        self.assertEqual(status["state"], "ready")
        for f in ("devices", "cdi.json", "containers", "reclaim", "holders"):
            n.read(*job, f)
        nodes = [l.split()[0] for l in n.read(*job, "devices").splitlines()]
        for node in nodes:
            st = os.stat(n.path(*job, "dev", node[len("/dev/"):]))
            self.assertTrue(stat.S_ISCHR(st.st_mode), node)
        spec = json.loads(n.read(*job, "cdi.json"))
        for d in spec["devices"][0]["containerEdits"]["deviceNodes"]:
            self.assertTrue(stat.S_ISCHR(os.stat(d["hostPath"]).st_mode), d["hostPath"])
        self.assertIn(f"uuid={status['uuid']} job={job[-1]}", n.read(status["device"], "mig", "instances"))
        return status["uuid"]

    def test_the_new_job_is_live_at_once_in_both_views(self):
        n = self.node
        for view in self.VIEWS:
            n.mkdir(*view, "again")
            uuids = {self.assertLive((*view, "again"))}
            for round in range(5):
                held = [os.open(n.path(*view, "again", f), os.O_RDONLY) for f in ("status", "containers", "devices")]
                try:
                    w = self.waiter(n.path(*view, "again", "status"))
                    os.rmdir(n.path(*view, "again"))
                    n.mkdir(*view, "again")
                    uuid = self.assertLive((*view, "again"))
                    self.assertNotIn(uuid, uuids, "a new instance")
                    uuids.add(uuid)
                    # What was held open was the removed job's: it went away, and says so.
                    for fd in held:
                        with self.assertRaises(OSError) as e:
                            os.pread(fd, 4096, 0)
                        self.assertEqual(e.exception.errno, errno.ENOENT)
                finally:
                    for fd in held:
                        os.close(fd)
                self.assertEqual(w.result()[:2], (1, ""))
            os.rmdir(n.path(*view, "again"))

    def test_removes_and_remakes_racing_under_open_files(self):
        """Two threads remove and remake one name, one through each view, each holding files of
        the job it made open across its rmdir, while waiters wait on them; a listing that answers
        is never empty, and once they stop the job left, if any, is live."""
        n = self.node
        stop = threading.Event()
        problems = []

        def churn(view):
            held = []
            try:
                for i in range(40):
                    for fd in held:
                        os.close(fd)
                    held = []
                    try:
                        os.mkdir(n.path(*view, "one"))
                    except OSError as e:
                        if e.errno != errno.EEXIST:
                            problems.append(f"mkdir {view}: {e}")
                    try:
                        names = os.listdir(n.path(*view, "one"))
                        if names and "status" not in names or not names:
                            problems.append(f"{'/'.join(view)}/one lists {names}")
                        held = [os.open(n.path(*view, "one", f), os.O_RDONLY) for f in ("status", "containers")]
                        self.waiter(n.path(*view, "one", "status"))
                    except (OSError, AssertionError):
                        pass  # the other thread removed it meanwhile
                    try:
                        os.rmdir(n.path(*view, "one"))
                    except OSError as e:
                        if e.errno not in (errno.ENOENT, errno.EBUSY):
                            problems.append(f"rmdir {view}: {e}")
            finally:
                for fd in held:
                    os.close(fd)

        threads = [threading.Thread(target=churn, args=(v,)) for v in self.VIEWS]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual(problems, [])
        for w in self.waiters:
            rc, out, err = w.result()
            self.assertEqual((rc, out), (1, ""), f"{w.path}: every job it waited on was removed ({err})")
        for view in self.VIEWS:
            n.mkdir(*view, "one")
            self.assertLive((*view, "one"))
            os.rmdir(n.path(*view, "one"))


class WholeCopies(NodeTestCase):
    """Copies trust a file's size and SEEK_DATA/SEEK_HOLE: every generated file of a busy node,
    copied with cp, tar and shutil.copyfile, is its whole text, as a direct read gives it."""

    topology = topology_path("busy.json")

    def generated_files(self):
        """Every regular file of the tree but the dies' VRAM and the live utilization files (size 0, and
        a new window at each reading: docs/tree.md), relative to the mount."""
        out = []
        for top, dirs, files in os.walk(self.node.mnt):
            for f in files:
                path = os.path.join(top, f)
                if f not in ("vram", "utilization") and stat.S_ISREG(os.lstat(path).st_mode):
                    out.append(os.path.relpath(path, self.node.mnt))
        return sorted(out)

    def test_cp_tar_and_shutil_copy_every_generated_file_whole(self):
        n = self.node
        for dev in sorted(os.listdir(n.mnt)):
            if not dev.startswith(("ppu", "gpu")):
                continue
            for prof in sorted(p for p in os.listdir(n.path(dev, "mig")) if "." in p):
                while n.available(dev, prof):
                    n.mkdir(dev, "mig", prof, f"{dev}-{prof.replace('.', '-')}-{n.available(dev, prof)}")
        files = self.generated_files()
        # node.json and metrics show each job's last reading and ask for the next (a thread takes
        # it): two scrapes a window apart, and the simulator's counters, which hold still, hold
        # their text still too.
        for _ in range(2):
            n.read("node.json")
            n.read("metrics")
            time.sleep(1.2)
        direct = {f: n.read(f) for f in files}
        self.assertGreater(len(direct["node.json"]), 16 * 4096, "node.json is tens of kilobytes")
        self.assertGreater(len(direct["metrics"]), 4 * 4096)
        self.assertGreater(len(json.loads(direct["node.json"])["devices"]), 50)
        for f in files:
            size = len(direct[f].encode())
            st = os.stat(n.path(f))
            self.assertEqual(st.st_size, size, f)
            self.assertGreaterEqual(st.st_blocks * 512, size, f"{f}: not sparse")
            fd = os.open(n.path(f), os.O_RDONLY)
            try:
                self.assertEqual(os.fstat(fd).st_size, size, f)
                if size:
                    self.assertEqual(os.lseek(fd, 0, os.SEEK_DATA), 0, f)
                    self.assertEqual(os.lseek(fd, 0, os.SEEK_HOLE), size, f)
                    self.assertEqual(os.lseek(fd, size - 1, os.SEEK_HOLE), size, f)
                for at in (size, size + 1):
                    with self.assertRaises(OSError) as e:
                        os.lseek(fd, at, os.SEEK_DATA)
                    self.assertEqual(e.exception.errno, errno.ENXIO, f)
                self.assertEqual(os.lseek(fd, 0, os.SEEK_END), size, f)
            finally:
                os.close(fd)
        with tempfile.TemporaryDirectory() as tmp:
            for how in ("cp", "tar", "shutil"):
                dest = os.path.join(tmp, how)
                os.mkdir(dest)
                if how == "cp":
                    subprocess.run(["cp", "--parents", "-t", dest, *files], cwd=n.mnt, check=True)
                elif how == "tar":
                    listing = os.path.join(tmp, "files")
                    with open(listing, "w") as f:
                        f.write("".join(p + "\n" for p in files))
                    archive = os.path.join(tmp, "copy.tar")
                    subprocess.run(["tar", "-C", n.mnt, "-cf", archive, "-T", listing], check=True)
                    subprocess.run(["tar", "-C", dest, "-xf", archive], check=True)
                else:
                    for f in files:
                        os.makedirs(os.path.join(dest, os.path.dirname(f)), exist_ok=True)
                        shutil.copyfile(n.path(f), os.path.join(dest, f))
                for f in files:
                    with open(os.path.join(dest, f)) as c:
                        self.assertEqual(c.read(), direct[f], f"{how}: {f}")
                subprocess.run(["jq", "-e", ".format == 1", os.path.join(dest, "node.json")], check=True,
                               stdout=subprocess.DEVNULL)
                with open(os.path.join(dest, "metrics")) as m:
                    res = subprocess.run(["promtool", "check", "metrics"], stdin=m, capture_output=True, text=True)
                self.assertEqual(res.returncode, 0, res.stdout + res.stderr)


if __name__ == "__main__":
    unittest.main()
