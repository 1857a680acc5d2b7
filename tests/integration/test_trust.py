# SPDX-License-Identifier: MIT
"""Trustworthy under concurrency, driver faults and restarts.

Every test here drives the mounted daemon the way users and a bad day do (threads carving and
reclaiming at once, kill -9 at any moment, the driver failing any one call) and then holds the
tree against the driver with invariants.py.  Both families run.

Sizes come from the environment so that the sanitizer and valgrind runs can make them smaller:

  ACCELFS_STRESS_ROUNDS   rounds of the faults tests that repeat (default 4)
  ACCELFS_CRASH_ROUNDS    rounds of the crash storm: kill -9, SIGSEGV, SIGABRT in turn (default 30)
  ACCELFS_RESTART_BOUND   seconds a restart after a crash may take (default 10)
  ACCELFS_STRESS_OPS      operations per thread of the concurrency tests (default 150)
  ACCELFS_STRESS_STRIDE   fault sweeps try every STRIDE-th driver call (default 1: every call)
  ACCELFS_STRESS_SEED     the random seed (default: drawn, and printed so that a failure can be rerun)
"""
import errno
import os
import random
import signal
import subprocess
import sys
import threading
import time
import unittest

from harness import NVIDIA, THEAD, Node, NodeTestCase, topology_path, wait_until
from invariants import driver_view, format_problems, invariants, keyvals, settled, unowned
from bystanders import Bystanders
from trust_harness import (CRASH_ROUNDS, HANG_S, OPS, PPUS, RESTART_BOUND_S, ROUNDS, SEED, TrustCase, Workload, name,
                           report)


