# SPDX-License-Identifier: MIT
"""Real Slurm jobs with --accel-mig on a simulated accelfs node (docs/slurm.md).

One cluster for the whole file (starting munged, slurmctld and slurmd costs seconds); every test
ends with the node settled: no job left, no slurm-* partition, Slurm's free count of every profile
equal to accelfs's `available`, and no drained node.
"""
import errno
import os
import pwd
import re
import signal
import time
import unittest

from accel_cluster import AccelCluster, wait_until

JOB_TIMEOUT = 60   # a job that is not released ends by itself after this many seconds
WAIT = 45          # bounded waits for Slurm to start, requeue or finish a job


class SlurmTest(unittest.TestCase):
    maxDiff = None

    @classmethod
    def setUpClass(cls):
        cls.env = AccelCluster()
        try:
            cls.env.start()
        except BaseException:
            logs = cls.env.logs() if cls.env.cluster else ""
            cls.env.cleanup()
            raise AssertionError(f"the cluster did not start{logs}{cls.env.final_reports}")
        cls.c = cls.env.cluster
        cls.node = cls.env.node

    @classmethod
    def tearDownClass(cls):
        cls.env.cleanup()
        # Nothing of ours may outlive the suite.
        leftovers = [p for p in (cls.env.sync,) if p and p.poll() is None]
        assert not leftovers, "accelfs-slurm-sync still running"
        # What the daemons' exits wrote (the sync's and accelfs's leak reports among it).
        assert not cls.env.final_reports, f"the sanitizers reported errors:\n{cls.env.final_reports}"

    def setUp(self):
        self.releases = []

    def tearDown(self):
        try:
            for r in self.releases:
                open(r, "w").close()
            self.c.run(["scancel", "--full", "--partition=test"], check=False)
            self.assert_settled()
        except AssertionError as e:
            logs = self.env.logs()
            self.recover()
            raise AssertionError(f"{e}{logs}{self.env.sanitizer_reports()}") from None
        # A sanitized build: the plugin in slurmd, its slurmstepds and the clients, the sync and the
        # daemon reported nothing during the test (sanitizer.py).
        reports = self.env.sanitizer_reports()
        self.assertEqual(reports, "", "the sanitizers reported errors")

    def recover(self):
        """After a failed test: cancel whatever is left and resume a drained node, so that one
        failure does not time out every test after it (the failure itself is still reported)."""
        try:
            for job in list(self.c.jobs()):
                self.c.run(["scancel", "--full", job], check=False)
            try:
                wait_until(lambda: not self.c.jobs(), WAIT, "every job to end")
            except AssertionError:
                pass
            state = self.c.node_state()
            if self.c.drain_reason() or any(s in state for s in ("DRAIN", "DOWN", "FAIL")):
                self.c.run(["scontrol", "update", f"nodename={self.c.host}", "state=resume"], check=False)
            if self.env.sync is None or self.env.sync.poll() is not None:
                self.env.start_sync()
        except Exception:
            pass

    # -- helpers --------------------------------------------------------------------------------
    def submit(self, accel, extra_script="", args=(), as_user=None):
        """sbatch a job that records its environment, then holds until released (or JOB_TIMEOUT);
        as_user (a passwd entry): submitted by that user."""
        rel = self.c.path("out", f"release-{len(self.releases)}-{time.monotonic_ns()}")
        self.releases.append(rel)
        # The environment is written whole before its name appears: wait_running waits for the name.
        script = (f"env > {self.c.path('out')}/env-$SLURM_JOB_ID.part && "
                  f"mv {self.c.path('out')}/env-$SLURM_JOB_ID.part {self.c.path('out')}/env-$SLURM_JOB_ID; "
                  f"{extra_script}\n"
                  f"for i in $(seq {JOB_TIMEOUT * 10}); do [ -e {rel} ] && exit 0; sleep 0.1; done")
        opt = [f"--accel-mig={accel}"] if accel else []
        pre = [] if not as_user else ["setpriv", f"--reuid={as_user.pw_uid}", f"--regid={as_user.pw_gid}",
                                      "--clear-groups"]
        res = self.c.run([*pre, "sbatch", "--parsable", *opt, *args, "-o", self.c.path("out", "%j.out"),
                          "--chdir=/tmp", "--wrap", script])
        return int(res.stdout.strip().split(";")[0]), rel

    def release(self, rel):
        open(rel, "w").close()

    def state(self, job):
        return self.c.job_field(job, "JobState")

    def wait_state(self, job, *states):
        return wait_until(lambda: self.state(job) in states, WAIT,
                          f"job {job} to be {'/'.join(states)} (is {self.state(job)}){self.env.logs()}")

    def wait_running(self, job):
        self.wait_state(job, "RUNNING")
        # Running in Slurm's eyes once the prolog is done; the batch script writes its env first.
        wait_until(lambda: os.path.exists(self.c.path("out", f"env-{job}")), WAIT, f"job {job}'s script")

    def job_env(self, job):
        out = {}
        with open(self.c.path("out", f"env-{job}")) as f:
            for line in f:
                k, _, v = line.rstrip("\n").partition("=")
                out[k] = v
        return out

    def partitions(self):
        """{name: profile} of every slurm-* partition on the node."""
        out = {}
        for profile in os.listdir(self.node.path("mig")):
            for name in os.listdir(self.node.path("mig", profile)):
                if name.startswith("slurm-"):
                    out[name] = profile
        return out

    def partitions_of(self, job):
        return {n: p for n, p in self.partitions().items() if n.startswith(f"slurm-{job}-")}

    def available(self):
        return {p: int(self.node.read("mig", p, "available")) for p in os.listdir(self.node.path("mig"))}

    def counts_match(self):
        total, used = self.c.slurm_gres()
        avail = self.available()
        free = {p: total.get(p, 0) - used.get(p, 0) for p in avail}
        # The reserve keeps the total where slurmd first registered it.
        if sum(total.values()) != 2 * sum(self.env.capacity.values()):
            return False, total, "a total of " + str(2 * sum(self.env.capacity.values()))
        return free == avail, free, avail

    def assert_counts_match(self):
        try:
            wait_until(lambda: self.counts_match()[0], 10, "Slurm's free counts to equal available")
        except AssertionError:
            ok, free, avail = self.counts_match()
            self.assertEqual(free, avail, "Slurm's free count per profile vs accelfs's available")

    def assert_owned_by_live_jobs(self):
        for name, profile in self.partitions().items():
            job = int(name.split("-")[1])
            st = self.state(job)
            self.assertIn(st, ("RUNNING", "CONFIGURING", "COMPLETING"),
                          f"{profile}/{name} belongs to job {job}, which is {st}")

    def assert_no_drain(self):
        self.assertEqual(self.c.drain_reason(), "", "sinfo -R lists a node")
        state = self.c.node_state()
        self.assertFalse(any(s in state for s in ("DRAIN", "DOWN", "FAIL")), f"node state {state}")

    def assert_invariants(self):
        self.assert_owned_by_live_jobs()
        self.assert_counts_match()
        self.assert_no_drain()

    def assert_settled(self):
        wait_until(lambda: not self.c.jobs(), WAIT, f"every job to end (left: {self.c.jobs()})")
        wait_until(lambda: not self.partitions(), WAIT, f"every slurm-* partition to go (left: {self.partitions()})")
        self.assert_counts_match()
        self.assert_no_drain()

    def comment(self):
        """The node's comment in Slurm, where accelfs-slurm-sync names the cards that take no job."""
        res = self.c.run(["sinfo", "-h", "-N", "-n", self.c.host, "-O", "Comment:1000"], check=False)
        text = res.stdout.strip()
        return "" if text == "(null)" else text

    def slurm_free(self, profile):
        total, used = self.c.slurm_gres()
        return total.get(profile, 0) - used.get(profile, 0)

    def job_output(self, job):
        try:
            with open(self.c.path("out", f"{job}.out")) as f:
                return f.read()
        except OSError:
            return ""

    def uuid(self, profile, name):
        return self.node.keyvals("mig", profile, name, "status")["uuid"]

    # -- tests ------------------------------------------------------------------------------------
    def test_sbatch_carves_hands_uuids_and_reclaims(self):
        job, rel = self.submit("4g.48gb")
        self.wait_running(job)
        self.assertEqual(self.partitions_of(job), {f"slurm-{job}-0": "4g.48gb"})
        uuid = self.uuid("4g.48gb", f"slurm-{job}-0")
        env = self.job_env(job)
        self.assertEqual(env.get("CUDA_VISIBLE_DEVICES"), uuid)
        self.assertEqual(env.get("PPU_VISIBLE_DEVICES"), uuid)
        self.assertNotIn("NVIDIA_VISIBLE_DEVICES", env)
        self.assertEqual(env.get("ACCELFS_MIG_JOBS"), self.node.path("mig", "4g.48gb", f"slurm-{job}-0"))
        # The carve shows in Slurm at once: 4g.48gb has one left, 8g.96gb (same slices) none.
        self.assert_invariants()
        total, used = self.c.slurm_gres()
        self.assertEqual(total["8g.96gb"] - used.get("8g.96gb", 0), 0)
        self.release(rel)
        self.wait_state(job, "COMPLETED")

    def test_srun_on_a_chosen_device(self):
        res = self.c.run(["srun", "--accel-mig=gpu0/1g.18gb:2", "sh", "-c",
                          'echo "CVD=$CUDA_VISIBLE_DEVICES"; echo "NVD=$NVIDIA_VISIBLE_DEVICES"; '
                          'for d in $(echo "$ACCELFS_MIG_JOBS" | tr , " "); do grep -E "^(uuid|device):" $d/status; done'],
                         timeout=WAIT)
        lines = res.stdout.splitlines()
        cvd = [l for l in lines if l.startswith("CVD=")][0][4:].split(",")
        uuids = [l.split(": ")[1] for l in lines if l.startswith("uuid:")]
        devices = {l.split(": ")[1] for l in lines if l.startswith("device:")}
        self.assertEqual(len(cvd), 2, res.stdout)
        self.assertEqual(cvd, uuids)
        self.assertEqual(devices, {"gpu0"})
        self.assertIn(f"NVD={','.join(cvd)}", lines)

    def test_jobs_across_profiles_that_share_slices(self):
        whole_ppu, rel_a = self.submit("8g.96gb")
        self.wait_running(whole_ppu)
        half_ppu, rel_b = self.submit("4g.48gb")          # shares the PPU's slices: waits
        two_3g, rel_c = self.submit("3g.71gb:2")          # fills the H200
        self.wait_running(two_3g)
        whole_gpu, rel_d = self.submit("7g.141gb")        # waits for the H200
        small, rel_e = self.submit("ppu0/4g.48gb", args=["--begin=now+3600"])  # held: never started here
        time.sleep(2)  # several scheduling passes
        for job in (half_ppu, whole_gpu):
            self.assertEqual(self.state(job), "PENDING")
            self.assertEqual(self.partitions_of(job), {})
        self.assertEqual(len(self.partitions_of(two_3g)), 2)
        self.assert_invariants()
        avail = self.available()
        self.assertEqual((avail["4g.48gb"], avail["1g.18gb"], avail["7g.141gb"]), (0, 0, 0))
        self.release(rel_a)
        self.release(rel_c)
        self.wait_running(half_ppu)
        self.wait_running(whole_gpu)
        self.assert_invariants()
        for job in (whole_ppu, two_3g):
            self.assertEqual(self.partitions_of(job), {})
        self.release(rel_b)
        self.release(rel_d)
        self.c.run(["scancel", str(small)])

    def test_more_than_fits_waits_and_the_node_stays_up(self):
        big, rel_a = self.submit("8g.96gb")
        self.wait_running(big)
        waiting, rel_b = self.submit("4g.48gb:2")
        time.sleep(2)
        self.assertEqual(self.state(waiting), "PENDING")
        self.assertNotIn("launch failed", self.c.job_field(waiting, "Reason") or "")
        self.assert_invariants()
        # More than the node could ever carve is refused at submission, with nothing carved.
        res = self.c.run(["sbatch", "--accel-mig=4g.48gb:3", "--wrap", "true"], check=False)
        self.assertNotEqual(res.returncode, 0)
        self.assertIn("Requested node configuration is not available", res.stderr)
        self.release(rel_a)
        self.wait_running(waiting)
        self.assertEqual(len(self.partitions_of(waiting)), 2)
        self.assert_invariants()

    def test_scancel_mid_job(self):
        job, _ = self.submit("2g.35gb:2,1g.35gb")
        self.wait_running(job)
        self.assertEqual(sorted(self.partitions_of(job).values()), ["1g.35gb", "2g.35gb", "2g.35gb"])
        self.assert_invariants()
        self.c.run(["scancel", str(job)])
        self.wait_state(job, "CANCELLED")
        wait_until(lambda: not self.partitions_of(job), WAIT, "the cancelled job's partitions to go")

    def test_slurmd_killed_during_a_job(self):
        job, rel = self.submit("4g.71gb")
        self.wait_running(job)
        self.c.kill9("slurmd")
        self.c.start_slurmd()  # registers gres.conf's counts; accelfs-slurm-sync puts the true ones back
        self.assertEqual(self.state(job), "RUNNING")
        self.assertEqual(len(self.partitions_of(job)), 1)
        self.assert_invariants()
        self.release(rel)
        self.wait_state(job, "COMPLETED")

    def test_node_crash_partitions_of_dead_jobs_are_reclaimed(self):
        job, _ = self.submit("1g.18gb:2")
        self.wait_running(job)
        # The node "crashes": slurmd and the job's step daemons die without an epilog.
        self.c.kill9("slurmd")
        stepds = self.c.stepds()
        self.assertTrue(stepds, "no step daemon for the running job")
        for pid in stepds:
            os.kill(pid, signal.SIGKILL)
        self.c.run(["scancel", str(job)])
        self.c.start_slurmd()
        wait_until(lambda: not self.partitions_of(job), WAIT, "the dead job's partitions to be given back")
        # A partition named for a job Slurm never heard of goes too; any other name stays.
        os.mkdir(self.node.path("mig", "1g.18gb", "slurm-999999-0"))
        os.mkdir(self.node.path("mig", "1g.18gb", "notebook"))
        try:
            wait_until(lambda: "slurm-999999-0" not in self.partitions(), 10, "slurm-999999-0 to be given back")
            time.sleep(1)
            self.assertTrue(os.path.isdir(self.node.path("mig", "1g.18gb", "notebook")))
            self.assert_counts_match()  # the hand-made partition counts against Slurm too
            self.assertEqual(self.c.slurm_gres()[0]["1g.18gb"], 6)
        finally:
            os.rmdir(self.node.path("mig", "1g.18gb", "notebook"))

    def test_another_jobs_device_nodes_are_refused(self):
        owner, rel_a = self.submit("4g.48gb")
        self.wait_running(owner)
        theirs = [line.split()[0] for line in self.node.read("mig", "4g.48gb", f"slurm-{owner}-0", "devices").splitlines()]
        cap = [p for p in theirs if "caps" in p][0]
        their_node = self.node.path("mig", "4g.48gb", f"slurm-{owner}-0", "dev", cap[len("/dev/"):])
        probe = ("import os, errno, sys\n"
                 "def try_open(p):\n"
                 "    try:\n"
                 "        os.close(os.open(p, os.O_RDONLY)); return 'ok'\n"
                 "    except OSError as e:\n"
                 "        return errno.errorcode[e.errno]\n"
                 "for p in sys.argv[1:]: print(p, try_open(p))\n")
        with open(self.c.path("out", "probe.py"), "w") as f:
            f.write(probe)
        mine = "$(ls -d $ACCELFS_MIG_JOBS/dev/nvidia-caps/* | tail -1)"
        other, rel_b = self.submit("1g.18gb", extra_script=(
            f"python3 {self.c.path('out', 'probe.py')} {their_node} {mine} /dev/null "
            f"> {self.c.path('out')}/p-$SLURM_JOB_ID && mv {self.c.path('out')}/p-$SLURM_JOB_ID {self.c.path('out')}/probe-$SLURM_JOB_ID"))
        plain, rel_c = self.submit(None, extra_script=(
            f"python3 {self.c.path('out', 'probe.py')} {their_node} /dev/null "
            f"> {self.c.path('out')}/p-$SLURM_JOB_ID && mv {self.c.path('out')}/p-$SLURM_JOB_ID {self.c.path('out')}/probe-$SLURM_JOB_ID"))
        for job in (other, plain):
            self.wait_running(job)
            wait_until(lambda: os.path.exists(self.c.path("out", f"probe-{job}")), WAIT, "the probe")
        with open(self.c.path("out", f"probe-{other}")) as f:
            res = dict(line.rsplit(" ", 1) for line in f.read().splitlines())
        self.assertEqual(res[their_node], "EPERM", res)              # the device cgroup refuses it
        self.assertEqual(res["/dev/null"], "ok", res)
        own = [v for k, v in res.items() if "nvidia-cap" in k]
        self.assertEqual(own, ["ENXIO"], res)                         # allowed; no driver behind it here
        with open(self.c.path("out", f"probe-{plain}")) as f:
            res = dict(line.rsplit(" ", 1) for line in f.read().splitlines())
        self.assertEqual(res, {their_node: "EPERM", "/dev/null": "ok"})
        # The node itself can open it: the refusal is the job's cgroup, not the node.
        with self.assertRaises(OSError) as cm:
            os.open(their_node, os.O_RDONLY)
        self.assertEqual(cm.exception.errno, errno.ENXIO)

    def test_race_for_the_last_placement_requeues_the_loser(self):
        # Slurm is told there is room (the sync is stopped) while a hand-made partition takes it.
        self.env.stop_sync()
        os.mkdir(self.node.path("mig", "4g.48gb", "notebook"))
        try:
            job, rel = self.submit("8g.96gb")
            wait_until(lambda: (self.c.job_field(job, "Restarts") or "0") != "0", WAIT, "the job to be requeued")
            self.wait_state(job, "PENDING")  # COMPLETING while its epilog runs, then PENDING
            self.assertIn("no device has a free placement for 8g.96gb", self.c.job_field(job, "AdminComment") or "")
            self.assertEqual(self.partitions_of(job), {})
            self.assert_no_drain()
        finally:
            self.env.start_sync()
            os.rmdir(self.node.path("mig", "4g.48gb", "notebook"))
        self.assert_counts_match()
        # Slurm holds a requeued job back for a while (its credential expiry window); once it may
        # start, it fits and runs.  Let it go early, but not within the second its old credential
        # was revoked in: slurmd compares in whole seconds and would drop the new batch launch as
        # "already killed", leaving the job RUNNING with no script.  The update is repeated because
        # slurmctld's schedulers also compare update times in whole seconds and may skip an update
        # made in the same second as their last pass (sched_interval is 60 s).
        time.sleep(2)
        def let_go():
            if self.state(job) == "PENDING":
                self.c.run(["scontrol", "update", f"jobid={job}", "StartTime=now"])
                time.sleep(1.5)
            return self.state(job) != "PENDING"
        wait_until(let_go, WAIT, f"job {job} to leave PENDING after StartTime=now{self.env.logs()}")
        self.wait_running(job)
        self.assertEqual(len(self.partitions_of(job)), 1)
        self.release(rel)
        self.wait_state(job, "COMPLETED")

    def test_quota_charges_the_jobs_user_and_refuses_over_it(self):
        # The partitions of a job are its user's (owner: in status) and count against the user's
        # quota; a batch job over it is refused (EDQUOT) and fails with the quota's sentence, not
        # requeued again and again; the node is not drained.
        user = pwd.getpwnam("daemon")
        quota = self.node.path("quota")
        os.chmod(self.c.path("out"), 0o1777)  # the user's job writes its environment there
        with open(quota, "w") as f:
            f.write(f"user:{user.pw_uid} slices=4 jobs=1\n")
        try:
            first, rel = self.submit("4g.48gb", as_user=user)
            self.wait_running(first)
            st = self.node.keyvals("mig", "4g.48gb", f"slurm-{first}-0", "status")
            self.assertEqual(st["owner"], f"{user.pw_uid}:{user.pw_gid}")
            self.assertEqual(self.node.read("quota"), f"user:{user.pw_uid} slices=4/4 jobs=1/1\n")
            self.env.stop_sync()  # Slurm is told there is room: only the quota says no
            second, rel2 = self.submit("4g.48gb", as_user=user)
            self.wait_state(second, "FAILED")
            self.assertEqual(self.c.job_field(second, "Restarts"), "0")
            sentence = f"quota exceeded: user:{user.pw_uid} uses slices=4 of 4"
            self.assertIn(sentence, self.c.job_field(second, "AdminComment") or "")
            self.assertIn(sentence, self.job_output(second))       # the user reads why in the job's output
            self.assertFalse(os.path.exists(self.c.path("out", f"env-{second}")), "the script ran")
            self.assertEqual(self.partitions_of(second), {})
            self.assertEqual(self.node.read("quota"), f"user:{user.pw_uid} slices=4/4 jobs=1/1\n")
            self.assert_no_drain()
            self.release(rel)
            self.wait_state(first, "COMPLETED")
            wait_until(lambda: self.node.read("quota") == f"user:{user.pw_uid} slices=0/4 jobs=0/1\n", WAIT,
                       "the user's use to fall back to 0")
        finally:
            self.env.start_sync()
            with open(quota, "w") as f:
                f.write("")

    def test_a_cordoned_card_gives_slurm_nothing_and_the_node_says_why(self):
        cordon = self.node.path("gpu0", "mig", "cordon")
        with open(cordon, "w") as f:
            f.write("1\n")
        try:
            # The H200's profiles are gpu0's alone: Slurm may place none of them while it is cordoned.
            wait_until(lambda: self.slurm_free("7g.141gb") == 0 and self.slurm_free("1g.18gb") == 0, WAIT,
                       f"Slurm's 7g.141gb and 1g.18gb to go to 0 (comment {self.comment()!r}){self.env.logs()}")
            wait_until(lambda: self.comment().startswith("accelfs: gpu0 cordoned"), WAIT,
                       f"the node's comment to name gpu0 (is {self.comment()!r})")
            self.assertEqual(self.slurm_free("4g.48gb"), self.available()["4g.48gb"])  # the PPU is untouched
            self.assert_no_drain()  # the node itself still takes jobs
            job, rel = self.submit("7g.141gb")
            time.sleep(2)  # several scheduling passes
            self.assertEqual(self.state(job), "PENDING")  # waits: not started, not requeued
            self.assertEqual(self.c.job_field(job, "Restarts"), "0")
            self.assertEqual(self.partitions_of(job), {})
        finally:
            with open(cordon, "w") as f:
                f.write("0\n")
        self.wait_running(job)
        wait_until(lambda: self.comment() == "", WAIT, f"the comment to clear (is {self.comment()!r})")
        self.release(rel)
        self.wait_state(job, "COMPLETED")

    def test_the_end_of_a_job_records_what_its_partition_used(self):
        job, rel = self.submit("3g.71gb")
        self.wait_running(job)
        name = f"slurm-{job}-0"
        gi = self.node.keyvals("mig", "3g.71gb", name, "status")["gi"]
        self.node.smi("gpu", "sim", "usage", "-i", 0, "-gi", gi, "--sm", 50, "--memory", 1 << 30)
        # A site's note set while the job runs stays, before the record.
        self.c.run(["scontrol", "update", f"job={job}", "AdminComment=site note"])
        self.release(rel)
        self.wait_state(job, "COMPLETED")
        # The batch step's end read the partition's utilization: the mean is over the job's life
        # (idle until the usage was set), the peak the highest window's, the memory its most.
        wait_until(lambda: "accelfs usage:" in (self.c.job_field(job, "AdminComment") or ""), WAIT,
                   f"job {job}'s AdminComment (is {self.c.job_field(job, 'AdminComment')!r}){self.env.logs()}")
        # Each entry is named on its node (slurm-<job>-0 is on every node of a job): this node's name.
        self.assertRegex(self.c.job_field(job, "AdminComment") or "",
                         rf"^site note; accelfs usage: {self.c.host}/{name} sm_mean=\d+\.\d% sm_peak=\d+\.\d% "
                         rf"mem_peak={1 << 30} energy_estimate=\d+\.\d+J$")
        self.assert_invariants()

    def test_sacct_shows_what_a_jobs_partition_used_and_a_cpu_only_job_nothing(self):
        if self.env.no_accounting:
            self.skipTest(self.env.no_accounting)
        job, rel = self.submit("1g.18gb")
        plain, rel_plain = self.submit(None)
        self.wait_running(job)
        self.wait_running(plain)
        gi = self.node.keyvals("mig", "1g.18gb", f"slurm-{job}-0", "status")["gi"]
        self.node.smi("gpu", "sim", "usage", "-i", 0, "-gi", gi, "--sm", 30, "--memory", 2 << 30)
        self.release(rel)
        self.release(rel_plain)
        # slurmctld sends the job's end to slurmdbd with the AdminComment it holds then: the batch
        # step's end set it before the job completed, so the first COMPLETED record carries it.
        for j in (job, plain):
            wait_until(lambda: self.c.accounting.record(j).get("State") == "COMPLETED", WAIT,
                       f"sacct to show job {j} COMPLETED (is {self.c.accounting.record(j)}){self.env.logs()}")
        self.assertRegex(self.c.accounting.record(job)["AdminComment"],
                         rf"^accelfs usage: {self.c.host}/slurm-{job}-0 sm_mean=\d+\.\d% sm_peak=\d+\.\d% "
                         rf"mem_peak={2 << 30} energy_estimate=\d+\.\d+J$")
        # What the user types (docs/slurm.md): the same line alone.
        res = self.c.run(["sacct", "-j", str(job), "-X", "-n", "-P", "-o", "AdminComment"])
        self.assertEqual(res.stdout.strip(), self.c.accounting.record(job)["AdminComment"])
        self.assertEqual(self.c.accounting.record(plain)["AdminComment"], "")

    def test_sacct_has_the_record_of_a_job_slurm_ended_itself(self):
        # scancel (or a time limit) ends the job in slurmctld before its batch step ends: slurmctld
        # then refuses the comment, and the step's end writes slurmdbd's copy instead.
        if self.env.no_accounting:
            self.skipTest(self.env.no_accounting)
        job, _ = self.submit("1g.18gb")
        self.wait_running(job)
        gi = self.node.keyvals("mig", "1g.18gb", f"slurm-{job}-0", "status")["gi"]
        self.node.smi("gpu", "sim", "usage", "-i", 0, "-gi", gi, "--sm", 70, "--memory", 3 << 30)
        # A site's note stays before the record; slurmctld's record of the end carries it and must
        # not overwrite the record.  slurmdbd takes the record's text into its SQL unescaped, so the
        # quote arrives as sacctmgr would send it.
        self.c.run(["scontrol", "update", f"job={job}", "AdminComment=site's note"])
        self.c.run(["scancel", str(job)])
        self.wait_state(job, "CANCELLED")
        wait_until(lambda: "accelfs usage:" in self.c.accounting.record(job).get("AdminComment", ""), WAIT,
                   f"sacct to show job {job}'s record (is {self.c.accounting.record(job)}){self.env.logs()}")
        rec = self.c.accounting.record(job)
        self.assertTrue(rec["State"].startswith("CANCELLED"), rec)
        self.assertRegex(rec["AdminComment"],
                         rf"^site`s note; accelfs usage: {self.c.host}/slurm-{job}-0 sm_mean=\d+\.\d% "
                         rf"sm_peak=\d+\.\d% mem_peak={3 << 30} energy_estimate=\d+\.\d+J$")
        # slurmctld's copy stays without it: Slurm refuses any change to a job that has finished.
        self.assertEqual(self.c.job_field(job, "AdminComment"), "site's note")

    def test_sacct_keeps_each_array_tasks_record_its_own(self):
        # slurmdbd takes a bare job id for an array's as well: the task whose id is the array's must
        # not write its record into its siblings'.  Both are cancelled: slurmdbd's copy is written.
        if self.env.no_accounting:
            self.skipTest(self.env.no_accounting)
        array, _ = self.submit("1g.18gb", args=["--array=0-1"])

        def tasks():
            out = self.c.run(["scontrol", "-o", "show", "job", str(array)], check=False).stdout
            ids = sorted(int(j) for j in re.findall(r"\bJobId=(\d+) ", out))
            return ids if len(ids) == 2 else None
        ids = wait_until(tasks, WAIT, f"array {array}'s two tasks")
        self.assertIn(array, ids)
        for t in ids:
            self.wait_running(t)
        self.c.run(["scancel", str(array)])
        for t in ids:
            wait_until(lambda: "accelfs usage:" in self.c.accounting.record(t).get("AdminComment", ""), WAIT,
                       f"sacct to show task {t}'s record (is {self.c.accounting.record(t)}){self.env.logs()}")
            self.assertRegex(self.c.accounting.record(t)["AdminComment"],
                             rf"^accelfs usage: {self.c.host}/slurm-{t}-0 sm_mean=[^;]*$")

    def test_a_failed_card_gives_slurm_nothing_and_the_node_says_why(self):
        self.node.smi("gpu", "sim", "xid", "-i", "0", "--action", "reset", "48")
        try:
            wait_until(lambda: self.slurm_free("7g.141gb") == 0, WAIT, f"Slurm's 7g.141gb to go to 0{self.env.logs()}")
            # admits.why is accelfs's sentence (mkdir's last_error); it names the Xid either way.
            wait_until(lambda: self.comment().startswith("accelfs: gpu0 failed") and "Xid 48" in self.comment(),
                       WAIT, f"the node's comment to name gpu0's failure (is {self.comment()!r})")
            self.assert_no_drain()
        finally:
            self.node.smi("gpu", "sim", "recover", "-i", "0")
        wait_until(lambda: self.comment() == "", WAIT, f"the comment to clear (is {self.comment()!r})")
        self.assert_counts_match()

    def test_accelfs_down_stops_only_jobs_that_ask_for_partitions(self):
        # A CPU-only job's tasks are kept from the accelerators by the majors the host's drivers
        # name (here the simulated drivers' proc/devices): nothing is asked of accelfs.
        sim_node = os.path.join(self.node.state, "sim", "nvidia", "dev", "nvidia0")
        probe = (f"python3 -c 'import os,sys\nfor p in sys.argv[1:]:\n"
                 f"    try: os.close(os.open(p, os.O_RDONLY)); print(p, \"ok\")\n"
                 f"    except OSError as e: print(p, os.strerror(e.errno))' {sim_node} /dev/null")
        self.env.stop_sync()
        self.node.stop()
        try:
            plain = self.c.run(["sbatch", "--parsable", "-o", self.c.path("out", "%j.out"), "--chdir=/tmp",
                                "--wrap", probe]).stdout.strip()
            self.wait_state(plain, "COMPLETED")
            out = self.job_output(plain)
            self.assertIn(f"{sim_node} Operation not permitted", out)
            self.assertIn("/dev/null ok", out)
            asking, _ = self.submit("1g.18gb")
            wait_until(lambda: (self.c.job_field(asking, "Restarts") or "0") != "0", WAIT,
                       f"the job asking for a partition to be requeued{self.env.logs()}")
            self.assertIn("No such file or directory", self.c.job_field(asking, "AdminComment") or "")
            self.c.run(["scancel", str(asking)])
            self.assert_no_drain()
        finally:
            self.node.start()
            self.env.start_sync()

    def test_bad_option_is_refused_where_it_is_typed(self):
        res = self.c.run(["sbatch", "--accel-mig=4g.48gb:zero", "--wrap", "true"], check=False)
        self.assertNotEqual(res.returncode, 0)
        self.assertIn("bad count 'zero'", res.stderr)
        res = self.c.run(["srun", "--accel-mig=../4g.48gb", "true"], check=False, timeout=WAIT)
        self.assertNotEqual(res.returncode, 0)
        self.assertIn("accelfs", res.stderr)


if __name__ == "__main__":
    unittest.main()
