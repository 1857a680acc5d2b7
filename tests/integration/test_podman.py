# SPDX-License-Identifier: MIT
"""Containers for real: Debian's podman and runc run containers against a
mounted simulated node, offline, from an image imported from busybox-static.

What a container sees (paths, types, numbers, modes, owners, and whether its
device cgroup admits the nodes), jobs by CDI name from the node-level spec
files (one per job) and from a job's own spec, several at once and of both
families, every job of a full node in one container, after a restart of the
daemon and after a crash (exactly the live jobs resolvable then), by
`--device JOB/dev:/dev`; what the runtime refuses (a reclaimed or lost job);
and attachments: a job given to a container is busy until the container is
gone, however it goes.

The file re-runs itself in a mount namespace of its own, with empty tmpfs
over /run/cdi and /etc/cdi: podman 4.3 reads CDI specs only there, and the
test daemons' specs must neither see nor touch the host's.  Podman keeps its
storage in a temporary directory, so nothing of the host's podman is used
or changed.
"""
import errno
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

NS_MARK = "ACCELFS_PODMAN_NS"
if __name__ == "__main__" and os.environ.get(NS_MARK) != "1" and os.geteuid() == 0:
    os.environ[NS_MARK] = "1"
    os.execvp("unshare", ["unshare", "--mount", "--propagation", "private", sys.executable, *sys.argv])

from harness import Node, keep_failed_log, test_failed, wait_until  # noqa: E402
from test_containers import as_user  # noqa: E402

IMAGE = "localhost/accelfs-test:latest"
CDI_DIRS = ("/run/cdi", "/etc/cdi")
PROF = ("ppu3", "mig", "4g.48gb")
# What the environment needs: no systemd (cgroupfs, events in a file), no registry, limits a
# container may set without CAP_SYS_RESOURCE.
GLOBAL = ["--cgroup-manager=cgroupfs", "--events-backend=file", "--storage-driver=vfs", "--runtime=runc"]
RUN = ["--network=none", "--ulimit", "nofile=1024:1024", "--ulimit", "nproc=1024:1024"]

podman_root = None
podman_unusable = None


def podman(*args, check=True, timeout=120):
    cmd = ["podman", f"--root={podman_root}/storage", f"--runroot={podman_root}/run", f"--tmpdir={podman_root}/tmp",
           *GLOBAL, *args]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if check and res.returncode != 0:
        raise AssertionError(f"{' '.join(cmd)} failed ({res.returncode}):\n{res.stdout}{res.stderr}")
    return res


def build_image(root):
    """A root filesystem of busybox-static and its applets, imported as IMAGE."""
    rootfs = os.path.join(root, "rootfs")
    for d in ("bin", "dev", "proc", "sys", "tmp", "etc"):
        os.makedirs(os.path.join(rootfs, d))
    busybox = shutil.which("busybox")
    shutil.copy(busybox, os.path.join(rootfs, "bin", "busybox"))
    for applet in subprocess.run([busybox, "--list"], capture_output=True, text=True, check=True).stdout.split():
        if applet != "busybox":
            os.symlink("busybox", os.path.join(rootfs, "bin", applet))
    tar = subprocess.run(["tar", "-C", rootfs, "-c", "."], capture_output=True, check=True).stdout
    res = subprocess.run(["podman", f"--root={root}/storage", f"--runroot={root}/run", f"--tmpdir={root}/tmp",
                          *GLOBAL, "import", "-", IMAGE], input=tar, capture_output=True, timeout=120)
    if res.returncode:
        raise AssertionError(f"podman import failed: {res.stderr.decode()}")
    shutil.rmtree(rootfs)


