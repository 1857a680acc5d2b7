"""/accel/quota against the mounted daemon: root writes the whole table, nobody else does (delegated
or not), every bad text is refused with its reason and changes nothing, mkdir answers EDQUOT naming
the principal, the limit and the use, poll() wakes on use, and use after kill -9 in the middle of a
race is what the records say."""
import errno
import json
import os
import re
import subprocess
import threading
import unittest

from harness import Node, NodeTestCase, topology_path, wait_until
from test_containers import as_user

USER, OTHER, GROUP = 4321, 4322, 4300


def write(path, text):
    fd = os.open(path, os.O_WRONLY | os.O_TRUNC)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)


def charged(n, uid):
    """Slices and jobs of uid, from every job's status (what the records say)."""
    slices = jobs = 0
    for prof in os.listdir(n.path("mig")):
        for job in os.listdir(n.path("mig", prof)):
            if job in ("info", "available", "last_error"):
                continue
            st = n.keyvals("mig", prof, job, "status")
            if st["owner"].split(":")[0] == str(uid):
                slices += int(st["placement"].split(":")[1])
                jobs += 1
    return slices, jobs


class Quota(NodeTestCase):
    def quota(self):
        return self.node.read("quota")

    def test_root_sets_limits_and_mkdir_is_refused_over_them(self):
        n = self.node
        self.assertEqual(self.quota(), "")
        self.assertEqual(os.stat(n.path("quota")).st_mode & 0o7777, 0o644)
        write(n.path("quota"), f"user:{USER} slices=8 8g.96gb=0 jobs=3\ngroup:{GROUP} jobs=10\n")
        self.assertEqual(self.quota(), f"user:{USER} slices=0/8 8g.96gb=0/0 jobs=0/3\ngroup:{GROUP} jobs=0/10\n")
        os.chown(n.path(), USER, GROUP)  # the whole node delegated to USER
        os.chmod(n.path(), 0o775)
        for path in (n.path("ppu3", "mig", "4g.48gb", "u1"), n.path("mig", "4g.48gb", "u2")):
            res = as_user(USER, [GROUP], "mkdir", path)
            self.assertEqual(res.returncode, 0, res.stderr)
        self.assertEqual(self.quota(), f"user:{USER} slices=8/8 8g.96gb=0/0 jobs=2/3\ngroup:{GROUP} jobs=2/10\n")
        # Over the slices: device-level and node-level alike, EDQUOT with the principal, the limit, the use.
        for prof_dir, key in ((n.path("ppu4", "mig", "4g.48gb"), "ppu4/4g.48gb"), (n.path("mig", "4g.48gb"), "mig")):
            res = as_user(USER, [GROUP], "python3", "-c",
                          f"import os,sys\ntry: os.mkdir({os.path.join(prof_dir, 'u3')!r})\n"
                          "except OSError as e: sys.exit(e.errno)")
            self.assertEqual(res.returncode, errno.EDQUOT, key)
            last = open(os.path.join(prof_dir, "last_error")).read()
            self.assertIn(f"user:{USER} uses slices=8 of 8 and u3 (4g.48gb) needs 4 more", last)
        # metrics and node.json say the same, per principal.
        metrics = n.read("metrics")
        self.assertIn(f'accelfs_quota_limit{{principal="user:{USER}",limit="slices"}} 8\n', metrics)
        self.assertIn(f'accelfs_quota_used{{principal="user:{USER}",limit="slices"}} 8\n', metrics)
        self.assertIn(f'accelfs_quota_used{{principal="user:{USER}",limit="jobs"}} 2\n', metrics)
        self.assertIn(f'accelfs_quota_used{{principal="group:{GROUP}",limit="jobs"}} 2\n', metrics)
        self.assertIn('accelfs_carve_failures_total{reason="quota"} 2\n', metrics)
        quota = json.loads(n.read("node.json"))["quota"]
        self.assertIsNone(quota["default"])
        self.assertEqual(quota["principals"][0], {"principal": f"user:{USER}", "default": False, "limits": {
            "slices": {"limit": 8, "used": 8}, "8g.96gb": {"limit": 0, "used": 0}, "jobs": {"limit": 3, "used": 2}}})
        # A profile limit of 0 forbids it; root is not under anyone's line.
        res = as_user(USER, [GROUP], "mkdir", n.path("ppu5", "mig", "8g.96gb", "u4"))
        self.assertNotEqual(res.returncode, 0)
        os.mkdir(n.path("ppu5", "mig", "8g.96gb", "r1"))
        self.assertIn("quota exceeded", n.log())
        # Lowering below use takes nothing away; rmdir makes room under the old limit again.
        write(n.path("quota"), f"user:{USER} slices=4\n")
        self.assertEqual(self.quota(), f"user:{USER} slices=8/4\n")
        self.assertTrue(os.path.isdir(n.path("ppu3", "mig", "4g.48gb", "u1")))
        os.rmdir(n.path("ppu3", "mig", "4g.48gb", "u1"))
        os.rmdir(n.path("mig", "4g.48gb", "u2"))
        res = as_user(USER, [GROUP], "mkdir", n.path("ppu3", "mig", "4g.48gb", "u5"))
        self.assertEqual(res.returncode, 0, res.stderr)
        self.assertEqual(self.quota(), f"user:{USER} slices=4/4\n")

    def test_only_root_writes_it(self):
        n = self.node
        write(n.path("quota"), f"user:{USER} jobs=1\n")
        os.chown(n.path(), USER, GROUP)  # delegated: USER owns the whole node, GROUP may carve
        os.chmod(n.path(), 0o775)
        for uid in (USER, OTHER):
            res = as_user(uid, [GROUP], "sh", "-c", f"echo 'user:{uid} jobs=99' > {n.path('quota')}")
            self.assertNotEqual(res.returncode, 0)
            self.assertIn("Permission denied", res.stderr)
        self.assertEqual(self.quota(), f"user:{USER} jobs=0/1\n")

    def test_every_bad_text_is_refused_with_its_reason(self):
        n = self.node
        write(n.path("quota"), "default jobs=2\n")
        cases = [
            ("bob slices=1\n", "'bob' is not a principal"),
            ("user:1000\n", "no limit after the principal"),
            ("user:1000 slices=x\n", "a limit is a number from 0 to 1000000"),
            ("user:1000 slices=1 slices=2\n", "slices is given twice"),
            ("default jobs=1\nuser:1000 what=1 x\n", "quota line 2: 'x' is not a limit"),
            ("user:no-such-user-anywhere jobs=1\n", "no user 'no-such-user-anywhere'"),
            ("group:7 jobs=1\ngroup:7 jobs=2\n", "group:7 has a line already"),
        ]
        for text, reason in cases:
            with self.subTest(text=text):
                with self.assertRaises(OSError) as cm:
                    write(n.path("quota"), text)
                self.assertEqual(cm.exception.errno, errno.EINVAL)
                self.assertEqual(self.quota().splitlines()[0], "default jobs=2")  # nothing changed
                last = self.quota().splitlines()[-1]
                self.assertIn(reason, last)
                if reason.startswith("quota"):  # the time it was refused, then why (last_error's line)
                    self.assertRegex(last, r"^# last write refused: \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z "
                                     + re.escape(reason))
                self.assertIn(reason, n.log())
        write(n.path("quota"), "default jobs=3\n")
        self.assertEqual(self.quota(), "default jobs=3\n")  # a write taken clears the refusal
        os.chown(n.path(), USER, GROUP)
        os.chmod(n.path(), 0o775)
        res = as_user(USER, [GROUP], "mkdir", n.path("ppu3", "mig", "4g.48gb", "d1"))
        self.assertEqual(res.returncode, 0, res.stderr)
        self.assertEqual(self.quota(), f"default jobs=3\nuser:{USER} jobs=1/3 (default)\n")
        self.assertEqual(json.loads(n.read("node.json"))["quota"], {"default": {"jobs": 3}, "principals": [
            {"principal": f"user:{USER}", "default": True, "limits": {"jobs": {"limit": 3, "used": 1}}}]})

    def test_a_member_let_in_by_the_card_s_group_charges_that_group(self):
        """README's pairing: chgrp ml /accel/ppu3 next to group:ml slices=8, members with private groups."""
        n = self.node
        write(n.path("quota"), f"group:{GROUP} slices=8\n")
        os.chown(n.path("ppu3"), 0, GROUP)
        os.chmod(n.path("ppu3"), 0o775)
        # USER's primary group is its own (Debian's private groups); GROUP is a supplementary one
        res = as_user(USER, [USER, GROUP], "mkdir", n.path("ppu3", "mig", "4g.48gb", "m1"))
        self.assertEqual(res.returncode, 0, res.stderr)
        self.assertEqual(n.keyvals("ppu3", "mig", "4g.48gb", "m1", "status")["owner"], f"{USER}:{GROUP}")
        self.assertEqual(self.quota(), f"group:{GROUP} slices=4/8\n")
        res = as_user(OTHER, [OTHER, GROUP], "mkdir", n.path("ppu3", "mig", "4g.48gb", "m2"))
        self.assertEqual(res.returncode, 0, res.stderr)
        self.assertEqual(self.quota(), f"group:{GROUP} slices=8/8\n")
        res = as_user(OTHER, [OTHER, GROUP], "mkdir", n.path("ppu4", "mig", "4g.48gb", "m3"))
        self.assertNotEqual(res.returncode, 0, "ppu4 is not the group's: the kernel refuses")
        os.chown(n.path("ppu4"), 0, GROUP)
        os.chmod(n.path("ppu4"), 0o775)
        res = as_user(OTHER, [OTHER, GROUP], "mkdir", n.path("ppu4", "mig", "4g.48gb", "m3"))
        self.assertIn("Disk quota exceeded", res.stderr)
        # the owner of the card, or root, pays as itself: it was not let in by the group
        os.chown(n.path("ppu5"), USER, GROUP)
        os.chmod(n.path("ppu5"), 0o775)
        res = as_user(USER, [USER, GROUP], "mkdir", n.path("ppu5", "mig", "4g.48gb", "own"))
        self.assertEqual(res.returncode, 0, res.stderr)
        self.assertEqual(n.keyvals("ppu5", "mig", "4g.48gb", "own", "status")["owner"], f"{USER}:{USER}")

    def test_poll_wakes_when_use_changes(self):
        n = self.node
        write(n.path("quota"), "user:0 slices=16\n")
        w = self.waiter(n.path("quota"))
        os.mkdir(n.path("ppu3", "mig", "4g.48gb", "p1"))
        rc, out, _ = w.result()
        self.assertEqual(rc, 0)
        self.assertEqual(out, "user:0 slices=4/16\n")
        w = self.waiter(n.path("quota"))  # and at once when root changes a limit
        write(n.path("quota"), "user:0 slices=6\n")
        rc, out, _ = w.result()
        self.assertEqual((rc, out), (0, "user:0 slices=4/6\n"))

    def test_limits_survive_a_restart(self):
        n = self.node
        write(n.path("quota"), "user:root slices=8 jobs=5\ndefault 4g.48gb=1\n")
        os.mkdir(n.path("ppu3", "mig", "4g.48gb", "r1"))
        n.restart()
        self.assertEqual(self.quota(), "user:root slices=4/8 jobs=1/5\ndefault 4g.48gb=1\n")
        # A table that does not parse stops the start, naming the file: no daemon runs without its limits.
        n.stop()
        stored = open(os.path.join(n.state, "quota")).read()
        with open(os.path.join(n.state, "quota"), "w") as f:
            f.write("user:0 slices=\n")
        with self.assertRaises(AssertionError) as cm:
            n.start()
        self.assertIn(f"the quotas in {n.state}/quota do not parse (quota line 1:", str(cm.exception))
        with open(os.path.join(n.state, "quota"), "w") as f:
            f.write(stored)
        n.start()
        self.assertEqual(self.quota(), "user:root slices=4/8 jobs=1/5\ndefault 4g.48gb=1\n")


