# SPDX-License-Identifier: MIT
"""A job given to a container is busy until the container is gone: the job's
containers, reclaim and holders files, rmdir refused while attached, stale
attachments cleared by the daemon, reclaim when the last container goes, the
hook program, and the one job-name rule.  Containers are stood in for by
plain processes here; test_podman.py runs the real runtime."""
import errno
import json
import os
import shutil
import stat
import subprocess
import tempfile
import time
import unittest

from harness import ACCELFS, NodeTestCase, start_daemon, wait_until
from test_containers import as_user

HOOK = os.environ.get("ACCELFS_HOOK", "accelfs-hook")
PROF = ("ppu3", "mig", "4g.48gb")
CID = "3f2a9c1e0b4d" + "5e6f" * 13  # 64 hex digits, as podman's


class JobTestCase(NodeTestCase):
    def setUp(self):
        super().setUp()
        self.procs = []

    def tearDown(self):
        for p in self.procs:
            if p.poll() is None:
                p.kill()
                p.wait()
            if p.stdout:
                p.stdout.close()
        super().tearDown()

    def job(self, *more, name="job1"):
        return self.node.path(*PROF, name, *more)

    def process(self):
        """A process standing in for a container's first process."""
        p = subprocess.Popen(["sleep", "1000"])
        self.procs.append(p)
        return p

    def write(self, path, text):
        with open(path, "w") as f:
            f.write(text)

    def attach(self, pid, cid=CID, name="job1", uuid=None):
        self.write(self.job("containers", name=name), f"attach {cid} {pid}" + (f" {uuid}" if uuid else "") + "\n")

    def containers(self, name="job1"):
        return [dict(f.split("=", 1) for f in line.split()) for line in
                self.node.read(*PROF, name, "containers").splitlines()]

    def last_error(self):
        return self.node.read(*PROF, "last_error").strip()

    def hook(self, verb, state, name="job1", uuid=None):
        uuid = uuid or self.node.keyvals(*PROF, name, "status")["uuid"]
        return subprocess.run([HOOK, verb, self.job(name=name), uuid], input=json.dumps(state),
                              capture_output=True, text=True, timeout=30)


class Names(JobTestCase):
    RULE = "starting and ending with a letter or digit"

    def test_names_a_runtime_refuses_are_refused_at_mkdir_with_the_rule(self):
        n = self.node
        for bad in ("job-", "job.", "job_", "-job", "a:b"):
            self.assertErrno(errno.EINVAL, os.mkdir, n.path(*PROF, bad))
            self.assertIn(f"job name '{bad}' is not valid", self.last_error())
            self.assertIn(self.RULE, self.last_error())
        self.assertErrno(errno.EINVAL, os.mkdir, n.path("mig", "4g.48gb", "node-"))
        self.assertIn(self.RULE, n.read("mig", "4g.48gb", "last_error"))
        self.assertErrno(errno.ENAMETOOLONG, os.mkdir, n.path(*PROF, "j" * 64))
        self.assertIn("longer than 63 bytes", self.last_error())
        self.assertEqual(n.available("ppu3", "4g.48gb"), 2, "a refused name carved nothing")

    def test_every_name_mkdir_accepts_is_a_device_in_the_node_spec(self):
        n = self.node
        names = ["a", "9", "x.y-z_0", "J" * 63]
        for name, dev in zip(names, ("ppu3", "ppu3", "ppu4", "ppu4")):
            os.mkdir(n.path(dev, "mig", "4g.48gb", name))
        specs = n.cdi_specs()
        self.assertEqual(sorted(specs), sorted(names))
        self.assertEqual(sorted(d["name"] for spec in specs.values() for d in spec["devices"]), sorted(names))