def setUpModule():
    global podman_root, podman_unusable
    if os.environ.get(NS_MARK) != "1":
        raise AssertionError("run this file as a program (meson test integration-podman): it needs a mount "
                             "namespace of its own, which it makes for itself as root")
    for tool, package in (("podman", "podman"), ("runc", "runc"), ("busybox", "busybox-static")):
        if not shutil.which(tool):
            raise AssertionError(f"{tool} is not installed: scripts/install-deps installs {package}")
    for d in CDI_DIRS:
        if d == "/run/cdi" or os.path.isdir(d):
            os.makedirs(d, exist_ok=True)
            subprocess.run(["mount", "-t", "tmpfs", "-o", "mode=0755", "tmpfs", d], check=True)
    podman_root = tempfile.mkdtemp(prefix="accelfs-podman-")
    build_image(podman_root)
    # Podman itself, without accelfs: where even this fails, podman cannot run here at all.
    res = podman("run", "--rm", *RUN, IMAGE, "true", check=False)
    if res.returncode:
        podman_unusable = res.stderr.strip()


def tearDownModule():
    if podman_root:
        podman("rm", "--all", "--force", "--time=0", check=False)
        shutil.rmtree(podman_root, ignore_errors=True)


class PodmanTestCase(unittest.TestCase):
    poll = 0.2
    maxDiff = None

    def setUp(self):
        if podman_unusable:
            self.skipTest(f"podman cannot run a container on this host, even without accelfs: {podman_unusable}")
        self.node = Node(poll=self.poll, extra=["--cdi-dir=/var/run/cdi"]).start()
        self.copies = []

    def tearDown(self):
        # Containers first: their poststop hooks write to the mount.
        podman("rm", "--all", "--force", "--time=0", check=False)
        for c in self.copies:
            os.unlink(c)
        failed = test_failed(self)
        try:
            self.node.stop()
        finally:
            reports = self.node.sanitizer_reports()
            if failed or reports:
                keep_failed_log(self, self.node)
            self.node.cleanup()
        self.assertEqual(reports, "", "the daemon's sanitizers reported errors")

    # -- helpers ---------------------------------------------------------------
    def job(self, name, *more, prof=PROF):
        return self.node.path(*prof, name, *more)

    def devices(self, name, prof=PROF):
        """The job's devices file: {path: (major, minor)}."""
        out = {}
        for line in self.node.read(*prof, name, "devices").splitlines():
            path, kind, numbers = line.split()
            self.assertEqual(kind, "c")
            out[path] = tuple(int(x) for x in numbers.split(":"))
        return out

    def seen(self, *args):
        """Run a container and return the character devices it sees: {path: (major, minor, mode, uid, gid)}."""
        res = podman("run", "--rm", *RUN, *args, IMAGE, "sh", "-c",
                     "find /dev -type c | sort | while read f; do stat -c '%n %t %T %a %u %g' $f; done")
        out = {}
        for line in res.stdout.splitlines():
            path, maj, mnr, mode, uid, gid = line.split()
            out[path] = (int(maj, 16), int(mnr, 16), int(mode, 8), int(uid), int(gid))
        return out

    def accel_nodes(self, seen):
        """What the container has of accelerator nodes (not /dev/null and friends)."""
        return {p: v for p, v in seen.items() if p.startswith(("/dev/alixpu", "/dev/nvidia"))}

    def start(self, name, *args):
        """A container that sleeps, holding what args give it; returns its full id."""
        return podman("run", "-d", "--name", name, *RUN, *args, IMAGE, "sleep", "1000").stdout.strip()

    def attached(self, name, prof=PROF):
        return [line.split()[0][len("id="):] for line in self.node.read(*prof, name, "containers").splitlines()]

    def open_in_container(self, path, *args):
        """What opening path for reading answers in a container given args: busybox's message."""
        return podman("run", "--rm", *RUN, *args, IMAGE, "sh", "-c", f"cat {path} 2>&1; true").stdout.strip()


