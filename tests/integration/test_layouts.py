# SPDX-License-Identifier: MIT
"""Layouts: <dev>/mig/layout, layout_status, cordon and mode writes, over the real daemon.

What a layout must never do is touch what is not its own or what is in use: every test that
applies one checks that the jobs made by mkdir keep their GPU instance id, placement and MIG
UUID, and that the node holds its invariants against the driver (invariants.py).
"""
import errno
import os
import random
import subprocess
import threading
import unittest

from harness import ACCEL_SMI, NodeTestCase, topology_path, wait_until
from test_containers import as_user
from invariants import format_problems, parse_instances, settled

CID = "7c1e" * 16  # a container id: 64 hex digits
DEV = "gpu0"


def write(path, text):
    with open(path, "w") as f:
        f.write(text)


def shell_write(path, text):
    """As a shell script does: printf writes each line with its own write(2)."""
    return subprocess.run(["bash", "-c", 'printf "$1" > "$2"', "-", text, path], capture_output=True, text=True)


class LayoutCase(NodeTestCase):
    topology = topology_path("layouts.json")

    def setUp(self):
        super().setUp()
        self.procs = []

    def tearDown(self):
        for p in self.procs:
            if p.poll() is None:
                p.kill()
                p.wait()
        super().tearDown()

    def mig(self, *parts, dev=DEV):
        return self.node.path(dev, "mig", *parts)

    def layout(self, text, dev=DEV):
        write(self.mig("layout", dev=dev), text)

    def status(self, dev=DEV):
        return self.node.read(dev, "mig", "layout_status")

    def instances(self, dev=DEV):
        return parse_instances(self.node.read(dev, "mig", "instances"))

    def by_job(self, dev=DEV):
        return {i["job"]: i for i in self.instances(dev)}

    def identity(self, job, dev=DEV, profile=None):
        st = self.node.keyvals(dev, "mig", profile, job, "status")
        return (st["gi"], st["placement"], st["uuid"])

    def sleeper(self):
        p = subprocess.Popen(["sleep", "1000"])
        self.procs.append(p)
        return p

    def assertSettled(self, context=""):
        problems = settled(self.node, timeout=5)
        self.assertEqual(problems, [], f"{context}: {format_problems(problems)}")

    def wait_status(self, want, dev=DEV, timeout=10):
        return wait_until(lambda: self.status(dev) == want, timeout=timeout,
                          what=f"{dev}/mig/layout_status to say {want!r} (it says {self.status(dev)!r})")