class Files(JobTestCase):
    def test_a_job_lists_its_containers_reclaim_and_holders(self):
        n = self.node
        os.mkdir(self.job())
        os.mkdir(n.path("mig", "4g.48gb", "job2"))
        for path in (self.job(), n.path("mig", "4g.48gb", "job2")):
            names = os.listdir(path)
            for f in ("containers", "reclaim", "holders"):
                self.assertIn(f, names)
        self.assertEqual(n.read(*PROF, "job1", "reclaim"), "manual\n")
        self.assertEqual(n.read(*PROF, "job1", "containers"), "")
        self.assertEqual(n.read(*PROF, "job1", "holders"), "")
        self.assertEqual(n.keyvals(*PROF, "job1", "status")["reclaim"], "manual")
        # The modes say who may write: root the two the hooks and operators write, nobody the rest.
        for f, mode in (("containers", 0o644), ("reclaim", 0o644), ("holders", 0o444), ("status", 0o444)):
            self.assertEqual(stat.S_IMODE(os.stat(os.path.join(self.job(), f)).st_mode), mode, f)

    def test_holders_are_the_processes_on_the_jobs_own_nodes(self):
        n = self.node
        os.mkdir(self.job())
        os.mkdir(self.job(name="job2"))
        nodes = {d["name"]: d["containerEdits"]["deviceNodes"]
                 for spec in n.cdi_specs().values() for d in spec["devices"]}
        cap = [x["hostPath"] for x in nodes["job1"] if "-caps/" in x["path"]][0]
        card = [x["hostPath"] for x in nodes["job1"] if x["path"] == "/dev/alixpu_ppu3"][0]
        # the simulated nodes cannot be opened for real; an O_PATH descriptor holds them as well
        holder = subprocess.Popen(["python3", "-c", "import os,sys,time\n"
                                   f"a=os.open({cap!r}, os.O_PATH)\nprint('held', flush=True)\ntime.sleep(1000)"],
                                  stdout=subprocess.PIPE, text=True)
        self.procs.append(holder)
        self.assertEqual(holder.stdout.readline().strip(), "held")
        line = [l for l in n.read(*PROF, "job1", "holders").splitlines() if l.startswith(f"pid={holder.pid} ")]
        self.assertEqual(len(line), 1, n.read(*PROF, "job1", "holders"))
        self.assertIn("command=python3 fds=1", line[0])
        self.assertEqual(n.read(*PROF, "job2", "holders"), "", "another job's nodes are not held")
        # the card node is every job's on the card: its holders are the card's, not a job's
        card_holder = subprocess.Popen(["python3", "-c", "import os,time\n"
                                        f"a=os.open({card!r}, os.O_PATH)\nprint('held', flush=True)\n"
                                        "time.sleep(1000)"], stdout=subprocess.PIPE, text=True)
        self.procs.append(card_holder)
        card_holder.stdout.readline()
        self.assertIn(f"pid={card_holder.pid} ", n.read("ppu3", "holders"))
        self.assertNotIn(f"pid={card_holder.pid} ", n.read(*PROF, "job1", "holders"))

    def test_a_holder_cannot_forge_lines_with_its_command_line(self):
        """A process names itself: a newline in its argv or comm must not become a line of holders."""
        n = self.node
        os.mkdir(self.job())
        card = [x["hostPath"] for spec in n.cdi_specs().values() for d in spec["devices"]
                for x in d["containerEdits"]["deviceNodes"] if x["path"] == "/dev/alixpu_ppu3"][0]
        forger = subprocess.Popen(["python3", "-c", "import os,sys,time,ctypes\n"
                                   "ctypes.CDLL(None).prctl(15, b'x\\npid=1 comm', 0, 0, 0)\n"
                                   f"a=os.open({card!r}, os.O_PATH)\nprint('held', flush=True)\n"
                                   "time.sleep(1000)", "\npid=1 command=init fds=9 cmdline=/sbin/init"],
                                  stdout=subprocess.PIPE, text=True)
        self.procs.append(forger)
        self.assertEqual(forger.stdout.readline().strip(), "held")
        text = n.read("ppu3", "holders")
        lines = text.splitlines()
        self.assertFalse([l for l in lines if l.startswith("pid=1 ")], text)
        mine = [l for l in lines if l.startswith(f"pid={forger.pid} ")]
        self.assertEqual(len(mine), 1, text)
        self.assertIn("?pid=1 command=init", mine[0])
        self.assertIn("command=x?pid=1", mine[0])


