# SPDX-License-Identifier: MIT
"""Layouts and quotas without holes (issue 34): each observation reproduced, then a search for more of
the same.  A written file (layout, quota) is applied only from its writer's whole text; a layout carves
and reclaims as its writer, through the guards mkdir and rmdir take; a mode flipped during a carve never
loses the job; the planner moves the idle instances it owns to reach a layout that fits."""
import errno
import os
import random
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


def kept_text(node, dev):
    """The layout kept on disk, as it reads: without the line naming its writer (kept files have it since f18d911)."""
    with open(os.path.join(node.state, "layouts", f"{dev}.layout")) as f:
        lines = f.read().splitlines(keepends=True)
    return "".join(line for line in lines if not line.startswith("# written by"))


# The search's layout lines: 1 to 3 of them make a text, which may or may not fit beside what is on the card.
LINES = ["1g.18gb", "1g.18gb x2", "1g.18gb x3", "2g.35gb", "2g.35gb x2", "3g.71gb", "3g.71gb@4", "4g.71gb",
         "1g.18gb@6", "7g.141gb"]
# The forker's first write, which no other writer writes whole: shown, it was applied at a child's close.
PARTIAL = "1g.18gb@5\n"
SLICES = {"1g.18gb": 1, "1g.35gb": 1, "2g.35gb": 2, "3g.71gb": 4, "4g.71gb": 4, "7g.141gb": 8}