class ByName(PodmanTestCase):
    def test_a_job_by_cdi_name_gives_exactly_its_nodes_with_mode_and_owner(self):
        os.mkdir(self.job("job1"))
        want = {p: (*mm, 0o660, 0, 0) for p, mm in self.devices("job1").items()}
        self.assertEqual(self.accel_nodes(self.seen("--device", "accelfs.io/mig=job1")), want)
        # the device cgroup admits them: opening reaches the (absent) driver, not a refusal
        cap = [p for p in want if "-caps/" in p][0]
        self.assertIn("No such device or address", self.open_in_container(cap, "--device", "accelfs.io/mig=job1"))

    def test_several_jobs_of_both_families_at_once(self):
        os.mkdir(self.job("ta"))
        os.mkdir(self.node.path("gpu0", "mig", "3g.71gb", "nb"))
        os.mkdir(self.node.path("mig", "8g.96gb", "tc"))
        where = os.readlink(self.node.path("mig", "8g.96gb", "tc", "device")).split("/")
        want = {**self.devices("ta"), **self.devices("nb", prof=("gpu0", "mig", "3g.71gb")),
                **self.devices("tc", prof=(where[3], "mig", "8g.96gb"))}
        ctr = self.start("both", "--device", "accelfs.io/mig=ta", "--device", "accelfs.io/mig=nb",
                         "--device", "accelfs.io/mig=tc")
        other = self.start("other", "--device", "accelfs.io/mig=ta")
        got = self.accel_nodes(self.seen("--device", "accelfs.io/mig=ta", "--device", "accelfs.io/mig=nb",
                                         "--device", "accelfs.io/mig=tc"))
        self.assertEqual({p: v[:2] for p, v in got.items()}, want)
        self.assertEqual(sorted(self.attached("ta")), sorted([ctr, other]))
        self.assertEqual(self.attached("nb", prof=("gpu0", "mig", "3g.71gb")), [ctr])
        podman("rm", "--force", "--time=0", "both", "other")
        wait_until(lambda: self.attached("ta") == [], what="the poststop hooks to detach")
        os.rmdir(self.job("ta"))
        os.rmdir(self.node.path("mig", "3g.71gb", "nb"))

    def test_a_delegated_jobs_nodes_carry_its_owner_into_the_container(self):
        prof = self.node.path(*PROF)
        os.chown(prof, 0, 5000)
        os.chmod(prof, 0o1775)
        res = as_user(4321, [5000], "mkdir", self.job("mine"))
        self.assertEqual(res.returncode, 0, res.stderr)
        st = os.stat(self.job("mine", "dev", "alixpu_ppu3"))
        got = self.accel_nodes(self.seen("--device", "accelfs.io/mig=mine"))
        self.assertEqual({v[2:] for v in got.values()}, {(st.st_mode & 0o7777, st.st_uid, st.st_gid)})
        self.assertEqual(st.st_uid, 4321)
        self.assertEqual(st.st_gid, 5000)
        # and the kernel holds the container's users to it
        cap = [p for p in got if "-caps/" in p][0]
        self.assertIn("No such device or address",
                      self.open_in_container(cap, "--user", "4321:5000", "--device", "accelfs.io/mig=mine"))
        self.assertIn("Permission denied",
                      self.open_in_container(cap, "--user", "4322:5001", "--device", "accelfs.io/mig=mine"))

    def test_every_name_mkdir_accepts_works_in_the_runtime(self):
        names = [("ppu3", "a"), ("ppu3", "9"), ("ppu4", "x.y-z_0"), ("ppu4", "J" * 63)]
        args = []
        for dev, name in names:
            os.mkdir(self.node.path(dev, "mig", "4g.48gb", name))
            args += ["--device", f"accelfs.io/mig={name}"]
        got = self.accel_nodes(self.seen(*args))
        self.assertEqual(len([p for p in got if "-caps/" in p]), 2 * len(names))

    def test_after_a_restart_of_the_daemon(self):
        os.mkdir(self.job("job1"))
        ctr = self.start("held", "--device", "accelfs.io/mig=job1")
        self.node.restart()
        self.assertEqual(self.attached("job1"), [ctr])
        self.assertEqual(self.node.errno_of(os.rmdir, self.job("job1")), errno.EBUSY)
        self.assertEqual(self.accel_nodes(self.seen("--device", "accelfs.io/mig=job1")).keys(),
                         self.devices("job1").keys())
        self.node.kill9()
        self.node.start()
        self.assertEqual(self.attached("job1"), [ctr])
        podman("stop", "--time=0", "held")
        wait_until(lambda: self.attached("job1") == [], what="the poststop hook to detach")
        os.rmdir(self.job("job1"))