class Apply(LayoutCase):
    def test_a_job_in_use_is_untouched_the_rest_applies_and_it_follows_once_the_job_goes(self):
        n = self.node
        os.mkdir(self.mig("3g.71gb", "job1"))
        before = self.identity("job1", profile="3g.71gb")
        sleeper = self.sleeper()
        write(self.mig("3g.71gb", "job1", "containers"), f"attach {CID} {sleeper.pid}\n")
        self.layout("3g.71gb@0\n1g.18gb x3\n")
        self.assertEqual(self.identity("job1", profile="3g.71gb"), before, "the job in use was touched")
        self.assertEqual(self.status(),
                         f"3g.71gb@0: pending: placement 0:4 held by job1, in use by container {CID[:20]}, "
                         f"pid {sleeper.pid}\n1g.18gb x3: applied\n")
        jobs = self.by_job()
        self.assertEqual(sorted(j for j in jobs if j.startswith("layout-")),
                         ["layout-gpu0-1g.18gb-4", "layout-gpu0-1g.18gb-5", "layout-gpu0-1g.18gb-6"])
        self.assertSettled("with job1 in use")
        # the container goes and its job is removed: the layout follows by itself, nobody writes again,
        # and a reader waiting in poll() on layout_status is woken
        w = self.waiter(self.mig("layout_status"))
        sleeper.kill()
        sleeper.wait()
        wait_until(lambda: n.errno_of(os.rmdir, self.mig("3g.71gb", "job1")) == 0, what="rmdir job1")
        self.wait_status("3g.71gb@0: applied\n1g.18gb x3: applied\n")
        rc, _, err = w.result()
        self.assertEqual(rc, 0, err)
        self.assertEqual(self.by_job()["layout-gpu0-3g.71gb-0"]["placement"], "0:4")
        self.assertSettled("after job1 went")

    def test_a_busy_layout_job_no_longer_declared_stays_until_free(self):
        n = self.node
        self.layout("1g.18gb x2\n")
        kept = self.identity("layout-gpu0-1g.18gb-1", profile="1g.18gb")
        n.smi("gpu", "sim", "busy", "-i", 0, "-gi", kept[0], "-ci", 0, 1)
        self.layout("1g.18gb\n")
        self.assertEqual(self.identity("layout-gpu0-1g.18gb-1", profile="1g.18gb"), kept)
        status = self.status()
        self.assertTrue(status.startswith("1g.18gb: applied\nlayout-gpu0-1g.18gb-1: pending: no longer declared"),
                        status)
        self.assertIn("reclaim failed", status)
        n.smi("gpu", "sim", "busy", "-i", 0, "-gi", kept[0], "-ci", 0, 0)
        self.wait_status("1g.18gb: applied\n")
        self.assertNotIn("layout-gpu0-1g.18gb-1", self.by_job())
        self.assertSettled()

    def test_mkdir_made_jobs_are_never_the_layouts(self):
        os.mkdir(self.mig("1g.18gb", "mine"))
        mine = self.identity("mine", profile="1g.18gb")
        self.layout("1g.18gb x2\n")
        self.layout("\n")  # declares nothing: the layout's own go, nothing else
        self.assertEqual(self.identity("mine", profile="1g.18gb"), mine)
        self.assertEqual(sorted(self.by_job()), ["mine"])
        self.assertEqual(self.node.read(DEV, "mig", "layout"), "")
        # nobody but the layout takes its names
        self.assertErrno(errno.EINVAL, os.mkdir, self.mig("1g.18gb", "layout-gpu0-1g.18gb-3"))
        self.assertIn("are the layouts'", self.node.read(DEV, "mig", "1g.18gb", "last_error"))

    def test_a_bad_layout_is_refused_whole_and_changes_nothing(self):
        n = self.node
        self.layout("1g.18gb x2\n")
        before = self.by_job()
        for text, words in (("1g.18gb x2\nbogus line here\n", "line 2"),
                            ("2g.71gb\n", "does not offer"),
                            ("3g.71gb@1\n", "legal starts: 0, 4"),
                            ("7g.141gb\n1g.18gb\n", "do not fit"),
                            ("1g.18gb\nmode disabled\n", "mode disabled")):
            res = shell_write(self.mig("layout"), text.replace("\n", "\\n"))
            self.assertNotEqual(res.returncode, 0, text)
            self.assertIn("Invalid argument", res.stderr)
            self.assertIn(words, n.read(DEV, "mig", "last_error"), text)
            self.assertEqual(n.read(DEV, "mig", "layout"), "1g.18gb x2\n", text)
            self.assertEqual(self.by_job(), before, text)
        # a shell's line-at-a-time writes of a good layout apply it whole at close
        res = shell_write(self.mig("layout"), "3g.71gb@4\\n1g.18gb x2\\n")
        self.assertEqual(res.returncode, 0, res.stderr)
        self.assertEqual(self.status(), "3g.71gb@4: applied\n1g.18gb x2: applied\n")
        self.assertEqual(n.read(DEV, "mig", "last_error"), "")

    def test_the_devices_delegate_writes_its_layout_and_nobody_else(self):
        n = self.node
        os.chown(n.path("gpu1"), 4321, 4321)  # delegate gpu1 to uid 4321
        self.assertEqual(os.stat(self.mig("layout", dev="gpu1")).st_uid, 4321)
        self.assertEqual(os.stat(self.mig("layout", dev="gpu0")).st_uid, 0)
        script = 'printf "1g.18gb x2\\n" > "$1"'
        ok = as_user(4321, [4321], "bash", "-c", script, "-", self.mig("layout", dev="gpu1"))
        self.assertEqual(ok.returncode, 0, ok.stderr)
        self.assertEqual(self.status("gpu1"), "1g.18gb x2: applied\n")
        self.assertEqual(self.by_job("gpu1")["layout-gpu1-1g.18gb-0"]["placement"], "0:1")
        refused = as_user(4321, [4321], "bash", "-c", script, "-", self.mig("layout", dev="gpu0"))
        self.assertNotEqual(refused.returncode, 0)
        self.assertIn("Permission denied", refused.stderr)
        self.assertEqual(n.read("gpu0", "mig", "layout"), "")

    def test_kept_across_a_restart_and_applied_before_the_mount_is_ready(self):
        n = self.node
        os.mkdir(self.mig("1g.18gb", "mine"))
        mine = self.identity("mine", profile="1g.18gb")
        self.layout("3g.71gb@4\n1g.18gb x2\n")
        theirs = [i["gi"] for i in self.instances() if i["job"].startswith("layout-")]
        self.assertEqual(len(theirs), 3)
        n.stop()
        # while it is down, the layout's instances are destroyed by hand
        for gi in theirs:
            n.smi("gpu", "mig", "-i", 0, "-gi", gi, "-ci", 0, "-dci")
            n.smi("gpu", "mig", "-i", 0, "-gi", gi, "-dgi")
        n.start()
        # no waiting: start returns once the mount serves, and the layout was applied before that
        self.assertEqual(self.status(), "3g.71gb@4: applied\n1g.18gb x2: applied\n")
        self.assertEqual(self.identity("mine", profile="1g.18gb"), mine)
        self.assertEqual(n.read(DEV, "mig", "layout"), "3g.71gb@4\n1g.18gb x2\n")
        self.assertSettled("after the restart")


