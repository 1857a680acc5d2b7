# SPDX-License-Identifier: MIT
"""Issue 34, item 8: on a node whose /proc is mounted hidepid, accelfs shows a process's command and
arguments only to a reader who could see them in /proc (the process's own user, root, a member of
hidepid's gid=); to anyone else, the pid with "hidden" in their place.  The files stay live: the
rule is the reader's at open, and /proc's mount options as they are at that moment.

The whole file runs in a mount namespace of its own (unshared before any daemon starts) whose /proc
is a fresh proc mount with hidepid=invisible: the node's own /proc is never touched."""
import ctypes
import errno
import os
import subprocess
import unittest

from harness import NodeTestCase, wait_until

CLONE_NEWNS = 0x00020000
OWNER, OTHER, SEERS = 4001, 4002, 4242  # the holder's user, another user, hidepid's gid=
CARD = "ppu7"


def setUpModule():
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.unshare(CLONE_NEWNS):
        raise OSError(ctypes.get_errno(), "unshare(CLONE_NEWNS)")
    subprocess.run(["mount", "--make-rprivate", "/"], check=True)  # nothing here reaches the node's mounts
    subprocess.run(["mount", "-t", "proc", "-o", f"hidepid=invisible,gid={SEERS}", "proc", "/proc"], check=True)


def proc_options(opts):
    subprocess.run(["mount", "-o", f"remount,{opts}", "/proc"], check=True)


def as_user(uid, gids, *cmd):
    """cmd as uid, with gids[0] its group and all of gids its groups; no capabilities left."""
    return subprocess.run(["setpriv", f"--reuid={uid}", f"--regid={gids[0]}",
                           f"--groups={','.join(str(g) for g in gids)}", *cmd], capture_output=True, text=True)


