# SPDX-License-Identifier: MIT
"""Layouts and quotas without holes (issue 34): each observation reproduced, then a search for more of
the same.  A written file (layout, quota) is applied only from its writer's whole text; a layout carves
and reclaims as its writer, through the guards mkdir and rmdir take; a mode flipped during a carve never
loses the job; the planner moves the idle instances it owns to reach a layout that fits."""
import errno
import os
import subprocess
import threading
import unittest

from harness import topology_path, wait_until
from test_containers import as_user
from test_layouts import CID, DEV, LayoutCase, write

TEXTS = ["1g.18gb x2\n", "3g.71gb@4\n", "4g.71gb\n1g.18gb x3\n", "2g.35gb x2\n", "\n", "1g.18gb@6\n"]


def truncate(path):
    """What bash's `: > path` does: open with O_TRUNC, write nothing, close."""
    return subprocess.run(["bash", "-c", ': > "$1"', "-", path], capture_output=True, text=True)


class Writers(LayoutCase):
    def kept(self, dev=DEV):
        with open(os.path.join(self.node.state, "layouts", f"{dev}.layout")) as f:
            first, rest = f.read().split("\n", 1)  # the writer, then the layout as it reads
        self.assertEqual(first, "# written by uid:gid 0:0")
        return rest

    def test_concurrent_writers_keep_one_whole_text_shown_kept_and_restarted(self):
        """Observation 3: writers racing keep one writer's text, the same on disk, in the tree and after a restart."""
        n = self.node
        written = {t if t != "\n" else "" for t in TEXTS}
        for rnd in range(3):
            errors = []

            def writer(i):
                try:
                    for k in range(4):
                        write(self.mig("layout"), TEXTS[(i + k + rnd) % len(TEXTS)])
                except OSError as e:  # a layout may not fit beside what another writer's left: never a blend
                    errors.append(e)

            threads = [threading.Thread(target=writer, args=(i,)) for i in range(6)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            shown = n.read(DEV, "mig", "layout")
            self.assertIn(shown, written, f"round {rnd}: a layout nobody wrote ({errors})")
            self.assertEqual(self.kept(), shown, f"round {rnd}: the kept layout is not the one shown")
            leftovers = [f for f in os.listdir(os.path.join(n.state, "layouts")) if ".tmp." in f]
            self.assertEqual(leftovers, [])
        n.restart()
        self.assertEqual(n.read(DEV, "mig", "layout"), shown, "a restart applied another layout")
        self.assertSettled("after the writers")

    def test_a_forked_child_closing_the_descriptor_applies_nothing(self):
        """Observation 4: a child exiting mid-write applies nothing; the writer's close applies its whole text."""
        n = self.node
        self.layout("1g.18gb x3\n")
        before = self.by_job()
        fd = os.open(self.mig("layout"), os.O_WRONLY | os.O_TRUNC)
        os.write(fd, b"3g.71gb@4\n")
        pid = os.fork()
        if pid == 0:
            os._exit(0)  # the child's copy of fd closes here: a FLUSH from another process
        os.waitpid(pid, 0)
        self.assertEqual(n.read(DEV, "mig", "layout"), "1g.18gb x3\n", "the child's close applied the layout")
        self.assertEqual(self.by_job(), before, "the child's close carved or reclaimed")
        os.write(fd, b"1g.18gb x2\n")
        os.close(fd)  # the writer's close: its whole text
        self.assertEqual(n.read(DEV, "mig", "layout"), "3g.71gb@4\n1g.18gb x2\n")
        self.assertEqual(self.status(), "3g.71gb@4: applied\n1g.18gb x2: applied\n")
        # a bad line after the fork: the writer's close answers nothing applied, whoever closed first
        fd = os.open(self.mig("layout"), os.O_WRONLY | os.O_TRUNC)
        os.write(fd, b"1g.18gb\n")
        pid = os.fork()
        if pid == 0:
            os._exit(0)
        os.waitpid(pid, 0)
        self.assertEqual(n.errno_of(os.write, fd, b"no such line\n"), errno.EINVAL)
        os.close(fd)
        self.assertEqual(n.read(DEV, "mig", "layout"), "3g.71gb@4\n1g.18gb x2\n")
        self.assertSettled("after the forks")

    def test_truncating_the_layout_declares_nothing(self):
        """Observation 5: `: > layout` means an empty layout (applied at its last close), not nothing at all."""
        n = self.node
        os.mkdir(self.mig("1g.18gb", "mine"))
        self.layout("1g.18gb x2\n")
        res = truncate(self.mig("layout"))
        self.assertEqual(res.returncode, 0, res.stderr)
        wait_until(lambda: n.read(DEV, "mig", "layout") == "", what="the truncated layout to declare nothing")
        wait_until(lambda: sorted(self.by_job()) == ["mine"], what="the layout's jobs to go")


class Guards(LayoutCase):
    busy_retries = 8  # a busy reclaim retries for seconds: the window a container attaches in

    def destroys(self):
        calls = dict(line.split()[:2] for line in self.node.smi("gpu", "sim", "calls").stdout.splitlines())
        return int(calls.get("ComputeInstanceDestroy", 0))

    def test_a_container_attached_while_the_layout_reclaims_is_refused_or_keeps_its_job(self):
        """Observation 1: the layout's reclaim takes rmdir's guard: an attach during it is refused."""
        n = self.node
        self.layout("1g.18gb x2\n")
        job = "layout-gpu0-1g.18gb-1"
        gi = self.identity(job, profile="1g.18gb")[0]
        n.smi("gpu", "sim", "busy", "-i", 0, "-gi", gi, "-ci", 0, 1)
        before = self.destroys()
        writer = threading.Thread(target=self.layout, args=("1g.18gb\n",))
        writer.start()
        wait_until(lambda: self.destroys() > before, what="the layout's reclaim to start")
        sleeper = self.sleeper()
        ret = n.errno_of(write, self.mig("1g.18gb", job, "containers"), f"attach {CID} {sleeper.pid}\n")
        n.smi("gpu", "sim", "busy", "-i", 0, "-gi", gi, "-ci", 0, 0)
        writer.join()
        if ret == 0:  # taken: then the job is the container's, and nothing may destroy it
            self.assertIn(job, self.by_job(), "the job was destroyed under an attached container")
        self.assertEqual(ret, errno.EBUSY, "an attach was accepted while the layout reclaimed its job")
        self.assertSettled("after the reclaim")

    def test_a_delegates_layout_is_the_delegates_and_pays_its_quota(self):
        """Observation 2: a layout's jobs are its writer's: owned by them, charged to their quota."""
        n = self.node
        os.chown(n.path("gpu1"), 4321, 4300)
        write(n.path("quota"), "user:4321 slices=4\n")
        res = as_user(4321, [4300], "bash", "-c", 'printf "1g.18gb x7\\n" > "$1"', "-",
                      self.mig("layout", dev="gpu1"))
        self.assertEqual(res.returncode, 0, res.stderr)
        mine = [j for j in self.by_job("gpu1") if j.startswith("layout-")]
        self.assertEqual(len(mine), 4, "the layout passed its writer's quota")
        for j in mine:
            self.assertEqual(n.keyvals("gpu1", "mig", "1g.18gb", j, "status")["owner"], "4321:4300")
        self.assertIn("quota exceeded: user:4321", self.status("gpu1"))
        self.assertEqual(n.read("quota"), "user:4321 slices=4/4\n")
        # a limit of 0: nothing at all; the card stays as it was
        write(n.path("quota"), "user:4321 slices=0\n")
        res = as_user(4321, [4300], "bash", "-c", 'printf "7g.141gb\\n" > "$1"', "-",
                      self.mig("layout", dev="gpu1"))
        self.assertEqual(res.returncode, 0, res.stderr)
        self.assertEqual([j for j in self.by_job("gpu1") if j.startswith("layout-")], [])
        self.assertIn("quota exceeded", self.status("gpu1"))
        # kept across a restart: still the delegate's
        n.restart()
        self.assertIn("quota exceeded", self.status("gpu1"))
        self.assertSettled("with the delegate's layout")


class ModeFlips(LayoutCase):
    def test_mkdir_never_answers_enoent_for_a_job_it_carved_while_the_mode_flips(self):
        """Observation 6: the mode off and on by the driver during mkdir: a job is there exactly when mkdir said so."""
        n = self.node
        dev = "gpu1"
        stop = threading.Event()

        def flip():
            while not stop.is_set():
                for mode in (0, 1):
                    try:
                        n.smi("gpu", "-i", 1, "-mig", mode)
                    except AssertionError:  # "in use": a job is on the card now
                        pass

        flipper = threading.Thread(target=flip)
        flipper.start()
        wrong = []
        try:
            for i in range(150):
                name = f"flip{i}"
                path = self.mig("1g.18gb", name, dev=dev)
                ret = n.errno_of(os.mkdir, path)
                if ret == 0:
                    os.rmdir(path)  # the card empty again: the mode can flip during the next mkdir
                elif ret == errno.ENOENT and name in n.read(dev, "mig", "instances"):
                    wrong.append(name)  # answered "no such", and carved
        finally:
            stop.set()
            flipper.join()
        n.smi("gpu", "-i", 1, "-mig", 1)
        wait_until(lambda: n.read(dev, "mig", "mode") == "enabled\n", what="the mode back on")
        self.assertEqual(wrong, [], "mkdir answered ENOENT for jobs it carved")
        self.assertEqual(n.read("quota"), "")
        self.assertSettled("after the flips")

    def test_mode_off_is_refused_while_the_card_has_a_lost_job(self):
        """Observation 6: turning the mode off with a lost job would leave it with no directory."""
        n = self.node
        os.mkdir(self.mig("1g.18gb", "lost1", dev="gpu1"))
        st = n.keyvals("gpu1", "mig", "1g.18gb", "lost1", "status")
        n.smi("gpu", "mig", "-i", 1, "-gi", st["gi"], "-ci", 0, "-dci")  # destroyed behind accelfs's back
        n.smi("gpu", "mig", "-i", 1, "-gi", st["gi"], "-dgi")
        wait_until(lambda: n.keyvals("gpu1", "mig", "1g.18gb", "lost1", "status")["state"] == "lost",
                   what="the job to be lost")
        self.assertErrno(errno.EBUSY, write, self.mig("mode", dev="gpu1"), "disabled\n")
        self.assertIn("lost1", n.read("gpu1", "mig", "last_error"))
        self.assertEqual(n.read("gpu1", "mig", "mode"), "enabled\n")
        os.rmdir(self.mig("1g.18gb", "lost1", dev="gpu1"))
        write(self.mig("mode", dev="gpu1"), "disabled\n")
        self.assertEqual(n.read("gpu1", "mig", "mode"), "disabled\n")


class Moves(LayoutCase):
    def test_a_layout_that_fits_is_reached_by_moving_idle_layout_instances(self):
        """Observation 7: the planner moves the idle instances it owns to reach a layout that fits the card."""
        n = self.node
        os.mkdir(self.mig("1g.18gb", "mine", dev="gpu1"))  # not the layout's: never moved
        mine = self.identity("mine", dev="gpu1", profile="1g.18gb")
        self.layout("3g.71gb\n1g.18gb x3\n")
        self.assertEqual(self.status(), "3g.71gb: applied\n1g.18gb x3: applied\n")
        self.layout("3g.71gb\n1g.18gb x2\n2g.35gb\n")
        self.assertEqual(self.status(), "3g.71gb: applied\n1g.18gb x2: applied\n2g.35gb: applied\n")
        self.assertEqual(sorted(self.by_job()), ["layout-gpu0-1g.18gb-0", "layout-gpu0-1g.18gb-1",
                                                 "layout-gpu0-2g.35gb-2", "layout-gpu0-3g.71gb-4"])
        self.assertEqual(self.identity("mine", dev="gpu1", profile="1g.18gb"), mine)
        self.assertSettled("after the move")

    def test_an_instance_in_use_is_never_moved_and_the_line_says_what_would_free_it(self):
        n = self.node
        self.layout("3g.71gb\n1g.18gb x3\n")
        kept = self.identity("layout-gpu0-1g.18gb-4", profile="1g.18gb")
        sleeper = self.sleeper()
        write(self.mig("1g.18gb", "layout-gpu0-1g.18gb-4", "containers"), f"attach {CID} {sleeper.pid}\n")
        self.layout("3g.71gb\n1g.18gb x2\n2g.35gb\n")
        self.assertEqual(self.identity("layout-gpu0-1g.18gb-4", profile="1g.18gb"), kept, "an instance in use moved")
        status = self.status()
        self.assertIn(f"2g.35gb: pending: placement 4:1 held by layout-gpu0-1g.18gb-4 (declared here), in use by "
                      f"container {CID[:20]}, pid {sleeper.pid}", status)
        self.assertNotIn("no longer declared", status)
        # the container goes: the layout follows by itself
        sleeper.kill()
        sleeper.wait()
        self.wait_status("3g.71gb: applied\n1g.18gb x2: applied\n2g.35gb: applied\n")
        self.assertSettled("after the container went")


class QuotaText(LayoutCase):
    def test_the_docs_printf_sets_the_whole_table(self):
        """Observation 5: bash's printf writes a line per write: the table is every line, not the first."""
        n = self.node
        lines = ["default slices=8 jobs=4", "group:7 slices=16", "user:1000 slices=16 jobs=8"]
        res = subprocess.run(["bash", "-c", 'printf "%s\\n" "$@" > "$0"', n.path("quota"), *lines],
                             capture_output=True, text=True)
        self.assertEqual(res.returncode, 0, res.stderr)
        self.assertEqual(n.read("quota"), "group:7 slices=0/16\nuser:1000 slices=0/16 jobs=0/8\n"
                         "default slices=8 jobs=4\n")
        # a bad line anywhere: the write that brings it fails, and nothing of the text is applied
        res = subprocess.run(["bash", "-c", 'printf "%s\\n" "$@" > "$0"', n.path("quota"), "default jobs=1",
                              "user:1000 what"], capture_output=True, text=True)
        self.assertNotEqual(res.returncode, 0)
        self.assertIn("Invalid argument", res.stderr)
        table = n.read("quota").splitlines()
        self.assertEqual(table[:3], ["group:7 slices=0/16", "user:1000 slices=0/16 jobs=0/8",
                                     "default slices=8 jobs=4"])
        self.assertIn("quota line 2", table[-1])
        # `: > quota` says "no limits"
        res = truncate(n.path("quota"))
        self.assertEqual(res.returncode, 0, res.stderr)
        wait_until(lambda: n.read("quota") == "", what="the truncated table to be empty")


class Search(LayoutCase):
    """A search for more of the same: concurrent layout writers (root and a delegate with a quota), forks
    holding a writer's descriptor, mkdirs by the delegate, and the mode flipped by the driver, all at once.
    Afterwards: the delegate never passed its quota, every layout job is its writer's, the kept layout is
    the shown one, and the node holds its invariants against the driver."""

    def test_writers_forks_delegates_and_mode_flips_at_once(self):
        n = self.node
        deleg, dgid, limit = 4321, 4300, 5
        os.chown(n.path("gpu1"), deleg, dgid)
        write(n.path("quota"), f"user:{deleg} slices={limit}\n")
        stop = threading.Event()
        over = []

        def root_writer():
            k = 0
            while not stop.is_set():
                try:
                    write(self.mig("layout", dev="gpu1"), TEXTS[k % len(TEXTS)])
                except OSError:
                    pass
                k += 1

        def delegate_writer():
            k = 0
            while not stop.is_set():
                as_user(deleg, [dgid], "bash", "-c", 'printf "$1" > "$2"', "-",
                        TEXTS[(k + 2) % len(TEXTS)].replace("\n", "\\n"), self.mig("layout", dev="gpu1"))
                k += 1

        def forker():
            while not stop.is_set():
                try:
                    fd = os.open(self.mig("layout", dev="gpu1"), os.O_WRONLY | os.O_TRUNC)
                except OSError:
                    continue
                try:
                    os.write(fd, b"1g.18gb x7\n")
                    pid = os.fork()
                    if pid == 0:
                        os._exit(0)
                    os.waitpid(pid, 0)
                except OSError:
                    pass
                finally:
                    try:
                        os.close(fd)  # the writer's close: its whole text, or its refusal
                    except OSError:
                        pass

        def delegate_mkdirs():
            k = 0
            while not stop.is_set():
                path = self.mig("1g.18gb", f"d{k % 3}", dev="gpu1")
                as_user(deleg, [dgid], "python3", "-c", f"import os\ntry: os.mkdir({path!r})\nexcept OSError: pass")
                k += 1

        def watcher():
            while not stop.is_set():
                for line in n.read("quota").splitlines():
                    if line.startswith(f"user:{deleg} "):
                        used = int(line.split("slices=")[1].split("/")[0])
                        if used > limit:
                            over.append(line)

        def flipper():
            while not stop.is_set():
                for mode in (0, 1):
                    try:
                        n.smi("gpu", "-i", 2, "-mig", mode)
                    except AssertionError:
                        pass

        threads = [threading.Thread(target=f) for f in (root_writer, delegate_writer, forker, delegate_mkdirs,
                                                           watcher, flipper)]
        for t in threads:
            t.start()
        try:
            stop.wait(8)  # the search runs this long; nothing is asserted about time
        finally:
            stop.set()
            for t in threads:
                t.join()
        n.smi("gpu", "-i", 2, "-mig", 1)
        self.assertEqual(over, [], "the delegate passed its quota")
        with open(os.path.join(n.state, "layouts", "gpu1.layout")) as f:
            kept = f.read().split("\n", 1)[1]
        self.assertEqual(kept, n.read("gpu1", "mig", "layout"), "the kept layout is not the shown one")
        for job, inst in self.by_job("gpu1").items():
            prof = inst["profile"]
            owner = n.keyvals("gpu1", "mig", prof, job, "status")["owner"]
            if job.startswith("d"):
                self.assertEqual(owner, f"{deleg}:{dgid}", job)
            else:
                self.assertIn(owner, ("0:0", f"{deleg}:{dgid}"), job)
        self.assertSettled("after the search")


if __name__ == "__main__":
    unittest.main()