class ManyFiles(PodmanTestCase):
    """A spec file per job: podman reads them all, and a restart leaves exactly the live jobs resolvable."""

    def test_every_job_of_a_full_node_by_name_in_one_container(self):
        n = self.node
        jobs = {}
        for i in range(16):
            for half in ("a", "b"):
                name = f"p{i}{half}"
                os.mkdir(n.path(f"ppu{i}", "mig", "4g.48gb", name))
                jobs[name] = (f"ppu{i}", "mig", "4g.48gb")
        os.mkdir(n.path("gpu0", "mig", "7g.141gb", "g"))
        jobs["g"] = ("gpu0", "mig", "7g.141gb")
        self.assertEqual(sorted(n.cdi_files()), sorted(jobs), "one spec file per job")
        want = {}
        for name, prof in jobs.items():
            want.update({p: v for p, v in self.devices(name, prof=prof).items() if "-caps/" in p})
        args = [a for name in jobs for a in ("--device", f"accelfs.io/mig={name}")]
        got = self.accel_nodes(self.seen(*args))
        self.assertEqual({p: v[:2] for p, v in got.items() if "-caps/" in p}, want)

    def test_a_restart_after_a_crash_leaves_exactly_the_live_jobs_resolvable(self):
        n = self.node
        for name, dev in (("stays", "ppu3"), ("lost", "ppu4"), ("gone", "ppu5")):
            os.mkdir(n.path(dev, "mig", "4g.48gb", name))
        files = n.cdi_files()
        # a file of ours for a job that is no more (its removal cut by the crash): a valid spec of a device
        ghost = files["stays"].replace("-stays.json", "-ghost.json")
        with open(files["stays"]) as f:
            spec = json.load(f)
        spec["devices"][0]["name"] = "ghost"
        with open(ghost, "w") as f:
            json.dump(spec, f)
        self.assertEqual(len(self.accel_nodes(self.seen("--device", "accelfs.io/mig=ghost"))),
                         len(self.devices("stays")), "podman takes it while it is there")
        lost = n.keyvals("ppu4", "mig", "4g.48gb", "lost", "status")
        gone = n.keyvals("ppu5", "mig", "4g.48gb", "gone", "status")
        n.kill9()
        # while it is down: lost's instance is destroyed; gone is removed for good, record and instance
        n.smi("ppu", "mig", "-i", 4, "-gi", lost["gi"], "-ci", lost["ci"], "-dci")
        n.smi("ppu", "mig", "-i", 4, "-gi", lost["gi"], "-dgi")
        n.smi("ppu", "mig", "-i", 5, "-gi", gone["gi"], "-ci", gone["ci"], "-dci")
        n.smi("ppu", "mig", "-i", 5, "-gi", gone["gi"], "-dgi")
        for root, _, names in os.walk(os.path.join(n.state, "records")):
            if "gone.json" in names:
                os.unlink(os.path.join(root, "gone.json"))
        n.start()
        self.assertFalse(os.path.exists(n.path("ppu5", "mig", "4g.48gb", "gone")))
        self.assertEqual(n.keyvals("ppu4", "mig", "4g.48gb", "lost", "status")["state"], "lost")
        self.assertEqual(sorted(n.cdi_files()), ["stays"])
        for name in ("ghost", "lost", "gone"):
            res = podman("run", "--rm", *RUN, "--device", f"accelfs.io/mig={name}", IMAGE, "true", check=False)
            self.assertNotEqual(res.returncode, 0, name)
            self.assertIn(f"unresolvable CDI devices accelfs.io/mig={name}", res.stderr)
        self.assertEqual(self.accel_nodes(self.seen("--device", "accelfs.io/mig=stays")).keys(),
                         self.devices("stays").keys())
        os.rmdir(n.path("ppu4", "mig", "4g.48gb", "lost"))