class Hidden(NodeTestCase):
    def setUp(self):
        proc_options(f"hidepid=invisible,gid={SEERS}")
        super().setUp()
        self.procs = []

    def tearDown(self):
        for p in self.procs:
            p.kill()
            p.wait()
        proc_options(f"hidepid=invisible,gid={SEERS}")
        super().tearDown()

    def holder(self, path):
        """A sleeping process of user OWNER holding path open (opened here, as root, and handed down)."""
        fd = os.open(path, os.O_PATH)  # as `accel-smi sim hold`: a simulated node has no driver to open
        try:
            p = subprocess.Popen(["setpriv", f"--reuid={OWNER}", f"--regid={OWNER}", "--clear-groups",
                                  "sleep", "1000"], stdin=fd)
        finally:
            os.close(fd)
        self.procs.append(p)
        wait_until(lambda: os.readlink(f"/proc/{p.pid}/exe").endswith("/sleep"), what="the holder to exec sleep")
        return p

    def read_as(self, uid, gids, *parts):
        res = as_user(uid, gids, "cat", self.node.path(*parts))
        self.assertEqual(res.returncode, 0, res.stderr)
        return res.stdout

    def kernel_shows(self, uid, gids, pid):
        return as_user(uid, gids, "cat", f"/proc/{pid}/cmdline").returncode == 0

    def line_of(self, text, pid):
        lines = [line for line in text.splitlines() if line.startswith(f"pid={pid} ")]
        self.assertEqual(len(lines), 1, text)
        return lines[0]

    def test_a_cards_holders_show_a_process_to_whoever_proc_shows_it_to(self):
        n = self.node
        h = self.holder(os.path.join(n.state, "sim", "thead", "dev", f"alixpu_{CARD}"))
        wait_until(lambda: f"pid={h.pid} " in n.read(CARD, "holders"), what="the holder to show")
        shown = f"pid={h.pid} command=sleep fds=1 cmdline=sleep 1000"
        hidden = f"pid={h.pid} command=hidden fds=1 cmdline=hidden"
        readers = {  # who reads: (uid, groups), whether the kernel shows them the process
            "root": ((0, [0]), True),
            "its own user": ((OWNER, [OWNER]), True),
            "another user": ((OTHER, [OTHER]), False),
            "a member of hidepid's gid=": ((OTHER, [OTHER, SEERS]), True),
        }
        for who, ((uid, gids), sees) in readers.items():
            with self.subTest(who=who):
                self.assertEqual(self.kernel_shows(uid, gids, h.pid), sees, "the premise: what /proc shows")
                text = n.read(CARD, "holders") if uid == 0 else self.read_as(uid, gids, CARD, "holders")
                self.assertEqual(self.line_of(text, h.pid), shown if sees else hidden)
        # /proc remounted without hidepid: everyone sees everything, at the next open (a live file)
        proc_options("hidepid=off")
        self.assertTrue(self.kernel_shows(OTHER, [OTHER], h.pid))
        self.assertEqual(self.line_of(self.read_as(OTHER, [OTHER], CARD, "holders"), h.pid), shown)
        proc_options("hidepid=noaccess")
        self.assertEqual(self.line_of(self.read_as(OTHER, [OTHER], CARD, "holders"), h.pid), hidden)

    def test_a_jobs_holders_and_processes_hide_what_proc_hides(self):
        n = self.node
        job = (CARD, "mig", "4g.48gb", "job1")
        os.mkdir(n.path(*job))
        st = n.keyvals(*job, "status")
        nodes = {d["name"]: d["containerEdits"]["deviceNodes"]
                 for spec in n.cdi_specs().values() for d in spec["devices"]}
        h = self.holder([x["hostPath"] for x in nodes["job1"] if "-caps/" in x["path"]][0])  # the job's own node
        n.smi("ppu", "sim", "busy", "-i", 7, "-gi", st["gi"], "-ci", st["ci"], 1, f"{h.pid}:64")
        wait_until(lambda: f"pid={h.pid} " in n.read(*job, "holders"), what="the job's holder to show")
        for (uid, gids), sees in (((OWNER, [OWNER]), True), ((OTHER, [OTHER]), False)):
            with self.subTest(uid=uid):
                holders = self.line_of(self.read_as(uid, gids, *job, "holders"), h.pid)
                processes = self.line_of(self.read_as(uid, gids, *job, "processes"), h.pid)
                via_node = self.line_of(self.read_as(uid, gids, "mig", "4g.48gb", "job1", "processes"), h.pid)
                if sees:
                    self.assertEqual(holders, f"pid={h.pid} command=sleep fds=1 cmdline=sleep 1000")
                    self.assertEqual(processes, f"pid={h.pid} used_memory_bytes={64 << 20} command=sleep")
                else:
                    self.assertEqual(holders, f"pid={h.pid} command=hidden fds=1 cmdline=hidden")
                    self.assertEqual(processes, f"pid={h.pid} used_memory_bytes={64 << 20} command=hidden")
                self.assertEqual(via_node, processes)
        # a descriptor opened by root and read by another process is still root's text: the opener's rule
        self.assertIn(f"pid={h.pid} command=sleep ", n.read(*job, "holders"))
        n.smi("ppu", "sim", "busy", "-i", 7, "-gi", st["gi"], "-ci", st["ci"], 0)

    def test_last_error_names_holders_by_pid_alone_while_proc_hides_them(self):
        n = self.node
        h = self.holder(os.path.join(n.state, "sim", "thead", "dev", f"alixpu_{CARD}"))
        wait_until(lambda: f"pid={h.pid} " in n.read(CARD, "holders"), what="the holder to show")
        self.assertErrno(errno.EBUSY, self.write_mode, "disabled\n")
        said = n.read(CARD, "mig", "last_error")
        self.assertIn(f"held open by pid {h.pid} (/proc hides processes:", said)
        self.assertNotIn("sleep", said)
        # without hidepid the sentence names the command, as before
        proc_options("hidepid=off")
        self.assertErrno(errno.EBUSY, self.write_mode, "disabled\n")
        self.assertIn(f"held open by pid {h.pid} (sleep 1000)", n.read(CARD, "mig", "last_error"))

    def write_mode(self, text):
        with open(self.node.path(CARD, "mig", "mode"), "w") as f:
            f.write(text)


if __name__ == "__main__":
    unittest.main()