# 100 mkdirs at once, a quarter each: 4g.48gb on a PPU, 4g.48gb anywhere, 1g.18gb on gpu0, 1g.18gb
# anywhere; prints one "<slices> <errno>" line per request.
RACE = """
import os, sys, threading
mnt, tag = sys.argv[1], sys.argv[2]
out = []
def carve(i):
    prof, size = ("4g.48gb", 4) if i % 4 < 2 else ("1g.18gb", 1)
    where = [os.path.join(mnt, f"ppu{i % 16}", "mig"), os.path.join(mnt, "mig"),
             os.path.join(mnt, "gpu0", "mig"), os.path.join(mnt, "mig")][i % 4]
    try:
        os.mkdir(os.path.join(where, prof, f"{tag}{i}"))
        out.append((size, 0))
    except OSError as e:
        out.append((size, e.errno))
threads = [threading.Thread(target=carve, args=(i,)) for i in range(100)]
for t in threads: t.start()
for t in threads: t.join()
print("\\n".join(f"{a} {b}" for a, b in out))
"""


class QuotaSpans(NodeTestCase):
    """A node-level mkdir chooses only devices where the job fits the quota: the profile's slices
    differ between devices (4 on the PPU, 8 on the GPU for the same 4g.48gb)."""

    topology = topology_path("quota-spans.json")

    def test_node_level_choice_counts_each_devices_slices(self):
        n = self.node
        self.assertEqual(n.keyvals("ppu0", "mig", "4g.48gb", "info")["memory_slices"], "4")
        self.assertEqual(n.keyvals("gpu0", "mig", "4g.48gb", "info")["memory_slices"], "8")
        # Unlimited, the GPU would be chosen (it loses 8 slices of room, the empty PPU 12); within 4
        # slices only the PPU fits.
        write(n.path("quota"), "user:0 slices=4\n")
        os.mkdir(n.path("mig", "4g.48gb", "a"))
        self.assertEqual(n.keyvals("mig", "4g.48gb", "a", "status")["device"], "ppu0")
        self.assertErrno(errno.EDQUOT, os.mkdir, n.path("mig", "4g.48gb", "b"))
        self.assertIn("quota exceeded: user:0 uses slices=4 of 4", n.read("mig", "4g.48gb", "last_error"))
        write(n.path("quota"), "user:0 slices=12\n")
        os.mkdir(n.path("mig", "4g.48gb", "b"))  # the PPU again (it loses 4, the GPU 8): now full
        self.assertEqual(n.keyvals("mig", "4g.48gb", "b", "status")["device"], "ppu0")
        # Only the GPU has room, and there the job costs 8 of the 4 left: EDQUOT, not ENOSPC.
        self.assertErrno(errno.EDQUOT, os.mkdir, n.path("mig", "4g.48gb", "c"))
        self.assertIn("user:0 uses slices=8 of 12 and c (4g.48gb) needs 8 more",
                      n.read("mig", "4g.48gb", "last_error"))
        self.assertEqual(n.read("gpu0", "mig", "instances"), "")
        write(n.path("quota"), "user:0 slices=16\n")
        os.mkdir(n.path("mig", "4g.48gb", "c"))
        self.assertEqual(n.keyvals("mig", "4g.48gb", "c", "status")["device"], "gpu0")
        # Full everywhere: ENOSPC, whatever the quota says.
        write(n.path("quota"), "user:0 slices=100\n")
        self.assertErrno(errno.ENOSPC, os.mkdir, n.path("mig", "4g.48gb", "d"))


