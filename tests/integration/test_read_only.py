# SPDX-License-Identifier: MIT
"""--read-only changes nothing: a daemon started --read-only over a state
directory a normal run left (jobs on both families, one through the
node-level view, containers attached, a reclaim policy, delegations, and
the CDI spec files of that daemon, killed so that they stay), after the
hardware moved on meanwhile (a job's instance destroyed by hand, an orphan
carved, an attached container gone: a managing daemon would drop the job's
spec file and its killed predecessor's, clear the attachment and reclaim
the orphan), answers EROFS to every write and every directory operation on
every entry of the tree, found by walking it (so a file added to
fs/tree_files.c or fs/dies_tree.c is covered without a change here), and
leaves the state directory as it was: every file, byte for byte, inode for
inode (the CDI directory and the simulated hardware are in it), but the two
files that name the serving daemon (accelfs.lock, accelfs.pid) and what the
simulator keeps of whoever uses it (its call counters, the slot's open
handles; its procfs is written afresh at each load, with the same text).
The slot's swaps and each die's acquires do not move either.

The mount is read-only in the kernel, which answers first; then it is
remounted read-write (root may), and the whole walk runs again against the
daemon's own refusals.
"""
import errno
import hashlib
import os
import re
import stat
import subprocess
import tempfile
import unittest

from harness import Node, keep_failed_log, test_failed, wait_until

PROF = ("ppu3", "mig", "4g.48gb")
CID_A = "a1" * 32
CID_B = "b2" * 32
RUN_FILES = {"accelfs.lock", "accelfs.pid"}  # name the serving daemon, whoever it is
# The simulator's own bookkeeping of who uses the simulated hardware: calls counted, the word event waiters
# sleep on, the slot's open handles.
SIM_BOOKKEEPING = re.compile(r"^sim/([^/]+/(counters|health\.wake)|barswap/(slot\.state|init\.lock|handles(/.*)?))$")
# The simulated procfs, written afresh (the same text) each time the simulator is loaded.
SIM_PROC = re.compile(r"^sim/[^/]+/proc/")