class Attach(JobTestCase):
    def test_an_attached_job_refuses_rmdir_naming_the_container(self):
        n = self.node
        os.mkdir(self.job())
        p = self.process()
        self.attach(p.pid)
        got = self.containers()
        self.assertEqual([(c["id"], c["pid"]) for c in got], [(CID, str(p.pid))])
        self.assertIn(f"container: {CID} pid={p.pid} since=", n.read(*PROF, "job1", "status"))
        self.assertIn(f"container={CID} pid={p.pid} since=", n.read(*PROF, "job1", "holders"))
        self.assertErrno(errno.EBUSY, os.rmdir, self.job())
        self.assertIn(f"job1 is attached to 1 container: {CID[:12]} (pid {p.pid})", self.last_error())
        self.assertIn("stop it first", self.last_error())
        # from the node-level view too, with its own last_error
        self.assertErrno(errno.EBUSY, os.rmdir, n.path("mig", "4g.48gb", "job1"))
        self.assertIn(CID[:12], n.read("mig", "4g.48gb", "last_error"))
        self.assertTrue(os.path.isdir(self.job()))
        self.assertEqual(n.keyvals(*PROF, "job1", "status")["state"], "ready")
        # detached (the poststop hook): rmdir goes through
        self.write(self.job("containers"), f"detach {CID}\n")
        self.assertEqual(self.containers(), [])
        self.assertNotIn("container:", n.read(*PROF, "job1", "status"))
        os.rmdir(self.job())
        self.assertEqual(n.available("ppu3", "4g.48gb"), 2)

    def test_what_cannot_be_attached(self):
        n = self.node
        os.mkdir(self.job())
        uuid = n.keyvals(*PROF, "job1", "status")["uuid"]
        for line, err, why in (("attach", errno.EINVAL, "write 'attach ID PID"),
                               (f"attach {CID} notapid", errno.EINVAL, "not a process id"),
                               (f"attach bad/id 1", errno.EINVAL, "not a container id"),
                               (f"attach {CID} 4194000", errno.ESRCH, "does not exist"),
                               (f"attach {CID} {os.getpid()} MIG-00000000-0000-0000-0000-000000000000", errno.ESTALE,
                                f"now instance {uuid}"),
                               ("hello", errno.EINVAL, "write 'attach ID PID")):
            self.assertErrno(err, self.write, self.job("containers"), line + "\n")
            self.assertIn(why, self.last_error(), line)
        self.assertErrno(errno.EINVAL, self.write, self.job("reclaim"), "sometimes\n")
        self.assertIn("write 'manual' or 'when-detached'", self.last_error())
        self.assertEqual(self.containers(), [])
        # only root: the runtime's hooks run as root, and nobody else may pin or free a job
        res = as_user(4321, [4321], "sh", "-c", f"echo 'attach {CID} 1' > {self.job('containers')}")
        self.assertNotEqual(res.returncode, 0)
        self.assertIn("Permission denied", res.stderr)
        res = as_user(4321, [4321], "sh", "-c", f"echo when-detached > {self.job('reclaim')}")
        self.assertNotEqual(res.returncode, 0)
        self.assertEqual(n.read(*PROF, "job1", "reclaim"), "manual\n")
        # a lost job (its instance destroyed by hand) cannot be given to anyone
        st = n.keyvals(*PROF, "job1", "status")
        n.smi("ppu", "mig", "-i", 3, "-gi", st["gi"], "-ci", st["ci"], "-dci")
        n.smi("ppu", "mig", "-i", 3, "-gi", st["gi"], "-dgi")
        wait_until(lambda: n.keyvals(*PROF, "job1", "status")["state"] == "lost", what="the job to be lost")
        self.assertErrno(errno.ENODEV, self.attach, os.getpid())
        self.assertIn("job1 is lost", self.last_error())

    def test_init_and_the_daemon_itself_are_not_containers(self):
        n = self.node
        os.mkdir(self.job())
        for pid, why in ((1, "pid 1 is init"), (n.pid(), f"pid {n.pid()} is accelfs itself")):
            self.assertErrno(errno.EINVAL, self.attach, pid)
            self.assertIn(why, self.last_error())
            self.assertIn("the runtime passes its container's first process", self.last_error())
        self.assertEqual(self.containers(), [])
        os.rmdir(self.job())

    def test_a_job_being_removed_is_busy_not_absent(self):
        n = self.node
        os.mkdir(self.job())
        # the driver refuses the GPU instance after its compute instance went: the job stays removing
        n.smi("ppu", "sim", "fault", "GpuInstanceDestroy", "IN_USE", "--skip", 0, "--times", 100000)
        try:
            self.assertErrno(errno.EBUSY, os.rmdir, self.job())
            self.assertEqual(n.keyvals(*PROF, "job1", "status")["state"], "removing")
            p = self.process()
            self.assertErrno(errno.EBUSY, self.attach, p.pid)
            self.assertIn(f"job1 is being removed", self.last_error())
            self.assertIn("it cannot be given to container", self.last_error())
            self.assertEqual(self.containers(), [])
        finally:
            n.smi("ppu", "sim", "clear-faults")
        wait_until(lambda: not os.path.exists(self.job()), what="the poller to finish the removal")

    def test_a_container_whose_process_died_is_cleared_by_the_daemon(self):
        n = self.node
        os.mkdir(self.job())
        p = self.process()
        self.attach(p.pid)
        p.kill()
        p.wait()
        # nobody reads the job: the daemon's own pass notices, and says so
        wait_until(lambda: "has exited" in n.log(), timeout=10, what="the stale attachment to be cleared")
        self.assertIn(f"job1: container {CID[:12]} has exited (pid {p.pid} is gone)", n.log())
        self.assertEqual(self.containers(), [])
        os.rmdir(self.job())

    def test_attachments_survive_restart_and_kill9(self):
        n = self.node
        os.mkdir(self.job())
        p = self.process()
        self.attach(p.pid)
        n.restart()
        self.assertEqual([c["pid"] for c in self.containers()], [str(p.pid)])
        self.assertErrno(errno.EBUSY, os.rmdir, self.job())
        n.kill9()
        n.start()
        self.assertErrno(errno.EBUSY, os.rmdir, self.job())
        # the container ended while no daemon was running: the next one knows
        n.kill9()
        p.kill()
        p.wait()
        n.start()
        wait_until(lambda: not self.containers(), what="the dead container to be cleared after the restart")
        os.rmdir(self.job())

    def test_a_job_made_again_under_the_same_name_is_not_the_old_ones(self):
        n = self.node
        os.mkdir(self.job())
        old = n.keyvals(*PROF, "job1", "status")["uuid"]
        os.rmdir(self.job())
        os.mkdir(self.job())
        p = self.process()
        self.assertErrno(errno.ESTALE, lambda: self.attach(p.pid, uuid=old))
        self.assertIn("was given an earlier job of that name", self.last_error())
        os.rmdir(self.job())