class QuotaRace(NodeTestCase):
    """200 mkdirs through the tree at once, on devices and at the node level together, across the 16
    PPUs and the GPU: exactly what fits, never one more."""

    def race(self, users):
        n = self.node
        os.chown(n.path(), USER, GROUP)
        os.chmod(n.path(), 0o775)
        procs = [subprocess.Popen(["setpriv", f"--reuid={uid}", f"--regid={GROUP}", f"--groups={GROUP}",
                                   "python3", "-c", RACE, n.path(), f"u{k}-"],
                                  stdout=subprocess.PIPE, text=True) for k, uid in enumerate(users)]
        results = []
        for p in procs:
            out, _ = p.communicate(timeout=300)
            self.assertEqual(p.returncode, 0)
            results += [tuple(int(x) for x in line.split()) for line in out.splitlines()]
        self.assertEqual(len(results), 200)
        return results

    def check(self, results, used, limit):
        self.assertEqual(used, limit)  # 1-slice requests were refused only once nothing was left
        for size, err in results:
            self.assertIn(err, (0, errno.EDQUOT, errno.ENOSPC))
            if err == errno.ENOSPC:
                self.assertEqual(size, 1)  # gpu0 has 7 places for a 1g.18gb: full, not over the quota
        self.assertEqual(sum(size for size, err in results if err == 0), used)

    def test_one_user_200_mkdirs(self):
        write(self.node.path("quota"), f"user:{USER} slices=8\n")
        results = self.race([USER, USER])
        slices, jobs = charged(self.node, USER)
        self.check(results, slices, 8)
        self.assertEqual(self.quota_line(0), f"user:{USER} slices=8/8")

    def test_two_users_of_a_group_200_mkdirs(self):
        write(self.node.path("quota"), f"group:{GROUP} slices=8\n")
        results = self.race([USER, OTHER])
        a, _ = charged(self.node, USER)
        b, _ = charged(self.node, OTHER)
        self.check(results, a + b, 8)
        self.assertEqual(self.quota_line(0), f"group:{GROUP} slices=8/8")

    def quota_line(self, i):
        return self.node.read("quota").splitlines()[i]