def fingerprint(root):
    """Every entry under root but the run files and the simulator's bookkeeping: its type and mode, and for a
    file its inode, size, mtime and digest (the simulated procfs: its digest).  Directories are compared by what
    is in them (a run file coming and going moves their mtime)."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            path = os.path.join(dirpath, name)
            rel = os.path.relpath(path, root)
            if rel in RUN_FILES or SIM_BOOKKEEPING.match(rel):
                continue
            st = os.lstat(path)
            if stat.S_ISREG(st.st_mode):
                with open(path, "rb") as f:
                    digest = hashlib.sha256(f.read()).hexdigest()
                out[rel] = (st.st_mode, digest) if SIM_PROC.match(rel) else (st.st_mode, st.st_ino, st.st_size,
                                                                              st.st_mtime_ns, digest)
            else:
                out[rel] = (st.st_mode, os.readlink(path) if stat.S_ISLNK(st.st_mode) else None)
    return out


def entries(root):
    """(path, lstat) of every entry of the mounted tree, symbolic links not followed."""
    out = []
    stack = [root]
    while stack:
        d = stack.pop()
        with os.scandir(d) as it:
            for e in it:
                st = e.stat(follow_symlinks=False)
                out.append((e.path, st))
                if stat.S_ISDIR(st.st_mode):
                    stack.append(e.path)
    return out


def errno_of(fn, *args, **kw):
    try:
        fn(*args, **kw)
    except OSError as e:
        return e.errno
    return 0


def attempts(root):
    """Every write and directory operation the tree has, on every entry: (what, callable)."""
    out = []
    tree = entries(root)
    some_file = next(p for p, st in tree if stat.S_ISREG(st.st_mode))
    for path, st in [(root, os.lstat(root))] + tree:
        rel = os.path.relpath(path, root)
        mode = st.st_mode
        if stat.S_ISDIR(mode):
            new = os.path.join(path, "rotest1")
            out += [(f"mkdir {rel}/rotest1", lambda n=new: os.mkdir(n)),
                    (f"create {rel}/rotest1", lambda n=new: os.close(os.open(n, os.O_CREAT | os.O_WRONLY, 0o644))),
                    (f"mknod {rel}/rotest1", lambda n=new: os.mknod(n, 0o600 | stat.S_IFREG)),
                    (f"symlink {rel}/rotest1", lambda n=new: os.symlink("x", n)),
                    (f"link into {rel}", lambda n=new: os.link(some_file, n))]
            if path != root:
                out += [(f"rmdir {rel}", lambda p=path: os.rmdir(p)),
                        (f"rename {rel}", lambda p=path: os.rename(p, p + "x"))]
        if stat.S_ISREG(mode):
            for flags, name in ((os.O_WRONLY, "O_WRONLY"), (os.O_RDWR, "O_RDWR"),
                                (os.O_WRONLY | os.O_APPEND, "O_APPEND"), (os.O_RDONLY | os.O_TRUNC, "O_TRUNC")):
                out.append((f"open {rel} {name}", lambda p=path, f=flags: os.close(os.open(p, f))))
            out += [(f"truncate {rel}", lambda p=path: os.truncate(p, 0))]
            if os.path.basename(path) == "vram":
                # Opening vram takes the slot, a change of the hardware's state: refused for reading too.
                out.append((f"open {rel} O_RDONLY", lambda p=path: os.close(os.open(p, os.O_RDONLY))))
        if not stat.S_ISDIR(mode):
            out += [(f"unlink {rel}", lambda p=path: os.unlink(p)),
                    (f"rename {rel}", lambda p=path: os.rename(p, p + "x"))]
        if not stat.S_ISLNK(mode):
            out += [(f"chmod {rel}", lambda p=path, m=mode: os.chmod(p, (m & 0o7777) ^ 0o070)),
                    (f"chown {rel}", lambda p=path: os.chown(p, 1234, 1234)),
                    (f"chgrp {rel}", lambda p=path: os.chown(p, -1, 1234)),
                    (f"utime {rel}", lambda p=path: os.utime(p, (1, 1)))]
    return out


class ReadOnly(unittest.TestCase):
    maxDiff = None

    def setUp(self):
        self.node = Node()
        self.procs = []
        self.outside = tempfile.mkdtemp(prefix="accelfs-ro-log-")

    def tearDown(self):
        for p in self.procs:
            p.kill()
            p.wait()
        subprocess.run(["mount", "-i", "-o", "remount,ro", self.node.mnt], check=False, capture_output=True)
        failed = test_failed(self)
        try:
            self.node.stop()
        finally:
            reports = self.node.sanitizer_reports()
            if failed or reports:
                keep_failed_log(self, self.node)
            self.node.cleanup()
            subprocess.run(["rm", "-rf", self.outside], check=True)
        self.assertEqual(reports, "", "the daemon's sanitizers reported errors")

    def sleeper(self):
        p = subprocess.Popen(["sleep", "1000"])
        self.procs.append(p)
        return p

    def write(self, text, *parts):
        with open(self.node.path(*parts), "w") as f:
            f.write(text)

    def populate(self):
        """What a normal run leaves: jobs, attachments, a reclaim policy, delegations, CDI spec files."""
        n = self.node
        n.mkdir(*PROF, "job1")
        n.mkdir("mig", "1g.18gb", "job2")
        n.mkdir("gpu0", "mig", "3g.71gb", "job3")
        gone = self.sleeper()
        self.write(f"attach {CID_A} {self.sleeper().pid}\n", *PROF, "job1", "containers")
        self.write(f"attach {CID_B} {gone.pid}\n", *PROF, "job1", "containers")
        self.write("when-detached\n", "gpu0", "mig", "3g.71gb", "job3", "reclaim")
        os.chown(n.path("ppu3"), -1, 1234)
        os.chmod(n.path("ppu3"), 0o775)
        os.chmod(n.path(*PROF), 0o1775)
        with open(n.path("dies", "3", "vram"), "r+b", buffering=0) as f:
            f.write(b"kept across the read-only run")
        for name in ("attachments.json", "delegation.json"):
            self.assertTrue(os.path.exists(os.path.join(n.state, name)), name)
        self.assertEqual(len(self.spec_files()), 3)
        return gone

    def spec_files(self):
        """The node-level CDI spec files (one per ready job) in the simulated node's CDI directory."""
        cdi = os.path.join(self.node.state, "cdi")
        return sorted(f for f in os.listdir(cdi) if f.startswith("accelfs-") and f.endswith(".json"))

    def slot_counts(self):
        """The slot's swaps and every die's acquires: what taking the slot moves."""
        n = self.node
        counts = {"swaps": n.keyvals("dies", "slot")["swaps"]}
        for d in os.listdir(n.path("dies")):
            if d.isdigit():
                counts[d] = n.keyvals("dies", d, "info")["acquires"]
        return counts

    def test_read_only_changes_nothing_and_refuses_every_write(self):
        n = self.node
        n.start()
        gone = self.populate()
        counts = self.slot_counts()
        # Killed, so that its spec files stay (a clean stop withdraws them; the next managing start would too).
        n.kill9()
        specs = self.spec_files()
        # The hardware moves on: what a managing daemon would act on at its next start.
        gone.kill()
        gone.wait()
        n.smi("gpu", "mig", "-i", 0, "-dci")
        n.smi("gpu", "mig", "-i", 0, "-dgi")
        n.smi("ppu", "mig", "-i", 6, "-cgi", 5, "-C")
        before = fingerprint(n.state)

        n.extra = ["--read-only", f"--log={self.outside}/accelfs.log"]
        n.start()
        # It serves what is there, and says what it does not do.
        self.assertIn("ro", self.mount_options())
        self.assertEqual(n.keyvals("gpu0", "mig", "3g.71gb", "job3", "status")["state"], "lost")
        self.assertIn(f"id={CID_A}", n.read(*PROF, "job1", "containers"))
        self.assertIn("foreign: not made by accelfs; kept", n.read("ppu6", "mig", "instances"))
        self.assertEqual(n.keyvals("dies", "3", "info")["enabled"], "1")
        self.assertEqual(os.stat(n.path("ppu3")).st_gid, 1234)

        self.check_every_write_is_erofs("the kernel (a read-only mount)")
        self.assertEqual(fingerprint(n.state), before)
        # Root may remount it read-write: the daemon refuses on its own.
        subprocess.run(["mount", "-i", "-o", "remount,rw", n.mnt], check=True)
        self.assertNotIn("ro", self.mount_options())
        self.check_every_write_is_erofs("the daemon (remounted read-write)")
        self.assertEqual(fingerprint(n.state), before)
        for f in ("containers", "status", "holders", "reclaim"):  # reads still work, and change nothing
            n.read(*PROF, "job1", f)
        self.assertEqual(fingerprint(n.state), before)
        self.assertEqual(self.slot_counts(), counts)
        subprocess.run(["mount", "-i", "-o", "remount,ro", n.mnt], check=True)
        n.stop()
        self.assertEqual(fingerprint(n.state), before)
        self.assertEqual(self.spec_files(), specs)
        with open(os.path.join(self.outside, "accelfs.log")) as f:
            self.assertIn("read-only: every write, mkdir, rmdir, chmod and chown answers EROFS", f.read())

        # And a managing daemon after it does change what the read-only one left alone.
        n.extra = []
        n.start()
        wait_until(lambda: f"id={CID_B}" not in n.read(*PROF, "job1", "containers"), what="the stale attachment")
        self.assertNotEqual(fingerprint(n.state), before)

    def mount_options(self):
        with open("/proc/self/mountinfo") as f:
            for line in f:
                fields = line.split()
                if fields[4] == self.node.mnt:
                    return fields[5].split(",")
        raise AssertionError(f"{self.node.mnt} is not mounted")

    def check_every_write_is_erofs(self, who):
        tried = attempts(self.node.mnt)
        wrong = [(what, errno.errorcode.get(e, e)) for what, fn in tried if (e := errno_of(fn)) != errno.EROFS]
        self.assertEqual(wrong, [], f"not EROFS from {who}")
        # The walk reached what matters: jobs' writable files, the dies', delegatable directories.
        names = {what for what, _ in tried}
        for must in ("open ppu3/mig/4g.48gb/job1/containers O_WRONLY", "open mig/1g.18gb/job2/reclaim O_WRONLY",
                     "open dies/3/enabled O_WRONLY", "open dies/lease_ms O_WRONLY", "open dies/3/policy O_WRONLY",
                     "open dies/3/driver O_WRONLY", "open dies/3/vram O_RDONLY", "rmdir ppu3/mig/4g.48gb/job1",
                     "mkdir ppu3/mig/4g.48gb/rotest1", "mkdir mig/1g.18gb/rotest1", "chmod ppu3", "chgrp ppu3",
                     "chown .", "truncate ppu3/info", "open quota O_WRONLY"):
            self.assertIn(must, names)


if __name__ == "__main__":
    unittest.main(verbosity=2)