class Reclaim(JobTestCase):
    poll = 0.2

    def test_when_detached_reclaims_once_the_last_container_goes(self):
        n = self.node
        os.mkdir(self.job())
        os.mkdir(self.job(name="job2"))
        os.mkdir(n.path("ppu4", "mig", "4g.48gb", "never"))
        self.write(self.job("reclaim"), "when-detached\n")
        self.write(n.path("ppu4", "mig", "4g.48gb", "never", "reclaim"), "when-detached")
        self.assertEqual(n.read(*PROF, "job1", "reclaim"), "when-detached\n")
        self.assertEqual(n.keyvals(*PROF, "job1", "status")["reclaim"], "when-detached")
        a, b = self.process(), self.process()
        self.attach(a.pid, cid="ctr-a")
        self.attach(b.pid, cid="ctr-b")
        self.attach(a.pid, cid="ctr-c", name="job2")  # manual: stays when its container goes
        self.write(self.job("containers"), "detach ctr-a\n")
        time.sleep(3 * self.poll)
        self.assertTrue(os.path.isdir(self.job()), "one container still holds it")
        # the last one exits without a poststop hook: the daemon clears it, then reclaims
        b.kill()
        b.wait()
        wait_until(lambda: not os.path.exists(self.job()), timeout=10, what="job1 to be reclaimed")
        self.assertIn("job1: reclaimed (reclaim when-detached): its last container is gone", n.log())
        self.write(self.job("containers", name="job2"), "detach ctr-c\n")
        time.sleep(3 * self.poll)
        self.assertTrue(os.path.isdir(self.job(name="job2")), "a manual job stays")
        self.assertTrue(os.path.isdir(n.path("ppu4", "mig", "4g.48gb", "never")),
                        "a job never given to a container is not reclaimed")
        self.assertEqual(n.available("ppu3", "4g.48gb"), 1)

    def test_when_detached_set_after_the_containers_left_reclaims_at_once(self):
        n = self.node
        os.mkdir(self.job())
        p = self.process()
        self.attach(p.pid)
        self.write(self.job("containers"), f"detach {CID}\n")
        time.sleep(3 * self.poll)
        self.assertTrue(os.path.isdir(self.job()))
        self.write(self.job("reclaim"), "when-detached\n")
        wait_until(lambda: not os.path.exists(self.job()), what="job1 to be reclaimed")
        # the policy belonged to that instance: a new job1 starts manual
        os.mkdir(self.job())
        self.assertEqual(n.read(*PROF, "job1", "reclaim"), "manual\n")