class Cordon(LayoutCase):
    def test_cordon_refuses_mkdir_moves_node_level_ones_and_lets_the_layout_apply(self):
        n = self.node
        write(self.mig("cordon"), "1\n")
        self.assertEqual(n.read(DEV, "mig", "cordon"), "1\n")
        self.assertErrno(errno.EBUSY, os.mkdir, self.mig("1g.18gb", "j1"))
        self.assertIn("gpu0 is cordoned", n.read(DEV, "mig", "1g.18gb", "last_error"))
        # node-level: another card takes it, whichever the choice would have been
        os.mkdir(n.path("mig", "1g.18gb", "nl"))
        self.assertNotIn("gpu0", os.readlink(n.path("mig", "1g.18gb", "nl", "device")))
        self.layout("1g.18gb\n")
        self.assertEqual(self.status(), "1g.18gb: applied\n")
        write(self.mig("cordon"), "0\n")
        os.mkdir(self.mig("1g.18gb", "j1"))
        # kept across a restart
        write(self.mig("cordon"), "1\n")
        n.restart()
        self.assertEqual(n.read(DEV, "mig", "cordon"), "1\n")
        self.assertErrno(errno.EBUSY, os.mkdir, self.mig("1g.18gb", "j2"))
        self.assertErrno(errno.EINVAL, write, self.mig("cordon"), "yes\n")

    def test_cordon_and_mode_refuse_junk_after_the_value(self):
        """The whole write is the value: "1\\0junk" or a 1 padded past 31 bytes is no 1."""
        n = self.node
        for junk in ("1\0junk", "0\0", "1" + " " * 40 + "x", "1\n2\n", "\x01"):
            self.assertErrno(errno.EINVAL, write, self.mig("cordon"), junk)
            self.assertEqual(n.read(DEV, "mig", "cordon"), "0\n", repr(junk))
        for junk in ("enabled\0junk", "disabled" + "\0" * 30, "e" * 40):
            self.assertErrno(errno.EINVAL, write, self.mig("mode"), junk)
            self.assertEqual(n.read(DEV, "mig", "mode"), "enabled\n", repr(junk))
        self.assertIn("nothing else", n.read(DEV, "mig", "last_error"))
        write(self.mig("cordon"), "1 \n")  # trailing blanks and the newline are the shell's, not the value's
        self.assertEqual(n.read(DEV, "mig", "cordon"), "1\n")

    def test_drain_cordons_while_a_line_waits_for_a_holder(self):
        n = self.node
        os.mkdir(self.mig("3g.71gb", "job1"))
        self.layout("3g.71gb@0\ndrain\n")
        self.assertEqual(n.read(DEV, "mig", "cordon"), "1\n")
        self.assertErrno(errno.EBUSY, os.mkdir, self.mig("1g.18gb", "late"))
        os.rmdir(self.mig("3g.71gb", "job1"))
        self.wait_status("3g.71gb@0: applied\ndrain: applied\n")
        wait_until(lambda: n.read(DEV, "mig", "cordon") == "0\n", what="the drain's cordon to lift")
        os.mkdir(self.mig("1g.18gb", "late"))