class Search(LayoutCase):
    """A search for more of the same: rounds of a random mix (seeded: ACCELFS_SEARCH_SEED repeats one) of
    concurrent layout writers (root's writing at once, a delegate with a quota), a forker holding a
    writer's descriptor across a child's exit, and the delegate's mkdirs; then, each round once all have
    stopped, what must hold: the kept layout is the shown one and one that was written whole, a layout's
    jobs are its writer's, the delegate is within its quota and charged for exactly its jobs, and the node
    holds its invariants against the driver.  A second search flips the card's mode under mkdirs and
    rmdirs, then loses jobs behind accelfs's back and turns the mode off through the tree.

    Checked by running this file (copied into a scratch worktree, `python3 test_layout_holes.py Search`)
    on the parent of each fix of issue 34; each search fails there and passes on main:
      - test_writers_forks_and_delegates_in_random_rounds fails on
          261727d (parent of 89b4b7b): writers sharing a temporary file keep a layout that is not the
            shown one (3 of 3 with the fork and delegate checks taken out);
          89b4b7b (parent of 15cb730): a child's close applies the forker's partial text (2 of 2 with the
            delegate check taken out);
          769ec70 (parent of f18d911): the delegate's layout carved as root, its jobs 0:0 (every run:
            round 0 has the delegates write alone);
        and passes on 4d809d2.
      - test_mode_flips_under_mkdir_and_rmdir fails on 4d809d2 (parent of f5f61cb) and every commit
        before it: the mode went off through the tree while the card had a lost job, which lost its
        directory and kept the delegate's quota charge (every run: round 0 loses a job at least).  Its
        other half, mkdir answering ENOENT for a job it carved while the mode flipped, is a narrow race:
        neither this search nor ModeFlips reproduced it before f5f61cb on a loaded 2-core machine (not
        once in a dozen runs), so it is searched for here, not proven caught.
    """

    deleg, dgid, limit = 4321, 4300, 5
    dev = "gpu1"

    def setUp(self):
        super().setUp()
        self.seed = int(os.environ.get("ACCELFS_SEARCH_SEED", random.randrange(1 << 30)))
        self.rng = random.Random(self.seed)
        n = self.node
        os.chown(n.path(self.dev), self.deleg, self.dgid)
        os.chmod(n.path(self.dev), 0o755)  # the delegate carves there too, not only writes its layout
        write(n.path("quota"), f"user:{self.deleg} slices={self.limit}\n")

    def why(self, what):
        return f"{what} (ACCELFS_SEARCH_SEED={self.seed})"

    def jobs(self):
        """Every job of the card: name -> (profile, owner)."""
        n, out = self.node, {}
        for job, inst in self.by_job(self.dev).items():
            st = n.keyvals(self.dev, "mig", inst["profile"], job, "status")
            out[job] = (inst["profile"], st["owner"])
        return out

    def delegate_used(self):
        for line in self.node.read("quota").splitlines():
            if line.startswith(f"user:{self.deleg} "):
                return int(line.split("slices=")[1].split("/")[0])
        return 0

    def text(self):
        return "".join(line + "\n" for line in self.rng.sample(LINES, self.rng.randint(1, 3)))

    def reset(self):
        """Root declares nothing and the delegate's own jobs go: each round starts on an empty card."""
        n = self.node
        write(self.mig("layout", dev=self.dev), "\n")  # a blank line: nothing declared (what `: > layout` says too)
        wait_until(lambda: not any(j.startswith("layout-") for j in self.by_job(self.dev)),
                   what="the layout's jobs to go")
        for job, (prof, _) in self.jobs().items():
            os.rmdir(self.mig(prof, job, dev=self.dev))

    def test_writers_forks_and_delegates_in_random_rounds(self):
        n, dev, rng = self.node, self.dev, self.rng
        layout = self.mig("layout", dev=dev)
        me = f"{self.deleg}:{self.dgid}"
        for rnd in range(8):
            self.reset()
            # the first rounds cover each kind of writer alone and together; then any mix
            roots, delegates = [(0, rng.randint(2, 3)), (rng.randint(3, 6), 0), (rng.randint(2, 4), rng.randint(1, 3)),
                                (rng.randint(0, 6), rng.randint(0, 3))][min(rnd, 3)]
            forking = rnd == 1 or (rnd > 2 and rng.random() < 0.6)
            mkdirs = rnd == 2 or (rnd > 2 and rng.random() < 0.5)  # round 0: nothing keeps its layout pending
            if not (roots or delegates or forking):
                delegates = 2
            texts = [[self.text() for _ in range(4)] for _ in range(roots + delegates)]
            mix = f"round {rnd}: {roots} root writers, {delegates} delegates, forker {forking}, mkdirs {mkdirs}"
            stop = threading.Event()
            written, found = {""}, []  # "" is the reset's

            burst = threading.Barrier(max(roots, 1))

            def root_writer(mine):
                for t in mine * 2:  # root's writers write at once, a text each, eight times
                    try:
                        burst.wait(timeout=30)
                        write(layout, t)
                        written.add(t)
                    except OSError:  # it did not fit beside what another writer left: never a blend
                        pass
                    except threading.BrokenBarrierError:
                        found.append("a root writer never met the others")

            def delegate_writer(mine):
                while not stop.is_set():
                    for t in mine:
                        res = as_user(self.deleg, [self.dgid], "bash", "-c", 'printf "$1" > "$2"', "-",
                                      t.replace("\n", "\\n"), layout)
                        if res.returncode == 0:
                            written.add(t)

            def forker():
                whole = PARTIAL + "1g.18gb@6\n"
                while not stop.is_set():
                    try:
                        fd = os.open(layout, os.O_WRONLY | os.O_TRUNC)
                    except OSError:
                        continue
                    try:
                        os.write(fd, PARTIAL.encode())
                        pid = os.fork()
                        if pid == 0:
                            os._exit(0)  # the child's copy closes: a FLUSH from another process
                        os.waitpid(pid, 0)
                        if n.read(dev, "mig", "layout") == PARTIAL:
                            found.append("a child's close applied the forker's partial text")
                        os.write(fd, b"1g.18gb@6\n")
                    except OSError:
                        pass
                    finally:
                        try:
                            os.close(fd)  # the writer's close: its whole text, or its refusal
                            written.add(whole)
                        except OSError:
                            pass

            def delegate_mkdirs():
                k = 0
                while not stop.is_set():
                    path = self.mig("1g.18gb", f"d{k % 3}", dev=dev)
                    res = as_user(self.deleg, [self.dgid], "python3", "-c",
                                  f"import os\ntry: os.mkdir({path!r})\nexcept OSError as e: print(e.errno)")
                    if res.stdout.strip() == str(errno.EACCES):
                        found.append("the delegate may not carve on its card")  # the search would search nothing
                    k += 1

            def watcher():
                while not stop.is_set():
                    if n.read(dev, "mig", "layout") == PARTIAL:
                        found.append("the forker's partial text was shown")
                    if self.delegate_used() > self.limit:
                        found.append("the delegate's charge passed its limit")

            work = [threading.Thread(target=root_writer, args=(texts[i],)) for i in range(roots)]
            work += [threading.Thread(target=delegate_writer, args=(texts[roots + i],)) for i in range(delegates)]
            work += [threading.Thread(target=f) for f, on in ((forker, forking), (delegate_mkdirs, mkdirs),
                                                               (watcher, True)) if on]
            for t in work:
                t.start()
            try:
                for t in work[:roots]:
                    t.join()
                stop.wait(1.5)  # how long the rest runs on; nothing is asserted about time
            finally:
                stop.set()
                for t in work:
                    t.join()
            self.assertEqual(sorted(set(found)), [], self.why(mix))
            shown = n.read(dev, "mig", "layout")
            self.assertEqual(kept_text(n, dev), shown, self.why(f"{mix}: the kept layout is not the shown one"))
            self.assertIn(shown, written, self.why(f"{mix}: a layout nobody wrote whole"))
            jobs = self.jobs()
            owners = {owner for job, (_, owner) in jobs.items() if job.startswith("layout-")}
            if not roots and not forking:  # only the delegate declared: the layout's jobs are the delegate's
                self.assertLessEqual(owners, {me}, self.why(f"{mix}: the delegate's layout carved as another"))
            elif not delegates:
                self.assertLessEqual(owners, {"0:0"}, self.why(f"{mix}: root's layout carved as another"))
            mine = sum(SLICES[prof] for prof, owner in jobs.values() if owner == me)
            self.assertLessEqual(mine, self.limit, self.why(f"{mix}: the delegate holds more than its quota"))
            self.assertEqual(self.delegate_used(), mine,
                             self.why(f"{mix}: the delegate is charged for other than its jobs"))
            self.assertSettled(self.why(mix))
        # what is shown is what a restart applies
        n.restart()
        self.assertEqual(n.read(dev, "mig", "layout"), shown, self.why("a restart applied another layout"))
        self.assertSettled(self.why("after the restart"))

    def test_mode_flips_under_mkdir_and_rmdir(self):
        """Rounds on the delegate's card: its driver flips the mode while root and the delegate carve and
        remove (a job is there exactly when mkdir said so); then jobs, some lost behind accelfs's back (their
        instance destroyed by hand), the rest removed, and the mode turned off through the tree: taken only
        when no job is left to lose its directory, its name and the delegate's quota charge."""
        n, dev, rng = self.node, self.dev, self.rng
        for rnd in range(4):
            stop = threading.Event()
            wrong = []

            def flipper():
                while not stop.is_set():
                    for mode in (0, 1):
                        try:
                            n.smi("gpu", "-i", 1, "-mig", mode)
                        except AssertionError:  # "in use": a job is on the card now
                            pass

            def carver(who):
                script = ("import os, sys\n"
                          "for name in sys.argv[2:]:\n"
                          "    p = os.path.join(sys.argv[1], name)\n"
                          "    try:\n"
                          "        os.mkdir(p)\n"
                          "    except OSError as e:\n"
                          "        print(name, e.errno, flush=True)\n"
                          "        continue\n"
                          "    print(name, 0, flush=True)\n"
                          "    try:\n"
                          "        os.rmdir(p)\n"
                          "    except OSError:\n"
                          "        pass\n")
                names = [f"{who}{rnd}x{i}" for i in range(40)]
                cmd = ["python3", "-c", script, self.mig("1g.18gb", dev=dev), *names]
                res = as_user(self.deleg, [self.dgid], *cmd) if who == "d" else subprocess.run(
                    cmd, capture_output=True, text=True)
                present = set(self.by_job(dev))  # a job mkdir made stays until its rmdir: this late is soon enough
                for line in res.stdout.splitlines():
                    name, err = line.split()
                    if int(err) == errno.ENOENT and name in present:
                        wrong.append(name)  # answered "no such", and carved

            work = [threading.Thread(target=flipper)]
            carvers = [threading.Thread(target=carver, args=(who,)) for who in ("r", "d")]
            for t in work + carvers:
                t.start()
            try:
                for t in carvers:
                    t.join()
            finally:
                stop.set()
                for t in work:
                    t.join()
            n.smi("gpu", "-i", 1, "-mig", 1)
            wait_until(lambda: n.read(dev, "mig", "mode") == "enabled\n", what="the mode back on")
            self.assertEqual(wrong, [], self.why(f"round {rnd}: mkdir answered ENOENT for jobs it carved"))
            for job, (prof, _) in self.jobs().items():  # every job left has its directory, and goes with rmdir
                os.rmdir(self.mig(prof, job, dev=dev))
            self.assertEqual(self.delegate_used(), 0, self.why(f"round {rnd}: a charge with no job"))
            # the delegate's jobs, some lost, the rest removed; then the mode off through the tree
            made = [f"k{rnd}x{i}" for i in range(rng.randint(1, 3))]
            for job in made:
                res = as_user(self.deleg, [self.dgid], "mkdir", self.mig("1g.18gb", job, dev=dev))
                self.assertEqual(res.returncode, 0, res.stderr)
            lost = rng.sample(made, rng.randint(0 if rnd else 1, len(made)))  # the first round loses one at least
            for job in lost:
                st = n.keyvals(dev, "mig", "1g.18gb", job, "status")
                n.smi("gpu", "mig", "-i", 1, "-gi", st["gi"], "-ci", 0, "-dci")  # destroyed behind accelfs's back
                n.smi("gpu", "mig", "-i", 1, "-gi", st["gi"], "-dgi")
            for job in lost:
                wait_until(lambda: n.keyvals(dev, "mig", "1g.18gb", job, "status")["state"] == "lost",
                           what=f"{job} to be lost")
            for job in made:
                if job not in lost:
                    os.rmdir(self.mig("1g.18gb", job, dev=dev))
            taken = n.errno_of(write, self.mig("mode", dev=dev), "disabled\n") == 0
            if taken:  # nothing was left: nothing lost its directory, and nobody is charged
                self.assertEqual(lost, [], self.why(f"round {rnd}: the mode went off with lost jobs {lost}"))
                self.assertEqual(self.delegate_used(), 0, self.why(f"round {rnd}: a charge with the mode off"))
                write(self.mig("mode", dev=dev), "enabled\n")
                wait_until(lambda: n.read(dev, "mig", "mode") == "enabled\n", what="the mode back on")
            prof_dir = self.mig("1g.18gb", dev=dev)
            left = sorted(j for j in os.listdir(prof_dir)
                          if j != "placements" and os.path.isdir(os.path.join(prof_dir, j)))
            self.assertEqual(left, sorted(lost), self.why(f"round {rnd}: the jobs left"))
            self.assertEqual(self.delegate_used(), len(lost), self.why(f"round {rnd}: the delegate's charge"))
            for job in lost:
                os.rmdir(self.mig("1g.18gb", job, dev=dev))
            self.assertEqual(self.delegate_used(), 0)
            self.assertSettled(self.why(f"after flip round {rnd}"))


if __name__ == "__main__":
    unittest.main()