class Refused(PodmanTestCase):
    def test_a_daemon_that_is_down_is_not_a_removed_job(self):
        # Killed, its spec files left behind: podman resolves the job and runs the hook, which finds no tree.
        n = self.node
        os.mkdir(self.job("job1"))
        n.kill9()
        res = podman("run", "--rm", *RUN, "--device", "accelfs.io/mig=job1", IMAGE, "true", check=False)
        self.assertNotEqual(res.returncode, 0)
        self.assertNotIn("was removed", res.stderr, "job1 exists: only its daemon is down")
        self.assertIn("no accelfs serves that directory: is the daemon running?", res.stderr)
        n.start()
        self.assertEqual(self.node.keyvals(*PROF, "job1", "status")["state"], "ready")
        podman("run", "--rm", *RUN, "--device", "accelfs.io/mig=job1", IMAGE, "true")

    def test_a_reclaimed_or_lost_job_is_refused_by_the_runtime(self):
        n = self.node
        os.mkdir(self.job("gone"))
        os.mkdir(self.job("lost"))
        os.rmdir(self.job("gone"))
        res = podman("run", "--rm", *RUN, "--device", "accelfs.io/mig=gone", IMAGE, "true", check=False)
        self.assertNotEqual(res.returncode, 0)
        self.assertIn("unresolvable CDI devices accelfs.io/mig=gone", res.stderr)
        st = n.keyvals(*PROF, "lost", "status")
        n.smi("ppu", "mig", "-i", 3, "-gi", st["gi"], "-ci", st["ci"], "-dci")
        n.smi("ppu", "mig", "-i", 3, "-gi", st["gi"], "-dgi")
        wait_until(lambda: n.keyvals(*PROF, "lost", "status")["state"] == "lost", what="the job to be lost")
        res = podman("run", "--rm", *RUN, "--device", "accelfs.io/mig=lost", IMAGE, "true", check=False)
        self.assertNotEqual(res.returncode, 0)
        self.assertIn("unresolvable CDI devices accelfs.io/mig=lost", res.stderr)

    def copy_job_spec(self, name):
        dst = f"/run/cdi/accelfs-job-{name}.json"
        shutil.copy(self.job(name, "cdi.json"), dst)
        self.copies.append(dst)

    def test_a_jobs_own_spec_stands_beside_the_node_spec_and_dies_with_the_job(self):
        os.mkdir(self.job("job1"))
        self.copy_job_spec("job1")
        # another kind: no conflict with the node spec's accelfs.io/mig=job1, in one container even
        both = self.accel_nodes(self.seen("--device", "accelfs.io/job=job1", "--device", "accelfs.io/mig=job1"))
        self.assertEqual({p: v[:2] for p, v in both.items()}, self.devices("job1"))
        self.assertEqual(self.accel_nodes(self.seen("--device", "accelfs.io/job=job1")), both)
        uuid = self.node.keyvals(*PROF, "job1", "status")["uuid"]
        os.rmdir(self.job("job1"))
        # the copy outlives the job, but what it names does not exist any more
        res = podman("run", "--rm", *RUN, "--device", "accelfs.io/job=job1", IMAGE, "true", check=False)
        self.assertNotEqual(res.returncode, 0)
        self.assertIn("failed to stat CDI host device", res.stderr)
        # a job made again under the name is another instance: the old copy's hook refuses it
        os.mkdir(self.job("job1"))
        self.assertNotEqual(self.node.keyvals(*PROF, "job1", "status")["uuid"], uuid)
        res = podman("run", "--rm", *RUN, "--device", "accelfs.io/job=job1", IMAGE, "true", check=False)
        self.assertNotEqual(res.returncode, 0)
        self.assertIn("was given an earlier job of that name", res.stderr)
        self.assertEqual(self.attached("job1"), [])

    def test_job_dev_as_devices_works_and_a_bind_mount_is_blocked_by_the_device_cgroup(self):
        os.mkdir(self.job("job1"))
        dev = self.job("job1", "dev")
        want = {p: (*mm, 0o660, 0, 0) for p, mm in self.devices("job1").items()}
        self.assertEqual(self.accel_nodes(self.seen("--device", f"{dev}:/dev")), want)
        cap = [p for p in want if "-caps/" in p][0]
        self.assertIn("No such device or address", self.open_in_container(cap, "--device", f"{dev}:/dev"))
        # bind-mounted, the nodes are there but the device cgroup does not admit them
        blocked = self.open_in_container("/dev/accel/" + cap[len("/dev/"):], "-v", f"{dev}:/dev/accel")
        self.assertIn("Operation not permitted", blocked)
        # podman resolves the directory itself, with no hook: such a container is not recorded
        self.start("bydir", "--device", f"{dev}:/dev")
        self.assertEqual(self.attached("job1"), [])