class Concurrency(TrustCase):
    """Threads carving and reclaiming at once: every answer must hold."""

    def run_workload(self, targets, threads, ops, rmdir_via_node=0.3):
        n = self.node
        wl = Workload(n, targets, threads=threads, rmdir_via_node=rmdir_via_node)
        t0 = time.monotonic()
        wl.run(ops)
        elapsed = time.monotonic() - t0
        problems, life = wl.analyze()
        if wl.hung:
            self.fail(report(problems))
        # after the run: the jobs the threads believe in exist, no other job of theirs does
        found = wl.jobs_in_tree()
        believed = {j: v for m in wl.mine for j, v in m.items()}
        for job, (dev, prof) in sorted(believed.items()):
            if job not in found:
                problems.append(f"after the run: {dev}/mig/{prof}/{job} (mkdir answered 0, never removed) is gone")
            elif found[job][2].get("state") != "ready":
                problems.append(f"after the run: {job} is {found[job][2].get('state')}")
        for job in sorted(set(found) - set(believed)):
            problems.append(f"after the run: {job} exists but its mkdir failed or its rmdir answered 0")
        # a failed mkdir leaves no instance: no GPU instance without a job (there is no orphan without faults)
        left = unowned(n)
        if left:
            problems.append(f"after the run: GPU instances no job claims (left by a failed mkdir or a reclaim?): {left}")
        problems += [f"invariants: {p}" for p in settled(n, timeout=3.0)]
        print(f"\n{self.id()}: {threads} threads x {ops} ops in {elapsed:.1f}s: {wl.counts()}", file=sys.stderr)
        self.assertEqual(problems, [], report(problems))
        # and everything goes back
        for job, (dev, prof) in sorted(believed.items()):
            os.rmdir(n.path(dev, "mig", prof, job))
        self.assertEqual(self.empty_everywhere(), [])
        self.assertInvariants(context="after removing every job")
        return wl

    def test_threads_carve_and_reclaim_on_several_cards_both_families(self):
        targets = [("ppu0", "4g.48gb"), ("ppu1", "4g.48gb"), ("ppu2", "4g.48gb"), ("ppu2", "8g.96gb"),
                   ("ppu3", "4g.48gb"), ("gpu0", "1g.18gb"), ("gpu0", "3g.71gb"), ("gpu0", "2g.35gb"),
                   (None, "4g.48gb"), (None, "1g.18gb"), (None, "3g.71gb")]
        self.run_workload(targets, threads=4, ops=max(10, OPS * 2 // 3))

    def test_threads_through_the_node_level_view_only(self):
        """The same through mig/<profile>/ alone (the node picks device and placement)."""
        targets = [(None, "4g.48gb"), (None, "8g.96gb"), (None, "1g.18gb"), (None, "3g.71gb")]
        self.run_workload(targets, threads=4, ops=OPS, rmdir_via_node=1.0)

    def test_bug1_four_threads_on_four_ppus_no_mkdir_answers_enoent(self):
        """Observed: 4 threads x 150 mkdir/rmdir on ppu0..ppu3, some mkdirs answered ENOENT."""
        self.run_workload([(d, THEAD["profile"]) for d in PPUS], threads=4, ops=OPS)


def d_state_threads(pid):
    """This process's (or pid's) threads blocked uninterruptibly in the kernel, with what they wait in."""
    stuck = []
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return stuck
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/stat") as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
            with open(f"/proc/{pid}/task/{tid}/wchan") as f:
                wchan = f.read().strip()
        except OSError:
            continue
        if state == "D":
            stuck.append(f"{pid}/{tid} in {wchan}")
    return stuck


def gone(pid):
    """The process has left /proc, or is a zombie with no thread left (not kill(pid, 0), which a zombie
    passes)."""
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{tid}/stat") as f:
                if f.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X"):
                    return False
    except OSError:
        pass  # it went while we looked
    return True


class HoldersReaders(TrustCase):
    """`holders` scans every process's descriptors.  Those open on the mount itself must never be asked
    of the daemon (a GETATTR from inside its own request threads): with enough readers at once every
    thread would wait for another, and the whole mount for good."""

    def test_many_holders_readers_while_files_of_the_mount_are_open(self):
        n = self.node
        # a process holding files of the mount open, whose attributes the churn below invalidates
        holder = subprocess.Popen(["sh", "-c", "exec 3<\"$1\" 4<\"$2\" 5<\"$3\"; exec sleep 1000", "sh",
                                   n.path("ppu0", "mig", "4g.48gb", "available"), n.path("ppu0", "info"),
                                   n.path("mig", "4g.48gb", "available")])
        try:
            wait_until(lambda: len(os.listdir(f"/proc/{holder.pid}/fd")) >= 6, what="the holder to open its files")
            self.read_holders_while_churning()
        finally:
            holder.kill()
            holder.wait()

    def read_holders_while_churning(self):
        n = self.node
        stop = threading.Event()
        errors = []

        def churn():
            k = 0
            while not stop.is_set():
                job = n.path("ppu0", "mig", "4g.48gb", f"h{k % 2}")
                k += 1
                for fn in (os.mkdir, os.rmdir):
                    try:
                        fn(job)
                    except OSError as e:
                        if e.errno not in (errno.ENOSPC, errno.EEXIST, errno.ENOENT):
                            errors.append(f"{fn.__name__}: {name(e.errno)}")

        def reader(i):
            for _ in range(40):
                try:
                    n.read(f"ppu{i % 4}", "holders")
                except OSError as e:
                    errors.append(f"holders: {name(e.errno)}")

        churner = threading.Thread(target=churn)
        churner.start()
        readers = [threading.Thread(target=reader, args=(i,)) for i in range(32)]
        for t in readers:
            t.start()
        for t in readers:
            t.join(timeout=HANG_S * 3)
        stop.set()
        churner.join(timeout=HANG_S)
        stuck = [t for t in readers + [churner] if t.is_alive()]
        self.assertEqual(stuck, [], f"readers of holders still waiting: {self.node.diagnose()}")
        self.assertEqual(errors, [])


def connection_without_mount(conn):
    """A FUSE connection that no mount of this machine stands on: a leaked one.
    Connection numbers are the device numbers of FUSE superblocks, and the
    kernel gives a freed number to the next FUSE mount: another test's mount
    on that number is not the dead daemon's connection."""
    if not os.path.exists(f"/sys/fs/fuse/connections/{conn}"):
        return False
    with open("/proc/self/mountinfo") as f:
        return not any(line.split()[2] == f"0:{conn}" for line in f)


class CrashStorm(TrustCase):
    """Threads carving, reclaiming, listing, reading, polling and attaching on several cards; the
    daemon killed at a random moment (kill -9, a SIGSEGV, a SIGABRT: a crash with its core dump path);
    restarted unattended.  Nothing answered is undone, nothing is left blocked, nobody has to free
    the mount by hand: every fourth round kills the daemon's guardian first, so that only the next
    daemon's takeover can free what the dying one wedged."""

    budget = 300 + CRASH_ROUNDS * 40

    def test_crashes_during_carves_reclaims_and_reads_then_restart(self):
        n = self.node
        rng = random.Random(SEED)
        targets = [("ppu0", "4g.48gb"), ("ppu1", "4g.48gb"), ("ppu2", "8g.96gb"), ("ppu3", "4g.48gb"),
                   ("gpu0", "1g.18gb"), ("gpu0", "3g.71gb"), (None, "4g.48gb"), (None, "1g.18gb")]
        wl = Workload(n, targets, threads=3, max_jobs=2, observe=True)
        by = Bystanders(n, targets)
        self.addCleanup(by.close)
        failures = []
        initial = {}
        # kill -9, the crashes, and kill -9 with the guardian gone too (only the takeover can help)
        kinds = [(signal.SIGKILL, True), (signal.SIGSEGV, True), (signal.SIGABRT, True), (signal.SIGKILL, False)]
        for rnd in range(CRASH_ROUNDS):
            wl.log = []
            wl.dead = by.dead = False
            started = time.monotonic()
            stop = threading.Event()
            kill = {}
            delay = rng.uniform(0.2, 1.2)
            sig, guarded = kinds[rnd % len(kinds)]
            problems = []
            others = by.threads(stop)
            for t in others:
                t.start()

            def restart():
                t0 = time.monotonic()
                n.start()
                kill["restart_s"] = time.monotonic() - t0

            def killer():
                time.sleep(delay)
                conn = n.conn
                kill["t"] = time.monotonic()
                kill["pid"] = pid = n.crash(sig, guarded)
                if guarded:
                    # the guardian aborts the connection: the daemon ends by itself, whatever it was doing
                    try:
                        wait_until(lambda: gone(pid), timeout=20, what=f"accelfs {pid} to end after {sig.name}")
                    except AssertionError as e:
                        problems.append(f"{e} (its guardian was alive): {d_state_threads(pid)}")
                else:
                    # nothing aborted it: the next daemon must take over, freeing callers still blocked
                    stop.set()
                    try:
                        wait_until(lambda: gone(pid), timeout=1, what="")
                    except AssertionError:
                        kill["wedged"] = d_state_threads(pid)
                    restart()
                    if kill.get("wedged") and "aborted the FUSE connection" not in n.log():
                        problems.append(f"accelfs {pid} was wedged ({kill['wedged']}), yet its successor's log "
                                        f"does not say it aborted its connection")
                kill["conn"] = conn
                stop.set()

            wl.run(100000, stop=stop, during=killer)
            for t in others:
                t.join(timeout=HANG_S)
            if wl.hung:
                self.fail(f"round {rnd}: " + report(problems + wl.analyze(initial=initial, kill_time=kill["t"])[0]))
            problems += [f"a bystander is still blocked after the restart" for t in others if t.is_alive()]
            kill_time = kill["t"]
            found_problems, life = wl.analyze(initial=initial, kill_time=kill_time)
            problems += [f"before the kill: {p}" for p in found_problems]
            if guarded:
                restart()
            if sig == signal.SIGSEGV:
                self.forget_own_segv_report(kill["pid"])
            if kill["restart_s"] > RESTART_BOUND_S:
                problems.append(f"the restart after {sig.name} took {kill['restart_s']:.1f}s (bound {RESTART_BOUND_S}s)")
            if not gone(kill["pid"]):
                problems.append(f"accelfs {kill['pid']} is still there after the restart: {d_state_threads(kill['pid'])}")
            stuck = d_state_threads("self")
            if stuck:
                problems.append(f"threads of the test still blocked in the kernel: {stuck}")
            if kill["conn"] != n.conn and connection_without_mount(kill["conn"]):
                problems.append(f"the dead daemon's FUSE connection {kill['conn']} is still there without its mount")
            if not os.path.isdir(n.path("mig")):
                self.fail(f"round {rnd}: after the restart the mount shows no tree: {os.listdir(n.mnt)}")
            problems += self.held_to_answers(wl, life, kill_time)
            problems += by.held_to()
            problems += [f"invariants: {p}" for p in settled(n, timeout=3.0)]
            found = wl.jobs_in_tree()
            wl.adopt(found)
            initial = {j: p for j, (_, p, _) in found.items()}
            wedged = f", wedged: {kill['wedged']}, taken over" if kill.get("wedged") else ""
            print(f"\nround {rnd}: {sig.name}{'' if guarded else ' (guardian killed first)'}{wedged} after {delay:.2f}s, "
                  f"restart {kill['restart_s']:.1f}s, {wl.counts()}, {len(found)} jobs survive; "
                  f"{time.monotonic() - started:.1f}s", file=sys.stderr)
            failures += [f"round {rnd} ({sig.name}{'' if guarded else ', unguarded'}): {p}" for p in problems]
        self.assertEqual(failures, [], report(failures))
        by.clear()
        for job, (dev, prof, _) in sorted(wl.jobs_in_tree().items()):
            os.rmdir(n.path(dev, "mig", prof, job))
        self.assertEqual(self.empty_everywhere(), [])
        self.assertInvariants(context="after removing every job")

    def test_a_daemon_wedged_by_its_own_mount_is_taken_over(self):
        """kill -9 while the notifier waits for a directory lock that a caller's mkdir holds: the
        daemon cannot finish dying.  With its guardian gone too, the next accelfs must see it is dead
        (not kill(pid, 0)), abort its connection, free the callers and take over, unattended."""
        n = self.node
        for attempt in range(12):
            stop = threading.Event()
            errors = []

            def churn(tid):
                rnd = random.Random(SEED + tid)
                while not stop.is_set():
                    base = n.path(f"ppu{rnd.randrange(4)}", "mig", "4g.48gb") if rnd.random() < 0.7 \
                        else n.path("mig", "4g.48gb")
                    job = os.path.join(base, f"w{tid}-{rnd.randrange(3)}")
                    for fn, arg in ((os.mkdir, job), (os.listdir, base), (os.rmdir, job)):
                        try:
                            fn(arg)
                        except OSError as e:
                            if e.errno in (errno.ENOTCONN, errno.ECONNABORTED):
                                errors.append(e.errno)
                                return

            threads = [threading.Thread(target=churn, args=(i,)) for i in range(6)]
            for t in threads:
                t.start()
            time.sleep(0.3 + 0.1 * attempt)
            conn = n.conn
            pid = n.crash(signal.SIGKILL, guarded=False)
            stop.set()
            try:
                wait_until(lambda: gone(pid), timeout=1, what="")
                wedged = None
            except AssertionError:
                wedged = d_state_threads(pid)
            t0 = time.monotonic()
            n.start()
            took = time.monotonic() - t0
            for t in threads:
                t.join(timeout=HANG_S)
            blocked = [t for t in threads if t.is_alive()]
            if not wedged:
                continue  # it died whole this time: the restart was an ordinary one; try again
            self.assertEqual(blocked, [], f"callers still blocked after the takeover of {wedged}")
            self.assertTrue(gone(pid), f"accelfs {pid} is still there after the takeover: {d_state_threads(pid)}")
            self.assertLessEqual(took, RESTART_BOUND_S)
            self.assertIn(f"accelfs pid {pid}", n.log())
            self.assertIn(f"aborted the FUSE connection {conn}", n.log())
            self.assertFalse(conn != n.conn and os.path.exists(f"/sys/fs/fuse/connections/{conn}"))
            self.assertEqual(d_state_threads("self"), [])
            for dev in PPUS:
                for job in os.listdir(n.path(dev, "mig", "4g.48gb")):
                    if job.startswith("w"):
                        os.rmdir(n.path(dev, "mig", "4g.48gb", job))
            self.assertInvariants(context="after the takeover")
            return
        self.skipTest("no kill in 12 wedged the daemon on this kernel: the takeover had nothing to free")

    def forget_own_segv_report(self, pid):
        """A daemon built with ASan or TSan reports the SIGSEGV this test sent it as a fault: that one
        report (and nothing else in the dead daemon's file) is the test's own doing, not the daemon's."""
        path = os.path.join(self.node.state, f"sanitizer.{pid}")
        try:
            with open(path) as f:
                text = f.read()
        except OSError:
            return
        segv = any(f"ERROR: {tool}: SEGV on unknown address" in text for tool in ("AddressSanitizer", "ThreadSanitizer"))
        if segv and text.count("ERROR: ") == 1 and "WARNING: ThreadSanitizer" not in text and "runtime error" not in text:
            os.unlink(path)

    def held_to_answers(self, wl, life, kill_time):
        """What the answers before the kill promise, right after the restart."""
        n = self.node
        problems = []
        found = wl.jobs_in_tree()
        for job, L in sorted(life.items()):
            here = found.get(job)
            state = here[2].get("state") if here else None
            answered = [e for e in wl.log if e.get("job") == job and e["kind"] in ("mkdir", "rmdir")]
            last = answered[-1] if answered else None
            if L["gone"] is not None:
                if here:
                    problems.append(f"{job}: rmdir answered 0, yet it is back after the restart ({state})")
            elif L["rm_t0"] is not None and last and last["kind"] == "rmdir":
                # its rmdir was cut by the kill (or failed): kept whole, or finished
                if here and state not in ("ready", "removing"):
                    problems.append(f"{job}: its rmdir was cut by the kill; after the restart it is {state}")
            elif L["born"] is not None:
                if not here:
                    problems.append(f"{job}: mkdir answered 0 (at {L['born']:.3f}, kill at {kill_time:.3f}), "
                                    f"gone after the restart")
                elif state != "ready":
                    problems.append(f"{job}: mkdir answered 0, after the restart it is {state}")
            elif L["failed"] is not None:
                if here:
                    problems.append(f"{job}: mkdir failed before the kill, yet it exists after the restart")
            elif here and state != "ready":
                problems.append(f"{job}: its mkdir was cut by the kill; after the restart it is {state}")
        # cut rmdirs are finished and orphans (carved, not recorded) reclaimed after the grace period
        try:
            wait_until(lambda: not unowned(n) and all(s.get("state") == "ready"
                                                      for _, _, s in wl.jobs_in_tree().values()),
                       timeout=3 * self.grace + 6, step=0.2, what="orphans reclaimed, removals finished")
        except AssertionError as e:
            problems.append(f"{e}: unowned {unowned(n)}, jobs "
                            f"{ {j: s.get('state') for j, (_, _, s) in wl.jobs_in_tree().items()} }")
        return problems


class TransientFaults(TrustCase):
    """Driver faults while the poller reads: a card's jobs stay in the tree throughout."""

    def make_jobs(self):
        n = self.node
        jobs = [("ppu0", "4g.48gb", "a0"), ("ppu1", "8g.96gb", "a1"), ("ppu2", "4g.48gb", "a2"),
                ("ppu2", "4g.48gb", "b2"), ("ppu3", "4g.48gb", "a3"), ("gpu0", "3g.71gb", "g0"),
                ("gpu0", "1g.18gb", "g1")]
        for d, p, j in jobs:
            n.mkdir(d, "mig", p, j)
        return jobs

    def watch(self, jobs, seconds, during=None):
        """Check every job's directories and mig/instances line over and over for `seconds` while
        `during()` runs; return what was missing, when."""
        n = self.node
        missing = []
        stop = threading.Event()

        def watcher():
            start = time.monotonic()
            while not stop.is_set():
                t = time.monotonic() - start
                for d, p, j in jobs:
                    if not os.path.isdir(n.path(d, "mig", p, j)):
                        missing.append(f"+{t:.2f}s: {d}/mig/{p}/{j} is missing")
                    if not os.path.isdir(n.path("mig", p, j)):
                        missing.append(f"+{t:.2f}s: mig/{p}/{j} is missing")
                    try:
                        inst = n.read(d, "mig", "instances")
                    except OSError as e:
                        missing.append(f"+{t:.2f}s: {d}/mig/instances: {name(e.errno)}")
                        continue
                    if f" job={j}" not in inst:
                        missing.append(f"+{t:.2f}s: {d}/mig/instances has no job={j}: {inst!r}")
                time.sleep(0.01)

        th = threading.Thread(target=watcher)
        th.start()
        try:
            if during:
                during()
            time.sleep(seconds)
        finally:
            stop.set()
            th.join()
        return missing

    def settle_ok(self):
        n = self.node
        wait_until(lambda: all(n.keyvals(d, "info")["state"] == "ok" for d in os.listdir(n.mnt)
                               if d.startswith(("ppu", "gpu"))), timeout=5, what="every card to be ok again")

    def test_transient_faults_while_polling_keep_jobs_visible(self):
        n = self.node
        jobs = self.make_jobs()
        # one failed call (retried), failures past the retries (the card refused for a pass), any call
        scenarios = [("DeviceGetMigMode", "UNKNOWN", 0, 1), ("DeviceGetMigMode", "UNKNOWN", 0, 3),
                     ("DeviceGetGpuInstances", "GPU_IS_LOST", 0, 4), ("GpuInstanceGetComputeInstances", "UNKNOWN", 1, 3),
                     ("*", "UNKNOWN", 7, 3), ("*", "GPU_IS_LOST", 30, 40)]
        problems = []
        for fam in ("ppu", "gpu"):
            for fn, code, skip, times in scenarios:
                ctx = f"{fam}: sim fault {fn} {code} --skip {skip} --times {times} while polling"
                missing = self.watch(jobs, 4 * self.poll + 0.2,
                                     during=lambda: self.fault(fam, fn, code, skip=skip, times=times))
                if not self.fired(fam):
                    problems.append(f"{ctx}: the fault never fired (the test tested nothing)")
                self.clear(fam)
                problems += [f"{ctx}: {m}" for m in missing[:5]]
                try:
                    self.settle_ok()
                except AssertionError as e:
                    problems.append(f"{ctx}: {e}")
                problems += [f"{ctx}: {p}" for p in settled(n, timeout=3)]
        self.assertEqual(problems, [], report(problems))

    def test_bug3_transient_fault_while_a_card_is_refused_keeps_its_jobs(self):
        """ppu2 holding a GPU instance subdivided by hand (which refuses nothing: only the driver's
        faults refuse it, for a pass), then every PPU refused by a failing driver, then a transient fault."""
        n = self.node
        jobs = self.make_jobs()
        os.rmdir(n.path("ppu2", "mig", "4g.48gb", "b2"))
        jobs = [j for j in jobs if j[2] != "b2"]
        n.smi("ppu", "mig", "-i", 2, "-cgi", 5)
        lines = wait_until(lambda: [l for l in n.read("ppu2", "mig", "instances").splitlines() if "job=-" in l],
                           what="hand-made GI to show")
        gi = dict(f.split("=", 1) for f in lines[0].split() if "=" in f)["gi"]
        ids = n.smi("ppu", "mig", "-i", 2, "-gi", gi, "-lcip", "--ids").stdout.split()
        small = sorted((int(s), int(i)) for i, s in (p.split(":") for p in ids))[0][1]
        n.smi("ppu", "mig", "-i", 2, "-gi", gi, "-cci", small)
        n.smi("ppu", "mig", "-i", 2, "-gi", gi, "-cci", small)
        wait_until(lambda: "subdivided" in n.read("ppu2", "mig", "instances"), what="the subdivided GI to show")
        if n.keyvals("ppu2", "info")["state"] != "ok":
            self.fail(f"ppu2 refused by a foreign subdivided GPU instance: {n.keyvals('ppu2', 'info')['state']}")
        problems = []
        for fn, code, skip, times in [("DeviceGetMigMode", "UNKNOWN", 0, 1), ("DeviceGetMigMode", "UNKNOWN", 0, 3),
                                      ("DeviceGetGpuInstances", "UNKNOWN", 0, 6), ("*", "GPU_IS_LOST", 5, 30)]:
            ctx = f"ppu2 subdivided, sim fault {fn} {code} --skip {skip} --times {times}"
            def during():
                self.fault("ppu", fn, code, skip=skip, times=times)
                # what refreshes the card outside the poller: a mkdir there, a node-level mkdir
                e1 = n.errno_of(os.mkdir, n.path("ppu2", "mig", "8g.96gb", "never"))
                if e1 not in (errno.ENOSPC, errno.EBUSY, errno.EIO):  # taken, or refused by the fault
                    problems.append(f"{ctx}: mkdir on ppu2 answered {name(e1)}")
                e2 = n.errno_of(os.mkdir, n.path("mig", "8g.96gb", "nl"))
                if e2 == 0:
                    o = n.errno_of(os.rmdir, n.path("mig", "8g.96gb", "nl"))
                    if o:
                        problems.append(f"{ctx}: rmdir mig/8g.96gb/nl answered {name(o)}")
                elif e2 not in (errno.ENOSPC, errno.EIO, errno.EBUSY):
                    problems.append(f"{ctx}: node-level mkdir answered {name(e2)}")

            missing = self.watch(jobs, 4 * self.poll + 0.2, during=during)
            if not self.fired("ppu"):
                problems.append(f"{ctx}: the fault never fired (the test tested nothing)")
            self.clear("ppu")
            problems += [f"{ctx}: {m}" for m in missing[:5]]
        # and a card refused by the driver itself (every read fails for a while), then a transient fault
        ctx = "every PPU refused by a failing driver"
        missing = self.watch(jobs, 6 * self.poll + 0.3,
                             during=lambda: self.fault("ppu", "DeviceGetGpuInstances", "UNKNOWN", skip=0, times=10000))
        problems += [f"{ctx}: {m}" for m in missing[:5]]
        if "refused" not in n.keyvals("ppu3", "info")["state"]:
            problems.append(f"{ctx}: ppu3 was not refused: {n.keyvals('ppu3', 'info')['state']}")
        elif "refused" not in n.keyvals("ppu3", "mig", "4g.48gb", "a3", "status"):
            problems.append(f"{ctx}: a3's status does not say its card is refused")
        self.clear("ppu")
        # every card managed again, nothing lost
        try:
            self.settle_ok()
        except AssertionError as e:
            problems.append(str(e))
        for d, p, j in jobs:
            if not os.path.isdir(n.path(d, "mig", p, j)):
                problems.append(f"after the faults: {d}/mig/{p}/{j} is gone")
        # the hand-made GI is foreign and kept; subdivided, even when the operator asks; once its compute
        # instances are gone, reclaimed as asked and the node is whole
        self.assertTrue(unowned(n), "a foreign GPU instance was destroyed unasked")
        cis = dict(f.split("=", 1) for f in [l for l in n.read("ppu2", "mig", "instances").splitlines()
                                            if l.startswith(f"gi={gi} ")][0].split() if "=" in f)["ci"].split(",")
        for ci in cis:
            n.smi("ppu", "mig", "-i", 2, "-gi", gi, "-ci", ci, "-dci")
        with open(n.path("ppu2", "mig", "foreign"), "w") as f:
            f.write("reclaim")
        try:
            wait_until(lambda: not unowned(n), timeout=3 * self.grace + 5, what="the hand-made GI reclaimed")
        except AssertionError as e:
            problems.append(str(e))
        problems += settled(n, timeout=3)
        self.assertEqual(problems, [], report(problems))

    def test_removing_job_is_never_an_orphan_and_the_poller_finishes_it(self):
        """GpuInstanceDestroy answers IN_USE for a while: the job stays 'removing', its GPU instance
        listed as its own through many poller passes and grace periods; then the poller finishes it."""
        for F, dev, prof in ((THEAD, "ppu1", THEAD["profile"]), (NVIDIA, "gpu0", NVIDIA["profile"])):
            with self.subTest(family=F["family"]):
                n, fam = self.node, F["family"]
                job = f"slow-{fam}"
                free = n.available(dev, prof)
                n.mkdir(dev, "mig", prof, job)
                gi = int(n.keyvals(dev, "mig", prof, job, "status")["gi"])
                self.fault(fam, "GpuInstanceDestroy", "IN_USE", skip=0, times=100000)
                err = n.errno_of(os.rmdir, n.path(dev, "mig", prof, job))
                try:
                    self.assertEqual(err, errno.EBUSY, name(err))
                    missing = self.watch([(dev, prof, job)], 2 * self.grace + 0.5)
                    self.assertEqual(missing[:5], [])
                    self.assertEqual(n.keyvals(dev, "mig", prof, job, "status").get("state"), "removing")
                    self.assertIn(gi, driver_view(n, [fam]).get(dev, {}),
                                  "the GPU instance was destroyed under the fault?")
                    self.assertNotIn("orphan", n.read(dev, "mig", "instances"))
                finally:
                    self.clear(fam)
                wait_until(lambda: not os.path.exists(n.path(dev, "mig", prof, job)), timeout=5,
                           what="the poller to finish the removal")
                wait_until(lambda: n.available(dev, prof) == free, timeout=3, what="capacity back")
                self.assertInvariants(context=f"{fam}: after the removal finished")


if __name__ == "__main__":
    unittest.main(verbosity=2)