class Mode(LayoutCase):
    def card_node(self, dev="gpu0"):
        minor = dev[3:]
        return os.path.join(self.node.state, "sim", "nvidia", "dev", f"nvidia{minor}")

    def test_mode_changes_with_the_runbooks_preconditions(self):
        n = self.node
        modes = {d: n.read(d, "mig", "mode") for d in ("gpu1", "gpu2", "ppu0", "ppu1")}
        os.mkdir(self.mig("1g.18gb", "job1"))
        self.assertErrno(errno.EBUSY, write, self.mig("mode"), "disabled\n")
        self.assertIn("gi 0 job job1", n.read(DEV, "mig", "last_error"))
        os.rmdir(self.mig("1g.18gb", "job1"))
        holder = subprocess.Popen(["python3", "-c", "import os,time\n"
                                   f"a=os.open({self.card_node()!r}, os.O_PATH)\nprint('held', flush=True)\n"
                                   "time.sleep(1000)"], stdout=subprocess.PIPE, text=True)
        self.procs.append(holder)
        self.assertEqual(holder.stdout.readline().strip(), "held")
        self.assertErrno(errno.EBUSY, write, self.mig("mode"), "disabled\n")
        err = n.read(DEV, "mig", "last_error")
        self.assertIn(f"pid {holder.pid} (python3 -c", err)
        self.assertEqual(n.read(DEV, "mig", "mode"), "enabled\n")
        holder.kill()
        holder.wait()
        holder.stdout.close()
        calls_before = self.setmode_calls()
        write(self.mig("mode"), "disabled\n")
        self.assertEqual(n.read(DEV, "mig", "mode"), "disabled\n")
        self.assertEqual(self.setmode_calls(), calls_before + 1, "one card, one call")
        write(self.mig("mode"), "enabled\n")
        self.assertEqual(n.read(DEV, "mig", "mode"), "enabled\n")
        self.assertEqual({d: n.read(d, "mig", "mode") for d in modes}, modes, "another card was touched")

    def hold(self, family, node, comm):
        """A process named comm (as a daemon's /proc/<pid>/comm reads) holding the simulated node open."""
        path = os.path.join(self.node.state, "sim", family, "dev", node)
        holder = subprocess.Popen(["python3", "-c", "import os,sys,time\n"
                                   f"open('/proc/self/comm','w').write({comm!r})\n"
                                   f"a=os.open({path!r}, os.O_PATH)\nprint('held', flush=True)\n"
                                   "time.sleep(1000)"], stdout=subprocess.PIPE, text=True)
        self.procs.append(holder)
        self.assertEqual(holder.stdout.readline().strip(), "held")
        holder.stdout.close()
        return holder

    def test_nvidias_daemons_on_nvidiactl_are_named_and_block_nothing(self):
        n = self.node
        ctl = self.hold("nvidia", "nvidiactl", "nv-hostengine")
        uvm = self.hold("nvidia", "nvidia-uvm", "nvidia-persiste")
        lines = n.read(DEV, "holders").splitlines()
        self.assertTrue(any(line.startswith(f"control node=/dev/nvidiactl pid={ctl.pid} command=nv-hostengine fds=1 ")
                            for line in lines), lines)
        self.assertFalse([line for line in lines if line.startswith("pid=")], lines)
        # The driver does not count them as clients of the GPU: the mode changes, and back.
        try:
            write(self.mig("mode"), "disabled\n")
        except OSError:
            self.fail(n.read(DEV, "mig", "last_error"))
        self.assertEqual(n.read(DEV, "mig", "mode"), "disabled\n")
        write(self.mig("mode"), "enabled\n")
        self.assertEqual(n.read(DEV, "mig", "mode"), "enabled\n")
        self.assertTrue(any(line.startswith(f"control node=/dev/nvidia-uvm pid={uvm.pid} command=nvidia-persiste ")
                            for line in n.read(DEV, "holders").splitlines()))
        # A daemon holding the GPU itself blocks, and the sentence says what to stop.
        gpu = self.hold("nvidia", "nvidia0", "nv-hostengine")
        self.assertErrno(errno.EBUSY, write, self.mig("mode"), "disabled\n")
        err = n.read(DEV, "mig", "last_error")
        self.assertIn(f"pid {gpu.pid} (", err)
        self.assertIn("systemctl stop nvidia-dcgm", err)
        self.assertIn(f"pid={gpu.pid} command=nv-hostengine", n.read(DEV, "holders"))

    def test_t_heads_control_node_holders_still_block(self):
        """T-Head's driver refuses a mode change while any process holds any alixpu node (the runbook)."""
        n = self.node
        card = next(d for d in sorted(os.listdir(n.mnt)) if d.startswith("ppu"))
        ctl = self.hold("thead", "alixpu_ctl", "worker")
        self.assertErrno(errno.EBUSY, write, n.path(card, "mig", "mode"), "disabled\n")
        self.assertIn(f"pid {ctl.pid} (", n.read(card, "mig", "last_error"))
        holders = n.read(card, "holders").splitlines()
        self.assertTrue(any(line.startswith(f"pid={ctl.pid} command=worker ") for line in holders), holders)
        self.assertTrue(any(line.startswith(f"control node=/dev/alixpu_ctl pid={ctl.pid} command=worker ")
                            for line in holders), holders)

    def setmode_calls(self):
        for line in self.node.smi("gpu", "sim", "calls").stdout.splitlines():
            if line.startswith("DeviceSetMigMode "):
                return int(line.split()[1])
        return 0

    def test_a_mode_the_driver_holds_pending_is_not_an_applied_mode(self):
        n = self.node
        self.assertErrno(errno.EIO, write, self.mig("mode", dev="gpu2"), "disabled\n")
        self.assertIn("pending", n.read("gpu2", "mig", "last_error"))
        self.assertIn("reset", n.read("gpu2", "mig", "last_error"))

    def test_a_layout_that_disables_the_mode_reclaims_its_own_first(self):
        n = self.node
        self.layout("1g.18gb x2\n", dev="gpu1")
        self.layout("mode disabled\n", dev="gpu1")
        self.assertEqual(self.status("gpu1"), "mode disabled: applied\n")
        self.assertEqual(n.read("gpu1", "mig", "mode"), "disabled\n")
        # the layout owns the mode now: a write against it is refused
        self.assertErrno(errno.EBUSY, write, self.mig("mode", dev="gpu1"), "enabled\n")
        self.layout("mode enabled\n1g.18gb\n", dev="gpu1")
        self.assertEqual(self.status("gpu1"), "mode enabled: applied\n1g.18gb: applied\n")
        # with a mkdir-made job on it, the mode waits and says for whom
        os.mkdir(self.mig("1g.18gb", "job1", dev="gpu1"))
        self.layout("mode disabled\n", dev="gpu1")
        self.assertIn("mode disabled: pending: the mode changes only on a card with no instance: placement",
                      self.status("gpu1"))
        self.assertIn("held by job1", self.status("gpu1"))
        os.rmdir(self.mig("1g.18gb", "job1", dev="gpu1"))
        self.wait_status("mode disabled: applied\n", dev="gpu1")