class Busy(PodmanTestCase):
    def test_a_container_given_a_job_keeps_it_until_it_is_gone(self):
        n = self.node
        os.mkdir(self.job("job1"))
        caps = sorted(p for p in self.devices("job1") if "-caps/" in p)
        # given by name, never opened: nothing holds the nodes, yet its device cgroup admits them
        ctr = self.start("idle", "--device", "accelfs.io/mig=job1")
        self.assertEqual(self.attached("job1"), [ctr])
        self.assertIn(f"container: {ctr} pid=", n.read(*PROF, "job1", "status"))
        self.assertIn(f"container={ctr} pid=", n.read(*PROF, "job1", "holders"))
        self.assertEqual(n.errno_of(os.rmdir, self.job("job1")), errno.EBUSY)
        self.assertIn(f"job1 is attached to 1 container: {ctr[:12]}", n.read(*PROF, "last_error"))
        podman("stop", "--time=0", "idle")
        wait_until(lambda: self.attached("job1") == [], what="the poststop hook to detach")
        os.rmdir(self.job("job1"))
        # why it matters: the next job on the card gets the same device numbers
        os.mkdir(self.job("job2"))
        self.assertEqual(sorted(p for p in self.devices("job2") if "-caps/" in p), caps)

    def test_a_container_gone_without_its_poststop_hook_is_cleared(self):
        n = self.node
        os.mkdir(self.job("job1"))
        self.start("lost", "--device", "accelfs.io/mig=job1")
        conmon, pid = (int(x) for x in podman("inspect", "--format", "{{.State.ConmonPid}} {{.State.Pid}}",
                                              "lost").stdout.split())
        # conmon first: then nobody runs the runtime's cleanup, and no poststop hook ever comes
        os.kill(conmon, 9)
        os.kill(pid, 9)
        wait_until(lambda: "has exited" in n.log(), timeout=10, what="the daemon to clear the attachment")
        self.assertEqual(self.attached("job1"), [])
        os.rmdir(self.job("job1"))

    def test_reclaim_when_detached_gives_the_job_back_when_the_container_goes(self):
        n = self.node
        os.mkdir(self.job("job1"))
        with open(self.job("job1", "reclaim"), "w") as f:
            f.write("when-detached\n")
        res = podman("run", "--rm", *RUN, "--device", "accelfs.io/mig=job1", IMAGE, "true", check=False)
        self.assertEqual(res.returncode, 0, res.stderr)
        wait_until(lambda: not os.path.exists(self.job("job1")), timeout=10, what="job1 to be reclaimed")
        self.assertEqual(n.available("ppu3", "4g.48gb"), 2)
        self.assertIn("job1: reclaimed (reclaim when-detached)", n.log())


if __name__ == "__main__":
    start = time.monotonic()
    try:
        unittest.main(verbosity=2)
    finally:
        print(f"integration-podman: {time.monotonic() - start:.1f} s", file=sys.stderr)
