# SPDX-License-Identifier: MIT
"""The daemon under valgrind: a simulated node carved and given back through
the filesystem, unmounted cleanly, with no memory error and no definite leak.
A few representative steps of each feature's daemon paths, not its whole test
file: valgrind is some 30 times slower, and CI has two cores."""
import errno
import json
import os
import shutil
import subprocess
import tempfile
import threading
import time
import unittest

from harness import ACCEL_SMI, daemon_under_valgrind, topology_path, wait_until
from test_containers import as_user


def write(path, text):
    with open(path, "w") as f:
        f.write(text)


def read(path):
    with open(path) as f:
        return f.read()


def errno_of(fn, *args):
    try:
        fn(*args)
    except OSError as e:
        return e.errno
    return 0


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

    # -- issue 31: instances accelfs did not make ------------------------------------------
    def smi(self, state, family, *args):
        return subprocess.run([ACCEL_SMI, f"--sim={state}", "-f", family, *map(str, args)],
                              check=True, capture_output=True, text=True, timeout=120).stdout

    def gis(self, state, family, index):
        """The GPU instances of one card, as the driver lists them (one row each)."""
        out = self.smi(state, family, "mig", "-i", index, "-lgi")
        return [line for line in out.splitlines() if line.startswith(f"| {index} ")]

    def test_foreign_instances_adopt_and_intents_are_clean_under_valgrind(self):
        """Hand-made instances kept, shown and adopted; the operator's reclaim; a carve cut between the
        driver's create and its record is ours by its intent, across a restart, and reclaimed as an
        orphan (core/engine/node_foreign.c, node_unowned.c, core/state/intent*.c, fs/ mig/adopt, mig/foreign)."""
        state = tempfile.mkdtemp(prefix="accelfs-vg-state-")
        log = os.path.join(state, "accelfs.log")
        try:
            for index in (3, 4):  # partitioned by hand before accelfs first starts
                self.smi(state, "ppu", "mig", "-i", index, "-cgi", 5, "-C")
            # the first daemon: its orphans wait a minute, so that the cut carve is the next one's to find
            with daemon_under_valgrind(self, "ppu3", state=state,
                                       extra=["--poll-interval=0.3", "--orphan-grace=60", f"--log={log}"]) as mnt:
                mig = os.path.join(mnt, "ppu3", "mig")
                self.assertIn('note="foreign: not made by accelfs; kept', read(os.path.join(mig, "instances")))
                self.assertIn(" foreign", read(os.path.join(mig, "map")))
                doc = json.loads(read(os.path.join(mnt, "node.json")))
                ppu3 = [d for d in doc["devices"] if d["name"] == "ppu3"][0]
                self.assertEqual({i["owner"] for i in ppu3["instances"]}, {"foreign"})
                offer = read(os.path.join(mig, "adopt")).splitlines()
                self.assertEqual(len(offer), 1, offer)
                gi = dict(f.split("=", 1) for f in offer[0].split() if "=" in f)["gi"]
                for text, code in (("adopt everything", errno.EINVAL), ("gi=99 name=x", errno.ENOENT),
                                   (f"gi={gi} uuid=MIG-0 name=x", errno.ESTALE)):
                    self.assertEqual(errno_of(write, os.path.join(mig, "adopt"), text), code, text)
                    self.assertTrue(read(os.path.join(mig, "last_error")), text)
                write(os.path.join(mig, "adopt"), f"{offer[0]} name=train\n")
                self.assertEqual(read(os.path.join(mig, "4g.48gb", "train", "status")).splitlines()[0], "state: ready")
                os.rmdir(os.path.join(mig, "4g.48gb", "train"))
                self.assertEqual(self.gis(state, "ppu", 3), [])
                # a carve cut between create and record: its instance stays, its intent too
                for call in ("GpuInstanceCreateComputeInstance", "GpuInstanceDestroy"):
                    self.smi(state, "ppu", "sim", "fault", call, "--ret", "UNKNOWN", "--times", 100)
                self.assertEqual(errno_of(os.mkdir, os.path.join(mnt, "ppu5", "mig", "4g.48gb", "cut")), errno.EIO)
                self.smi(state, "ppu", "sim", "clear-faults")
                self.assertTrue(self.gis(state, "ppu", 5), "the cut carve left nothing to recognise")
            self.smi(state, "ppu", "mig", "-i", 6, "-cgi", 5, "-C")  # made by hand while accelfs was down
            # the next daemon reads the intent at its start: the cut carve is an orphan, ppu6's is foreign
            with daemon_under_valgrind(self, "ppu5", state=state,
                                       extra=["--poll-interval=0.3", "--orphan-grace=1", f"--log={log}"]) as mnt:
                wait_until(lambda: not self.gis(state, "ppu", 5), timeout=120, what="the cut carve reclaimed")
                # the operator's reclaim of ppu4's (after the grace too), said at notice
                self.assertEqual(errno_of(write, os.path.join(mnt, "ppu4", "mig", "foreign"), "sometimes"), errno.EINVAL)
                write(os.path.join(mnt, "ppu4", "mig", "foreign"), "reclaim\n")
                wait_until(lambda: not self.gis(state, "ppu", 4), timeout=120, what="ppu4's foreign reclaimed")
                self.assertIn('note="foreign:', read(os.path.join(mnt, "ppu6", "mig", "instances")))
                os.mkdir(os.path.join(mnt, "ppu5", "mig", "4g.48gb", "cut"))  # the name is free again
                os.rmdir(os.path.join(mnt, "ppu5", "mig", "4g.48gb", "cut"))
            self.assertEqual(len(self.gis(state, "ppu", 6)), 1, "a foreign instance was destroyed")
            said = read(log)
            self.assertIn("notice: ppu4: destroyed foreign GPU instance", said)
            self.assertIn("left by job cut", said)
        finally:
            shutil.rmtree(state, ignore_errors=True)

    # -- issue 32: what a card can take ----------------------------------------------------
    def test_failed_cards_acknowledge_and_cordon_are_clean_under_valgrind(self):
        """A card-level Xid fails the card: mkdir refused there, every file says so, the node-level
        choice goes elsewhere; the operator acknowledges it; a reset Xid cleared by the driver; a cordon
        (core/policy/admits.c, core/engine/node_health.c, core/state/health_book.c, fs/ health and cordon)."""
        with daemon_under_valgrind(self, "ppu14", extra=["--poll-interval=0.3"]) as mnt:
            P = "4g.48gb"
            dev = os.path.join(mnt, "ppu14")
            os.mkdir(os.path.join(dev, "mig", P, "j1"))
            subprocess.run([ACCEL_SMI, f"--sim={self.vg_state}", "-f", "ppu", "sim", "xid", "79", "-i", "14"],
                           check=True, capture_output=True, timeout=120)
            wait_until(lambda: read(os.path.join(dev, "health")).startswith("failed: Xid 79"), timeout=120,
                       what="ppu14 failed under valgrind")
            self.assertEqual(errno_of(os.mkdir, os.path.join(dev, "mig", P, "j2")), errno.EIO)
            self.assertIn("ppu14 has failed", read(os.path.join(dev, "mig", P, "last_error")))
            self.assertEqual(read(os.path.join(dev, "mig", P, "available")), "0\n")
            ppu14 = [d for d in json.loads(read(os.path.join(mnt, "node.json")))["devices"] if d["name"] == "ppu14"][0]
            self.assertEqual(ppu14["admits"]["condition"], "failed")
            self.assertIn('accelfs_device_admits_jobs{device="ppu14"} 0', read(os.path.join(mnt, "metrics")))
            self.assertTrue(read(os.path.join(dev, "mig", P, "placements", "4", "status")).startswith("state: blocked"))
            os.mkdir(os.path.join(mnt, "mig", P, "nl"))
            self.assertFalse(os.path.isdir(os.path.join(dev, "mig", P, "nl")), "the node chose the failed card")
            os.rmdir(os.path.join(mnt, "mig", P, "nl"))
            # the operator's acknowledgement: junk refused, then ok
            self.assertEqual(errno_of(write, os.path.join(dev, "health"), "maybe\n"), errno.EINVAL)
            write(os.path.join(dev, "health"), "ok\n")
            self.assertEqual(read(os.path.join(dev, "health")).splitlines()[0], "ok")
            os.mkdir(os.path.join(dev, "mig", P, "j2"))
            # an Xid asking for a reset; the driver's reset clears it
            gpu0 = os.path.join(mnt, "gpu0")
            os.mkdir(os.path.join(gpu0, "mig", "3g.71gb", "g1"))
            subprocess.run([ACCEL_SMI, f"--sim={self.vg_state}", "-f", "gpu", "sim", "xid", "--action", "reset", "79",
                            "-i", "0"], check=True, capture_output=True, timeout=120)
            wait_until(lambda: read(os.path.join(gpu0, "health")).startswith("failed"), timeout=120, what="gpu0 failed")
            self.assertEqual(errno_of(os.mkdir, os.path.join(gpu0, "mig", "3g.71gb", "g2")), errno.EIO)
            subprocess.run([ACCEL_SMI, f"--sim={self.vg_state}", "-f", "gpu", "sim", "recover", "-i", "0"],
                           check=True, capture_output=True, timeout=120)
            wait_until(lambda: read(os.path.join(gpu0, "health")).startswith("ok"), timeout=120, what="gpu0 recovered")
            # a cordon: refused with EBUSY, shown, lifted
            cordon = os.path.join(mnt, "ppu8", "mig", "cordon")
            write(cordon, "1\n")
            self.assertEqual(errno_of(os.mkdir, os.path.join(mnt, "ppu8", "mig", P, "c")), errno.EBUSY)
            self.assertIn('accelfs_device_cordoned{device="ppu8"} 1', read(os.path.join(mnt, "metrics")))
            write(cordon, "0\n")
            os.mkdir(os.path.join(mnt, "ppu8", "mig", P, "c"))
            for job in (os.path.join(dev, "mig", P, "j1"), os.path.join(dev, "mig", P, "j2"),
                        os.path.join(gpu0, "mig", "3g.71gb", "g1"), os.path.join(mnt, "ppu8", "mig", P, "c")):
                os.rmdir(job)

    # -- issue 34: layouts without holes ---------------------------------------------------
    def test_layout_guards_delegates_and_writers_are_clean_under_valgrind(self):
        """A layout's reclaim through rmdir's guard (an attach during it refused), a delegate's layout
        carved as its writer and paying its quota, writers racing (core/engine/layout_apply.c,
        rmdir_guard.c, quota_check.c, fs/layout_files.c)."""
        with daemon_under_valgrind(self, "gpu1", extra=["--poll-interval=0.3", "--busy-retries=12",
                                                        f"--sim={topology_path('layouts.json')}"]) as mnt:
            mig = os.path.join(mnt, "gpu0", "mig")

            def smi(*args):
                return subprocess.run([ACCEL_SMI, f"--sim={self.vg_state}", "-f", "gpu", *map(str, args)],
                                      check=True, capture_output=True, text=True, timeout=120).stdout

            def destroys():
                calls = dict(line.split()[:2] for line in smi("sim", "calls").splitlines())
                return int(calls.get("ComputeInstanceDestroy", 0))

            # 12 busy retries: 7.8 s to attach in (test_layout_holes.py's 8 give 3.6 s, short for valgrind
            # on a loaded machine); the reclaim ends at the retry after the busy is lifted
            write(os.path.join(mig, "layout"), "1g.18gb x2\n")
            job = "layout-gpu0-1g.18gb-1"
            gi = dict(l.split(": ", 1) for l in read(os.path.join(mig, "1g.18gb", job, "status")).splitlines())["gi"]
            smi("sim", "busy", "-i", 0, "-gi", gi, "-ci", 0, 1)
            before = destroys()
            writer = threading.Thread(target=write, args=(os.path.join(mig, "layout"), "1g.18gb\n"))
            writer.start()
            wait_until(lambda: destroys() > before, timeout=120, what="the layout's reclaim to start")
            sleeper = subprocess.Popen(["sleep", "1000"])
            try:
                ret = errno_of(write, os.path.join(mig, "1g.18gb", job, "containers"), f"attach {'7c1e' * 16} {sleeper.pid}\n")
            finally:
                smi("sim", "busy", "-i", 0, "-gi", gi, "-ci", 0, 0)
                writer.join()
                sleeper.kill()
                sleeper.wait()
            self.assertEqual(ret, errno.EBUSY, "an attach was accepted while the layout reclaimed its job")
            self.assertEqual(read(os.path.join(mig, "layout_status")), "1g.18gb: applied\n")
            # a delegate's layout: carved as its writer, up to its quota
            os.chown(os.path.join(mnt, "gpu1"), 4321, 4300)
            write(os.path.join(mnt, "quota"), "user:4321 slices=4\n")
            res = as_user(4321, [4300], "bash", "-c", 'printf "1g.18gb x7\\n" > "$1"', "-",
                          os.path.join(mnt, "gpu1", "mig", "layout"))
            self.assertEqual(res.returncode, 0, res.stderr)
            mine = [j for j in os.listdir(os.path.join(mnt, "gpu1", "mig", "1g.18gb")) if j.startswith("layout-")]
            self.assertEqual(len(mine), 4, "the layout passed its writer's quota")
            self.assertIn("owner: 4321:4300", read(os.path.join(mnt, "gpu1", "mig", "1g.18gb", mine[0], "status")))
            self.assertIn("quota exceeded: user:4321", read(os.path.join(mnt, "gpu1", "mig", "layout_status")))
            # writers racing: one writer's whole text, shown and kept
            texts = ["1g.18gb x2\n", "3g.71gb@4\n", "2g.35gb x2\n", "\n"]

            def racer(i):
                for k in range(2):
                    try:
                        write(os.path.join(mig, "layout"), texts[(i + k) % len(texts)])
                    except OSError:
                        pass  # a layout may not fit beside what another left: never a blend
            threads = [threading.Thread(target=racer, args=(i,)) for i in range(3)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            shown = read(os.path.join(mig, "layout"))
            self.assertIn(shown, {t if t != "\n" else "" for t in texts})
            with open(os.path.join(self.vg_state, "layouts", "gpu0.layout")) as f:
                self.assertEqual(f.read().split("\n", 1)[1], shown)
            for dev in ("gpu0", "gpu1"):  # give everything back before the leak check
                write(os.path.join(mnt, dev, "mig", "layout"), "")
            wait_until(lambda: not [j for d in ("gpu0", "gpu1") for p in os.listdir(os.path.join(mnt, d, "mig"))
                                    if os.path.isdir(os.path.join(mnt, d, "mig", p))
                                    for j in os.listdir(os.path.join(mnt, d, "mig", p)) if j.startswith("layout-")],
                       timeout=120, what="the layouts' jobs to go")


if __name__ == "__main__":
    unittest.main(verbosity=2)