class Races(LayoutCase):
    def test_concurrent_mkdir_and_layout_writes_never_give_a_placement_twice(self):
        n = self.node
        stop = threading.Event()
        problems = []

        def mkdirs(tag):
            i = 0
            while not stop.is_set():
                name = f"{tag}{i % 3}"
                p = self.mig("1g.18gb", name)
                if n.errno_of(os.mkdir, p) == 0:
                    n.errno_of(os.rmdir, p)
                i += 1

        def layouts():
            texts = ["1g.18gb x3\n", "3g.71gb@4\n1g.18gb\n", "1g.18gb x7\n", "\n", "3g.71gb x2\n"]
            i = 0
            while not stop.is_set():
                e = n.errno_of(write, self.mig("layout"), texts[i % len(texts)])
                if e:
                    problems.append(f"layout write answered {errno.errorcode.get(e, e)}")
                i += 1

        def watch():
            while not stop.is_set():
                spans = []
                # one read(2): a file that changes between two reads is two snapshots, not one
                fd = os.open(self.mig("instances"), os.O_RDONLY)
                try:
                    text = os.read(fd, 1 << 20).decode()
                    # only whole lines: a read racing an invalidation can end short (a page cache matter)
                    seen = parse_instances(text[:text.rfind("\n") + 1])
                finally:
                    os.close(fd)
                for inst in seen:
                    s, z = (int(x) for x in inst["placement"].split(":"))
                    for t, tz in spans:
                        if s < t + tz and t < s + z:
                            problems.append(f"placement {s}:{z} given twice: "
                                            + "; ".join(i["_line"] for i in seen))
                    spans.append((s, z))

        threads = [threading.Thread(target=f, args=a) for f, a in
                   ((mkdirs, ("a",)), (mkdirs, ("b",)), (layouts, ()), (watch, ()))]
        for t in threads:
            t.start()
        stop.wait(6)
        stop.set()
        for t in threads:
            t.join()
        self.assertEqual(problems[:5], [])
        self.assertSettled("after the race")  # available, placements and jobs agree with the driver