class Exits(JobTestCase):
    """A container's end is known when it happens (the daemon holds a pidfd of its first process), not at
    the next --poll-interval, which here is an hour: nothing but the exit can wake the daemon."""
    poll = 3600

    def attachments_on_disk(self):
        with open(os.path.join(self.node.state, "attachments.json")) as f:
            return json.load(f)

    def test_an_exit_clears_the_attachment_without_waiting_for_a_pass(self):
        n = self.node
        os.mkdir(self.job())
        os.mkdir(self.job(name="job2"))
        self.write(self.job("reclaim", name="job2"), "when-detached\n")
        p, q = self.process(), self.process()
        self.attach(p.pid)
        self.attach(q.pid, cid="ctr-q", name="job2")
        p.kill()
        p.wait()
        # nothing reads the job (a read would prune too): the daemon notices by itself, and says so
        wait_until(lambda: "has exited" in n.log(), timeout=30, what="the exit to be noticed")
        self.assertIn(f"job1: container {CID[:12]} has exited (pid {p.pid} is gone)", n.log())
        self.assertEqual(self.attachments_on_disk().get("job1", {}).get("containers", []), [])
        # a when-detached job goes as soon as its last container does
        q.kill()
        q.wait()
        wait_until(lambda: not os.path.exists(self.job(name="job2")), timeout=30, what="job2 to be reclaimed")
        self.assertEqual(self.containers(), [])
        os.rmdir(self.job())

    def test_after_a_restart_the_exit_is_still_seen_when_it_happens(self):
        n = self.node
        os.mkdir(self.job())
        p = self.process()
        self.attach(p.pid)
        n.restart()
        self.assertErrno(errno.EBUSY, os.rmdir, self.job())  # the same process, its start time checked
        p.kill()
        p.wait()
        wait_until(lambda: "has exited" in n.log(), timeout=30, what="the exit to be noticed after the restart")
        self.assertEqual(self.attachments_on_disk().get("job1", {}).get("containers", []), [])
        os.rmdir(self.job())