class QuotaRaceKill(unittest.TestCase):
    """kill -9 while 64 mkdirs race for root's slices=8: after the restart, use is what the records say,
    within the limit, and carving fills it exactly."""

    def test_kill9_in_a_race_never_drifts(self):
        n = Node(poll=0.2, grace=1.0).start()
        try:
            write(n.path("quota"), "user:0 slices=8\n")
            results = []

            def carve(i):
                path = (n.path(f"ppu{i % 16}", "mig", "4g.48gb", f"k{i}") if i % 2
                        else n.path("mig", "4g.48gb", f"k{i}"))
                try:
                    os.mkdir(path)
                    results.append(0)
                except OSError as e:
                    results.append(e.errno)

            threads = [threading.Thread(target=carve, args=(i,)) for i in range(64)]
            for t in threads:
                t.start()
            wait_until(lambda: len(results) >= 1, what="a first mkdir to answer")
            n.kill9()
            for t in threads:
                t.join()
            n.start()
            slices, jobs = charged(n, 0)
            self.assertLessEqual(slices, 8)
            self.assertEqual(n.read("quota"), f"user:0 slices={slices}/8\n")
            # Fill the rest: exactly what the limit leaves.
            made = 0
            for i in range(8):
                try:
                    os.mkdir(n.path("mig", "4g.48gb", f"after{i}"))
                    made += 1
                except OSError as e:
                    self.assertEqual(e.errno, errno.EDQUOT)
            self.assertEqual(slices + 4 * made, 8)
            self.assertEqual(n.read("quota"), "user:0 slices=8/8\n")
        finally:
            n.stop()
            reports = n.sanitizer_reports()
            n.cleanup()
        self.assertEqual(reports, "")


if __name__ == "__main__":
    unittest.main()
