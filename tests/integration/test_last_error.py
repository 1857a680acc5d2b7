# SPDX-License-Identifier: MIT
"""last_error as docs/tree.md states it: the outcome of the last operation in the directory, with its
time; a newer success clears it and a newer failure replaces it; a refusal that named containers goes
with the last of them; the failures the kernel answers itself never reach it; and the number of busy
retries it gives is the one status gives."""
import datetime
import errno
import os
import re
import subprocess
import time
import unittest

from harness import NodeTestCase, wait_until

PROF = ("ppu3", "mig", "4g.48gb")
LINE = re.compile(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3})Z (.+)\n$")


def as_user(uid, *cmd):
    return subprocess.run(["setpriv", f"--reuid={uid}", f"--regid={uid}", f"--groups={uid}", *cmd],
                          capture_output=True, text=True)


class Reading(NodeTestCase):
    def last_error(self, *prof):
        return self.node.read(*(prof or PROF), "last_error")

    def sentence(self, *prof):
        """The sentence of last_error, after checking its time is now."""
        text = self.last_error(*prof)
        m = LINE.match(text)
        self.assertIsNotNone(m, f"last_error is one timed line: {text!r}")
        when = datetime.datetime.strptime(m.group(1), "%Y-%m-%dT%H:%M:%S.%f").replace(tzinfo=datetime.timezone.utc)
        self.assertLess(abs((datetime.datetime.now(datetime.timezone.utc) - when).total_seconds()), 120)
        return m.group(2)

    def write(self, path, text):
        with open(path, "w") as f:
            f.write(text)


class LastError(Reading):
    def test_each_line_has_its_time_and_the_last_outcome_wins(self):
        n = self.node
        n.mkdir(*PROF, "a")
        n.mkdir(*PROF, "b")
        self.assertErrno(errno.ENOSPC, os.mkdir, n.path(*PROF, "c"))
        self.assertIn("no free placement", self.sentence())
        first = self.last_error()
        time.sleep(0.01)  # the times are milliseconds: the next line's differs
        self.assertErrno(errno.EINVAL, os.mkdir, n.path(*PROF, "bad-"))
        self.assertNotEqual(self.last_error(), first)
        self.assertNotIn("no free placement", self.last_error(), "a newer failure replaces the older one")
        self.assertIn("is not valid", self.sentence())
        # A write to a job's containers or reclaim is an operation of the directory too.
        self.assertErrno(errno.EINVAL, self.write, n.path(*PROF, "a", "reclaim"), "sometimes\n")
        self.assertIn("reclaim", self.sentence())
        self.write(n.path(*PROF, "a", "reclaim"), "manual\n")
        self.assertEqual(self.last_error(), "", "a newer success clears it")
        self.assertErrno(errno.ENOSPC, os.mkdir, n.path(*PROF, "c"))
        os.rmdir(n.path(*PROF, "b"))
        self.assertEqual(self.last_error(), "", "a successful rmdir clears it")

    def test_a_refusal_naming_containers_goes_with_them(self):
        n = self.node
        n.mkdir(*PROF, "job1")
        sleeper = subprocess.Popen(["sleep", "600"])
        try:
            self.write(n.path(*PROF, "job1", "containers"), f"attach c0ffee {sleeper.pid}\n")
            self.assertEqual(self.last_error(), "", "the attach succeeded")
            self.assertErrno(errno.EBUSY, os.rmdir, n.path("mig", "4g.48gb", "job1"))
            for prof in (PROF, ("mig", "4g.48gb")):
                self.assertIn(f"job1 is attached to 1 container: c0ffee (pid {sleeper.pid})", self.sentence(*prof))
        finally:
            sleeper.kill()
            sleeper.wait()
        # The daemon sees the container's process go: the sentence naming it goes too, in both views.
        wait_until(lambda: self.last_error() == "" and self.last_error("mig", "4g.48gb") == "",
                   what="the refusal to outlive the container it named")
        self.assertEqual(n.read(*PROF, "job1", "containers"), "")
        os.rmdir(n.path(*PROF, "job1"))

    def test_what_the_kernel_answers_never_reaches_it(self):
        """docs/tree.md's list: each failure the kernel answers leaves last_error as it was."""
        n = self.node
        n.mkdir(*PROF, "job1")
        self.assertErrno(errno.EINVAL, os.mkdir, n.path(*PROF, "marker-"))
        marker = self.last_error()
        self.assertIn("marker-", marker)
        cases = [
            ("a name that exists in the directory", errno.EEXIST, lambda: os.mkdir(n.path(*PROF, "job1"))),
            ("a file's name", errno.EEXIST, lambda: os.mkdir(n.path(*PROF, "info"))),
            ("a name of 256 bytes", errno.ENAMETOOLONG, lambda: os.mkdir(n.path(*PROF, "x" * 256))),
            ("rmdir of no such job", errno.ENOENT, lambda: os.rmdir(n.path(*PROF, "nope"))),
        ]
        for what, want, fn in cases:
            self.assertErrno(want, fn)
            self.assertEqual(self.last_error(), marker, f"{what}: the kernel answers, last_error is untouched")
        r = as_user(4321, "mkdir", n.path(*PROF, "theirs"))
        self.assertIn("Permission denied", r.stderr)
        self.assertEqual(self.last_error(), marker, "EACCES (default_permissions) never reaches accelfs")
        # Delegated and sticky: the user carves, but cannot remove root's job (EPERM, the kernel's).
        os.chown(n.path(*PROF), 0, 4321)
        os.chmod(n.path(*PROF), 0o1775)
        r = as_user(4321, "rmdir", n.path(*PROF, "job1"))
        self.assertIn("Operation not permitted", r.stderr)
        self.assertEqual(self.last_error(), marker, "the sticky bit's EPERM never reaches accelfs")
        # ... and what does reach it: a name too long for a job but within the kernel's 255 bytes,
        # and a name taken elsewhere on the node.
        self.assertErrno(errno.ENAMETOOLONG, os.mkdir, n.path(*PROF, "y" * 255))
        self.assertIn("yyyy", self.sentence())
        self.assertErrno(errno.EEXIST, os.mkdir, n.path("ppu4", "mig", "4g.48gb", "job1"))
        self.assertIn("job1", self.sentence("ppu4", "mig", "4g.48gb"))

    def test_busy_retries_are_one_number_in_status_and_last_error(self):
        n = self.node
        n.mkdir(*PROF, "half")
        n.smi("ppu", "sim", "fault", "GpuInstanceDestroy", "IN_USE", "--skip", 0, "--times", 100000)
        self.assertErrno(errno.EBUSY, os.rmdir, n.path(*PROF, "half"))
        why = self.sentence()
        self.assertIn(f"after {self.busy_retries} retries", why, "rmdir retried --busy-retries times")
        # The poller resumes the removal once per pass, and says so in status: no count of its own.
        try:
            wait_until(lambda: "the poller tries again" in n.keyvals(*PROF, "half", "status").get("reason", ""),
                       what="the poller's pass to say what it did")
        except AssertionError:
            raise AssertionError(n.read(*PROF, "half", "status") + why + n.log()[-2000:])
        status = n.read(*PROF, "half", "status")
        self.assertNotIn("after 0 retries", status)
        self.assertNotRegex(status, r"after (?!%d )\d+ retries" % self.busy_retries)
        n.smi("ppu", "sim", "clear-faults")
        wait_until(lambda: not os.path.exists(n.path(*PROF, "half")), what="the poller to finish the removal")