class Identity(JobTestCase):
    """What the reclaimer removes is the job whose last container went, never another one made under its
    name while it worked through its list."""
    poll = 0.2
    busy_retries = 12  # the first reclaim of the pass retries a busy destroy for seconds: the list is in hand

    def destroys(self):
        calls = dict(line.split() for line in self.node.smi("ppu", "sim", "calls").stdout.splitlines())
        return int(calls.get("ComputeInstanceDestroy", 0))

    def test_when_detached_never_removes_a_job_made_again_under_its_name(self):
        n = self.node
        jobs = [(f"ppu{i // 2}", f"w{i:02d}") for i in range(30)]
        for dev, job in jobs:
            os.mkdir(n.path(dev, "mig", "4g.48gb", job))
            self.write(n.path(dev, "mig", "4g.48gb", job, "reclaim"), "when-detached\n")
        p = self.process()  # one container given all 30
        for dev, job in jobs:
            self.write(n.path(dev, "mig", "4g.48gb", job, "containers"), f"attach {CID} {p.pid}\n")
        st = n.keyvals("ppu0", "mig", "4g.48gb", "w00", "status")
        n.smi("ppu", "sim", "busy", "-i", 0, "-gi", st["gi"], "-ci", st["ci"], 1)
        n.smi("ppu", "sim", "calls", "--reset")
        p.kill()
        p.wait()
        # the reclaimer has its list of 30 and is stuck on the first: w29 is removed and made again by hand
        wait_until(lambda: self.destroys() > 0, timeout=30, what="the reclaimer to start on w00")
        last = n.path("ppu14", "mig", "4g.48gb", "w29")
        old = n.keyvals("ppu14", "mig", "4g.48gb", "w29", "status")["uuid"]
        os.rmdir(last)
        os.mkdir(last)
        new = n.keyvals("ppu14", "mig", "4g.48gb", "w29", "status")["uuid"]
        self.assertNotEqual(new, old)
        n.smi("ppu", "sim", "busy", "-i", 0, "-gi", st["gi"], "-ci", st["ci"], 0)
        for dev, job in jobs[:-1]:
            wait_until(lambda: not os.path.exists(n.path(dev, "mig", "4g.48gb", job)), timeout=60,
                       what=f"{job} to be reclaimed")
        wait_until(lambda: "w29: not reclaimed" in n.log() or not os.path.exists(last), timeout=30,
                   what="the reclaimer to decide on w29")
        self.assertTrue(os.path.isdir(last), "the new w29 was reclaimed for the old one's container")
        st = n.keyvals("ppu14", "mig", "4g.48gb", "w29", "status")
        self.assertEqual((st["uuid"], st["state"], st["reclaim"]), (new, "ready", "manual"))
        self.assertIn(f"w29: not reclaimed (reclaim when-detached): the job of that name is another instance "
                      f"now ({new}), not {old}", n.log())
        self.assertEqual(n.read("ppu14", "mig", "4g.48gb", "last_error"), "", "nothing failed there")


class Hook(JobTestCase):
    def test_the_hook_records_and_clears_from_the_oci_state(self):
        n = self.node
        os.mkdir(self.job())
        p = self.process()
        res = self.hook("attach", {"ociVersion": "1.0.2", "id": CID, "status": "creating", "pid": p.pid,
                                   "bundle": "/x"})
        self.assertEqual(res.returncode, 0, res.stderr)
        self.assertEqual([c["id"] for c in self.containers()], [CID])
        res = self.hook("detach", {"ociVersion": "1.0.2", "id": CID, "status": "stopped", "bundle": "/x"})
        self.assertEqual(res.returncode, 0, res.stderr)
        self.assertEqual(self.containers(), [])
        # refusals reach the runtime as the hook's status and message
        uuid = n.keyvals(*PROF, "job1", "status")["uuid"]
        os.rmdir(self.job())
        os.mkdir(self.job())
        res = self.hook("attach", {"id": CID, "pid": p.pid}, uuid=uuid)
        self.assertEqual(res.returncode, 1)
        self.assertIn("Stale file handle", res.stderr)
        self.assertIn("was given an earlier job of that name", res.stderr)
        os.rmdir(self.job())
        res = self.hook("attach", {"id": CID, "pid": p.pid}, uuid=uuid)
        self.assertEqual(res.returncode, 1)
        self.assertIn("the job was removed", res.stderr)
        # a poststop hook for a job that is gone has nothing to do
        res = self.hook("detach", {"id": CID}, uuid=uuid)
        self.assertEqual(res.returncode, 0, res.stderr)
        res = subprocess.run([HOOK, "attach", self.job(), uuid], input="not json", capture_output=True, text=True)
        self.assertEqual(res.returncode, 1)
        self.assertIn("not JSON", res.stderr)
        res = subprocess.run([HOOK, "attach"], capture_output=True, text=True)
        self.assertEqual(res.returncode, 2)
        self.assertIn("usage: accelfs-hook attach|detach JOBDIR MIG-UUID", res.stderr)