class MigParted(LayoutCase):
    """accel-smi layout apply: a mig-parted configuration (data/mig-parted-h200.yaml) over the node."""

    CONFIG = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "mig-parted-h200.yaml")

    def apply(self, name, *more, config=None, verb="apply"):
        return subprocess.run([*self.node.smi_cmd("gpu"), "layout", verb, "-f", config or self.CONFIG, "-c", name,
                               "--mount", self.node.mnt, *more], capture_output=True, text=True, timeout=120)

    def config(self, text):
        path = os.path.join(self.node.state, "config.yaml")
        with open(path, "w") as f:
            f.write(text)
        return path

    def test_a_mig_parted_configuration_applies_only_the_difference(self):
        n = self.node
        res = self.apply("mixed")
        self.assertEqual(res.returncode, 0, res.stdout + res.stderr)
        self.assertEqual(n.read("gpu0", "mig", "layout"), "mode enabled\n1g.18gb x2\n2g.35gb\n3g.71gb\n")
        self.assertEqual(self.status("gpu2"), "mode enabled: applied\n7g.141gb: applied\n")  # its device-filter
        self.assertIn("gpu1: written\n  mode enabled: applied\n", res.stdout)
        small = {j: i["gi"] for j, i in self.by_job("gpu0").items() if "1g.18gb" in j}
        self.assertEqual(len(small), 2)
        os.mkdir(self.mig("1g.18gb", "mine", dev="gpu1"))
        mine = self.identity("mine", dev="gpu1", profile="1g.18gb")
        res = self.apply("all-1g.18gb", "--wait=30")
        # written everywhere, but gpu1's seventh waits for mine: mig-parted's "not there yet", exit 3
        self.assertEqual(res.returncode, 3, res.stdout + res.stderr)
        # gpu0 keeps its two small ones where they are and trades the rest for five more
        jobs = self.by_job("gpu0")
        self.assertEqual({j: jobs[j]["gi"] for j in small}, small)
        self.assertEqual(sorted(i["profile"] for i in jobs.values()), ["1g.18gb"] * 7)
        # gpu1's own job is left alone: six of seven, and the status says for whom the seventh waits
        self.assertEqual(self.identity("mine", dev="gpu1", profile="1g.18gb"), mine)
        self.assertIn("1g.18gb x7: pending: 6 of 7 applied; placement 0:1 held by mine", self.status("gpu1"))
        self.assertSettled("after all-1g.18gb")

    def test_wait_assert_and_export_have_mig_parted_s_meanings(self):
        n = self.node
        os.mkdir(self.mig("1g.18gb", "mine", dev="gpu1"))
        self.assertEqual(self.apply("mixed", verb="assert").returncode, 1)
        res = self.apply("all-1g.18gb", "--wait=1")
        self.assertEqual(res.returncode, 3, res.stdout + res.stderr)
        self.assertIn("1g.18gb x7: pending: 6 of 7 applied", res.stdout)
        res = self.apply("all-1g.18gb", verb="assert")
        self.assertEqual(res.returncode, 0, res.stdout)  # seven on each card, mine counted: it is one of them
        res = self.apply("mixed", verb="assert")
        self.assertEqual(res.returncode, 1, res.stdout)
        self.assertIn("gpu0: does not match: 1g.18gb: 7, asked 2; 2g.35gb: 0, asked 1; 3g.71gb: 0, asked 1", res.stdout)
        os.rmdir(self.mig("1g.18gb", "mine", dev="gpu1"))
        res = self.apply("all-1g.18gb", "--wait=60")
        self.assertEqual(res.returncode, 0, res.stdout + res.stderr)
        self.assertEqual(self.apply("all-1g.18gb", verb="assert").returncode, 0)
        # export is a configuration assert takes back, cards alike in one entry
        res = self.apply("mixed", "--wait")
        self.assertEqual(res.returncode, 0, res.stdout + res.stderr)
        out = subprocess.run([*n.smi_cmd("gpu"), "layout", "export", "--mount", n.mnt], capture_output=True,
                             text=True, timeout=60)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertTrue(out.stdout.startswith("version: v1\nmig-configs:\n  current:\n"), out.stdout)
        self.assertIn('"3g.71gb": 1', out.stdout)
        path = self.config(out.stdout)
        self.assertEqual(self.apply("current", verb="assert", config=path).returncode, 0)
        self.assertEqual(self.apply("all-1g.18gb", verb="assert").returncode, 1)

    def test_a_device_the_node_lacks_refuses_the_whole_file(self):
        n = self.node
        before = {d: n.read(d, "mig", "layout") for d in ("gpu0", "gpu1", "gpu2")}
        path = self.config("version: v1\nmig-configs:\n  typo:\n    - devices: [0]\n      mig-enabled: true\n"
                           "      mig-devices:\n        \"1g.18gb\": 7\n    - devices: [5]\n      mig-enabled: true\n"
                           "      mig-devices: {}\n")
        res = self.apply("typo", config=path)
        self.assertEqual(res.returncode, 1)
        self.assertIn("line 8 names device 5, and there is no gpu5", res.stderr)
        self.assertEqual({d: n.read(d, "mig", "layout") for d in before}, before)

    def test_device_filter_reads_the_pci_id_from_the_tree_without_a_driver(self):
        n = self.node
        self.assertRegex(n.keyvals("gpu2", "info")["pci_id"], r"^0x[0-9A-F]{8}$")
        env = dict(os.environ, LD_LIBRARY_PATH="/nonexistent")
        res = subprocess.run([ACCEL_SMI, "-f", "gpu", "layout", "apply", "-f", self.CONFIG, "-c", "mixed",
                              "--mount", n.mnt, "--wait=60"], capture_output=True, text=True, timeout=120, env=env)
        self.assertEqual(res.returncode, 0, res.stdout + res.stderr)
        self.assertEqual(self.status("gpu2"), "mode enabled: applied\n7g.141gb: applied\n")

    def test_the_family_is_ppu_unless_told_as_every_command_s(self):
        n = self.node
        res = subprocess.run([ACCEL_SMI, f"--sim={n.state}", "layout", "export", "--mount", n.mnt],
                             capture_output=True, text=True, timeout=60)
        self.assertEqual(res.returncode, 0, res.stderr)
        self.assertIn("devices: [0", res.stdout)
        self.assertEqual(res.stdout, subprocess.run([ACCEL_SMI, f"--sim={n.state}", "-f", "ppu", "layout", "export",
                                                     "--mount", n.mnt], capture_output=True, text=True,
                                                    timeout=60).stdout)

    def test_what_a_card_cannot_say_is_reported_per_card_and_not_written(self):
        n = self.node
        before = {d: n.read(d, "mig", "layout") for d in ("gpu0", "gpu1", "gpu2")}
        res = self.apply("a100-shaped")
        self.assertEqual(res.returncode, 1)
        for dev in ("gpu0", "gpu1", "gpu2"):
            self.assertIn(f"{dev}: line ", res.stdout)
        self.assertEqual(res.stdout.count("asks for 1g.5gb, which this card does not offer"), 3)
        self.assertEqual({d: n.read(d, "mig", "layout") for d in before}, before)
        res = self.apply("no-such-config")
        self.assertEqual(res.returncode, 2)
        self.assertIn("it has: all-disabled, all-1g.18gb, mixed, a100-shaped", res.stderr)

    def test_all_disabled_flips_every_card_it_may(self):
        n = self.node
        self.assertEqual(self.apply("all-1g.18gb").returncode, 0)
        res = self.apply("all-disabled")
        self.assertEqual(res.returncode, 3, res.stdout + res.stderr)  # gpu2's line waits for a reset
        self.assertEqual([n.read(d, "mig", "mode") for d in ("gpu0", "gpu1")], ["disabled\n"] * 2)
        # gpu2's driver holds the change pending until a reset: the status says so, nothing resets it
        self.assertIn("reset", self.status("gpu2"))