class Values(Reading):
    """Values a script reads: the value alone, the card named once, and a lost card's rmdir."""

    def test_info_values_are_the_value_alone(self):
        n = self.node
        ppu = n.keyvals("ppu3", "info")
        self.assertEqual(ppu["ordinal"], "3")
        self.assertRegex(ppu["minor"], r"^[0-9]+$")
        gpu = n.keyvals("gpu0", "info")
        self.assertEqual(gpu["index"], "0")
        self.assertRegex(gpu["minor"], r"^[0-9]+$")
        for text in (n.read("ppu3", "info"), n.read("gpu0", "info")):
            for line in text.splitlines():
                key, _, value = line.partition(": ")
                if key in ("ordinal", "index", "minor", "memory_mib", "mig_mode", "bus_id", "uuid"):
                    self.assertNotIn("(", value, f"{key}: an explanation belongs to docs/tree.md")

    def test_job_directories_refuse_chown_and_chmod_as_tree_md_says(self):
        n = self.node
        n.mkdir(*PROF, "job1")
        for fn, args in ((os.chown, (4321, 4321)), (os.chmod, (0o700,))):
            self.assertErrno(errno.EPERM, fn, n.path(*PROF, "job1"), *args)
            self.assertErrno(errno.EPERM, fn, n.path(*PROF, "job1", "dev"), *args)
        self.assertEqual(n.keyvals(*PROF, "job1", "status")["owner"], "0:0")
        with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "docs", "tree.md")) as f:
            tree = f.read()
        self.assertIn("every other directory and every file answers `EPERM`", tree)
        self.assertIn("- a job's directory and its `dev/`: a job belongs to the user who made it", tree)

    def test_a_card_lost_while_running_is_named_once_and_rmdir_answers_enodev(self):
        n = self.node
        n.mkdir(*PROF, "job1")
        n.smi("ppu", "sim", "remove", "-i", 3)
        wait_until(lambda: n.keyvals("ppu3", "info")["state"].startswith("refused: "), what="ppu3 to be refused")
        state = n.keyvals("ppu3", "info")["state"]
        self.assertIn("GPU_IS_LOST", state)
        self.assertNotIn("ppu3", state, "the card's own file does not name it again")
        self.assertNotIn("ppu3: refused: ppu3", n.log())
        self.assertErrno(errno.ENODEV, os.rmdir, n.path(*PROF, "job1"))
        why = self.sentence(*PROF)
        self.assertIn("GPU_IS_LOST", why)
        self.assertLessEqual(why.count("ppu3"), 1, f"the card named once at most: {why}")
        self.assertEqual(n.keyvals(*PROF, "job1", "status")["state"], "ready", "the job is kept")
        n.smi("ppu", "sim", "add", "-i", 3)
        wait_until(lambda: n.keyvals("ppu3", "info")["state"] == "ok", what="ppu3 to come back")
        os.rmdir(n.path(*PROF, "job1"))


if __name__ == "__main__":
    unittest.main()
