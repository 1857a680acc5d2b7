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
            return f.read()

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


if __name__ == "__main__":
    unittest.main()