class Crashes(LayoutCase):
    """Faults at every driver call and kill -9 while applying: the layout finishes, nothing else moves."""

    def all_applied(self, dev):
        st = self.status(dev)
        return st and all(l.endswith(": applied") for l in st.splitlines())

    def test_a_fault_at_every_driver_call_while_applying(self):
        n = self.node
        os.mkdir(self.mig("1g.18gb", "mine"))
        mine = self.identity("mine", profile="1g.18gb")
        text = "3g.71gb@4\n1g.18gb x2\n"
        n.smi("gpu", "sim", "calls", "--reset")
        self.layout(text)
        calls = sum(int(l.split()[1]) for l in n.smi("gpu", "sim", "calls").stdout.splitlines())
        self.layout("\n")
        stride = int(os.environ.get("ACCELFS_STRESS_STRIDE", "1"))
        problems, fired = [], 0
        for k in range(0, calls + 2, stride):
            ctx = f"sim fault '*' UNKNOWN --skip {k}"
            n.smi("gpu", "sim", "fault", "*", "UNKNOWN", "--skip", k, "--times", 1)
            e = n.errno_of(self.layout, text)
            if e not in (0, errno.EIO):
                problems.append(f"{ctx}: the layout write answered {errno.errorcode.get(e, e)}")
            fired += "fired 1" in n.smi("gpu", "sim", "faults").stdout
            n.smi("gpu", "sim", "clear-faults")
            try:
                wait_until(lambda: self.all_applied(DEV), timeout=10, what="the layout to finish")
            except AssertionError as err:
                problems.append(f"{ctx}: {err}")
            if self.identity("mine", profile="1g.18gb") != mine:
                problems.append(f"{ctx}: the mkdir-made job moved")
            problems += [f"{ctx}: {p}" for p in settled(n, timeout=5)]
            self.layout("\n")
            wait_until(lambda: sorted(self.by_job()) == ["mine"], timeout=10, what="only mine to be left")
        self.assertEqual(problems[:10], [])
        self.assertGreater(calls, 20, "a clean apply makes the calls of four carves")
        self.assertGreater(fired, (calls + 2) // stride // 2, "most faults fired during the applies")

    def test_kill9_while_applying_then_restart_finishes_it(self):
        n = self.node
        devs = ["gpu0", "gpu1", "ppu0"]
        mine = {}
        for dev, prof in (("gpu0", "1g.18gb"), ("gpu1", "3g.71gb"), ("ppu0", "4g.48gb")):
            os.mkdir(self.mig(prof, "mine-" + dev, dev=dev))
            mine[dev] = (prof, self.identity("mine-" + dev, dev=dev, profile=prof))
        texts = {"gpu0": ["1g.18gb x6\n", "3g.71gb@4\n1g.18gb x2\n"], "gpu1": ["1g.18gb x3\n", "1g.18gb x2\n"],
                 "ppu0": ["4g.48gb\n", "\n"]}
        rng = random.Random(23)
        for round_ in range(int(os.environ.get("ACCELFS_STRESS_ROUNDS", "6"))):
            def writer(dev):
                n.errno_of(self.layout, texts[dev][round_ % 2], dev)
            threads = [threading.Thread(target=writer, args=(d,)) for d in devs]
            for t in threads:
                t.start()
            threading.Event().wait(rng.uniform(0, 0.15))
            n.kill9()
            for t in threads:
                t.join()
            n.start()
            for dev in devs:
                wait_until(lambda: self.all_applied(dev) or not self.status(dev), timeout=15,
                           what=f"{dev}'s layout to finish after the restart: {self.status(dev)!r}")
                prof, ident = mine[dev]
                self.assertEqual(self.identity("mine-" + dev, dev=dev, profile=prof), ident,
                                 f"round {round_}: a mkdir-made job on {dev} moved")
            self.assertSettled(f"round {round_}")  # one job per instance, names unique, no orphan left


if __name__ == "__main__":
    unittest.main()