class Specs(JobTestCase):
    def test_specs_name_the_hook_and_the_jobs_own_nodes(self):
        n = self.node
        os.mkdir(self.job())
        job_spec = json.loads(n.read(*PROF, "job1", "cdi.json"))
        node_spec = n.cdi_specs()["job1"]
        uuid = n.keyvals(*PROF, "job1", "status")["uuid"]
        for spec in (job_spec, node_spec):
            hooks = spec["devices"][0]["containerEdits"]["hooks"]
            self.assertEqual([(h["hookName"], h["args"][1:]) for h in hooks],
                             [("createRuntime", ["attach", self.job(), uuid]),
                              ("poststop", ["detach", self.job(), uuid])])
            self.assertEqual(os.path.realpath(hooks[0]["path"]), os.path.realpath(HOOK))
        # the job's spec finds its nodes in the job's dev/: each is there, a character device
        devices = {}
        for line in n.read(*PROF, "job1", "devices").splitlines():
            path, _, numbers = line.split()
            devices[path] = tuple(int(x) for x in numbers.split(":"))
        nodes = job_spec["containerEdits"]["deviceNodes"] + job_spec["devices"][0]["containerEdits"]["deviceNodes"]
        self.assertEqual(sorted(x["path"] for x in nodes), sorted(devices))
        for x in nodes:
            self.assertEqual(x["hostPath"], self.job("dev", x["path"][len("/dev/"):]))
            st = os.stat(x["hostPath"])
            self.assertEqual((os.major(st.st_rdev), os.minor(st.st_rdev)), devices[x["path"]])
            self.assertEqual((x["fileMode"], x["uid"], x["gid"]), (st.st_mode & 0o7777, st.st_uid, st.st_gid))
            self.assertNotIn("major", x)
        os.rmdir(self.job())
        for x in nodes:
            self.assertFalse(os.path.exists(x["hostPath"]), "a copy kept after rmdir resolves nothing")


class NoHook(unittest.TestCase):
    """accelfs run where accelfs-hook is not installed: the tree is served, no spec is handed out."""

    def test_without_the_hook_no_cdi_spec_is_handed_out(self):
        tmp = tempfile.mkdtemp(prefix="accelfs-nohook-")
        state, mnt = os.path.join(tmp, "state"), os.path.join(tmp, "mnt")
        os.mkdir(mnt)
        shutil.copy(ACCELFS, os.path.join(tmp, "accelfs"))  # nothing beside it, no ../tools/
        try:
            res = start_daemon([os.path.join(tmp, "accelfs"), "--sim", f"--state-dir={state}", mnt], mnt,
                               capture_output=True, text=True, timeout=60)
            self.assertEqual(res.returncode, 0, res.stderr)
            self.assertIn("warning: the OCI hook program accelfs-hook is neither at", res.stderr)
            self.assertIn("no CDI spec is written until it is", res.stderr)
            with open(os.path.join(state, "accelfs.log")) as f:
                log = f.read()  # the file docs/operations.md names for a daemon in the background
            self.assertRegex(log, r"(?m) warning: the OCI hook program accelfs-hook is neither at .*"
                             r"no CDI spec is written until it is$")
            os.mkdir(os.path.join(mnt, *PROF, "job1"))
            self.assertNotIn("cdi.json", os.listdir(os.path.join(mnt, *PROF, "job1")))
            self.assertFalse(os.path.exists(os.path.join(mnt, *PROF, "job1", "cdi.json")))
            self.assertEqual(os.listdir(os.path.join(state, "cdi")) if os.path.isdir(os.path.join(state, "cdi"))
                             else [], [], "no spec file, no claim of the CDI directory")
            os.rmdir(os.path.join(mnt, *PROF, "job1"))
        finally:
            subprocess.run(["fusermount3", "-u", mnt], check=False)
        # named but unusable: refused before anything is made
        res = subprocess.run([ACCELFS, "--sim", f"--state-dir={state}-2", "--hook=/nonexistent/accelfs-hook", mnt],
                             capture_output=True, text=True, timeout=60)
        self.assertEqual(res.returncode, 1)
        self.assertIn("the OCI hook program /nonexistent/accelfs-hook (--hook) cannot be run", res.stderr)
        self.assertFalse(os.path.exists(f"{state}-2"))
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    unittest.main(verbosity=2)
