# SPDX-License-Identifier: MIT
"""Trustworthy under concurrency, driver faults and restarts.

Every test here drives the mounted daemon the way users and a bad day do (threads carving and
reclaiming at once, kill -9 at any moment, the driver failing any one call) and then holds the
tree against the driver with invariants.py.  Both families run.

Sizes come from the environment so that the sanitizer and valgrind runs can make them smaller:

  ACCELFS_STRESS_ROUNDS   kill -9 rounds of the crash storm (default 4)
  ACCELFS_STRESS_OPS      operations per thread of the concurrency tests (default 150)
  ACCELFS_STRESS_STRIDE   fault sweeps try every STRIDE-th driver call (default 1: every call)
  ACCELFS_STRESS_SEED     the random seed (default: drawn, and printed so that a failure can be rerun)
"""
import errno
import math
import os
import random
import shutil
import signal
import subprocess
import sys
import threading
import time
import unittest

from harness import NVIDIA, THEAD, Node, NodeTestCase, topology_path, wait_until
from invariants import driver_view, format_problems, invariants, keyvals, settled, unowned



def _sanitized(path):
    """Is the daemon built with ASan (several times slower)?  Then the defaults are smaller."""
    try:
        with open(shutil.which(path) or path, "rb") as f:
            return b"__asan_init" in f.read()
    except (OSError, TypeError):
        return False


SANITIZED = _sanitized(os.environ.get("ACCELFS", "accelfs"))
ROUNDS = max(1, int(os.environ.get("ACCELFS_STRESS_ROUNDS", "3" if SANITIZED else "4")))
OPS = max(1, int(os.environ.get("ACCELFS_STRESS_OPS", "80" if SANITIZED else "150")))
STRIDE = max(1, int(os.environ.get("ACCELFS_STRESS_STRIDE", "1")))
SEED = int(os.environ.get("ACCELFS_STRESS_SEED", str(random.randrange(1 << 30))))
print(f"test_trust: ACCELFS_STRESS_SEED={SEED} ROUNDS={ROUNDS} OPS={OPS} STRIDE={STRIDE}"
      f"{' (sanitized daemon: smaller defaults)' if SANITIZED else ''}", file=sys.stderr)

TOPOLOGY = topology_path("trust.json")  # ppu0..ppu3 and gpu0
PPUS = [f"ppu{i}" for i in range(4)]
MAX_REPORTED = 40
HANG_S = 20       # no answer to any thread for this long: the daemon is hung
TEST_BUDGET_S = 420  # one test longer than this: the daemon is hung (or something is very slow)

# what the driver says for IN_USE, per family (sim/common/sim_vendor_*.c)
IN_USE_WORDS = {"ppu": "currently in use", "gpu": "In use by another client"}


def name(e):
    return errno.errorcode.get(e, str(e)) if e else "0"


def report(problems, limit=MAX_REPORTED):
    if len(problems) > limit:
        problems = problems[:limit] + [f"... and {len(problems) - limit} more"]
    return "\n  " + "\n  ".join(problems)


# ---- a daemon that stops answering ------------------------------------------------------------------

class TrustNode(Node):
    """A Node that knows its FUSE connection (the mount's device minor), so that a hung daemon can
    be cut loose: a daemon thread blocked in the kernel (an entry invalidation waiting for a
    directory lock that a request to the daemon holds) survives SIGKILL until the connection is
    aborted, and so do the test's threads waiting for its answers."""

    conn = None

    def start(self):
        super().start()
        self.conn = os.minor(os.stat(self.mnt).st_dev)
        return self

    def diagnose(self):
        """What every daemon thread waits for (kernel wchan and stack), and the log's tail."""
        out = []
        try:
            pid = self.pid()
            for tid in sorted(os.listdir(f"/proc/{pid}/task"), key=int):
                base = f"/proc/{pid}/task/{tid}"
                try:
                    with open(f"{base}/wchan") as f:
                        wchan = f.read().strip()
                    with open(f"{base}/stack") as f:
                        stack = " < ".join(l.split()[1].split("+")[0] for l in f.read().splitlines()[:6] if " " in l)
                except OSError:
                    wchan, stack = "?", ""
                out.append(f"daemon thread {tid}: {wchan}: {stack}")
        except (OSError, ValueError) as e:
            out.append(f"(no daemon threads: {e})")
        out.append("log tail:\n    " + "\n    ".join(self.log().splitlines()[-15:]))
        return "\n  ".join(out)

    def hard_kill(self):
        """kill -9, and abort the FUSE connection so that nothing stays blocked on either side."""
        pid = self.pid()
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        ctl = "/sys/fs/fuse/connections"
        if self.conn is not None:
            if not os.path.exists(f"{ctl}/{self.conn}"):
                subprocess.run(["mount", "-t", "fusectl", "none", ctl], check=False, capture_output=True)
            try:
                with open(f"{ctl}/{self.conn}/abort", "w") as f:
                    f.write("1")
            except OSError:
                pass
        wait_until(lambda: not os.path.exists(f"/proc/{pid}"), timeout=20, what="accelfs to die")
        subprocess.run(["fusermount3", "-u", "-z", self.mnt], check=False)
        self.mounted = False


# ---- a workload: threads carving and reclaiming their own jobs, every answer recorded ------------

class Workload:
    """Threads that each mkdir and rmdir jobs of their own (names t<thread>-<n>) on `targets`
    ((device, profile), device None for the node-level mig/<profile>/), with reads of status and
    available in between, and an observer listing the node-level profile directories.  Every
    answer goes to `log` with the monotonic times it was asked and answered; analyze() judges."""

    def __init__(self, node, targets, threads=4, max_jobs=2, seed=SEED, observe=True, rmdir_via_node=0.3):
        self.node = node
        self.rmdir_via_node = rmdir_via_node  # how often a job is removed through mig/<profile>/
        self.targets = targets
        self.threads = threads
        self.max_jobs = max_jobs
        self.observe = observe
        self.rngs = [random.Random(seed * 7919 + i) for i in range(threads)]
        self.mine = [dict() for _ in range(threads)]  # job -> (device, profile), believed to exist
        self.counter = [0] * threads
        self.log = []
        self.profiles = sorted({p for _, p in targets})
        self.inflight = {}
        self.last_answer = time.monotonic()
        self.hung = None
        self.hung_at = math.inf
        self.dead = False

    def path(self, dev, prof, job):
        return self.node.path(dev, "mig", prof, job) if dev else self.node.path("mig", prof, job)

    def rec(self, **entry):
        self.log.append(entry)

    def call(self, fn, *args):
        t0 = time.monotonic()
        me = threading.get_ident()
        self.inflight[me] = f"{fn.__name__}{args} since {t0:.3f}"
        try:
            out = fn(*args)
            err = 0
        except OSError as e:
            out, err = None, e.errno
            if err in (errno.ENOTCONN, errno.ECONNABORTED):
                self.dead = True  # the daemon is gone: no thread asks again
        self.inflight.pop(me, None)
        self.last_answer = t1 = time.monotonic()
        return out, err, t0, t1

    def exists(self, tid, job, dev, prof, why):
        t0 = time.monotonic()
        ok = os.path.isdir(self.node.path(dev, "mig", prof, job))
        self.rec(kind="exists", thread=tid, job=job, ok=ok, why=why, t0=t0, t1=time.monotonic())
        return ok

    def step(self, tid):
        rng, mine, n = self.rngs[tid], self.mine[tid], self.node
        if mine and (len(mine) >= self.max_jobs or rng.random() < 0.45):
            job = rng.choice(sorted(mine))
            dev, prof = mine[job]
            self.exists(tid, job, dev, prof, "before its rmdir")
            via_node = rng.random() < self.rmdir_via_node
            path = n.path("mig", prof, job) if via_node else n.path(dev, "mig", prof, job)
            _, err, t0, t1 = self.call(os.rmdir, path)
            self.rec(kind="rmdir", thread=tid, job=job, dev=dev, prof=prof, path=path, err=err, t0=t0, t1=t1)
            if err == 0:
                del mine[job]
                self.exists(tid, job, dev, prof, "after its rmdir answered 0")
        else:
            dev, prof = rng.choice(self.targets)
            job = f"t{tid}-{self.counter[tid]}"
            self.counter[tid] += 1
            path = self.path(dev, prof, job)
            _, err, t0, t1 = self.call(os.mkdir, path)
            self.rec(kind="mkdir", thread=tid, job=job, dev=dev, prof=prof, path=path, err=err, t0=t0, t1=t1)
            if err == 0:
                if dev is None:
                    link, lerr, l0, l1 = self.call(os.readlink, n.path("mig", prof, job, "device"))
                    self.rec(kind="readlink", thread=tid, job=job, err=lerr, value=link, t0=l0, t1=l1)
                    dev = link.split("/")[3] if link and link.count("/") >= 5 else None
                if dev:
                    mine[job] = (dev, prof)
                    self.exists(tid, job, dev, prof, "right after its mkdir answered 0")
        # reads in between: one of our jobs' status, and a target's available
        if mine and rng.random() < 0.6:
            job = rng.choice(sorted(mine))
            dev, prof = mine[job]
            text, err, t0, t1 = self.call(n.read, dev, "mig", prof, job, "status")
            self.rec(kind="status", thread=tid, job=job, err=err, state=keyvals(text or "").get("state"),
                     t0=t0, t1=t1)
        if rng.random() < 0.4:
            dev, prof = rng.choice(self.targets)
            parts = (dev, "mig", prof, "available") if dev else ("mig", prof, "available")
            text, err, t0, t1 = self.call(n.read, *parts)
            self.rec(kind="available", thread=tid, where="/".join(parts), err=err, value=text, t0=t0, t1=t1)

    def worker(self, tid, ops, stop):
        for _ in range(ops):
            if stop.is_set() or self.dead:
                return
            try:
                self.step(tid)
            except Exception as e:  # an unexpected exception is an answer too
                self.rec(kind="exception", thread=tid, what=repr(e), t0=time.monotonic(), t1=time.monotonic())

    def observer(self, stop):
        while not stop.is_set() and not self.dead:
            for prof in self.profiles:
                names, err, t0, t1 = self.call(os.listdir, self.node.path("mig", prof))
                self.rec(kind="list", prof=prof, err=err, names=set(names or ()), t0=t0, t1=t1)
            time.sleep(0.005)

    def run(self, ops, stop=None, during=None):
        """Run the threads for `ops` steps each (or until `stop` is set); `during()` runs meanwhile
        in the calling thread (the crash storm kills the daemon there)."""
        stop = stop or threading.Event()
        done = threading.Event()
        workers = [threading.Thread(target=self.worker, args=(i, ops, stop)) for i in range(self.threads)]
        obs = threading.Thread(target=self.observer, args=(done,)) if self.observe else None
        for t in workers:
            t.start()
        if obs:
            obs.start()
        try:
            if during:
                during()
        finally:
            while any(t.is_alive() for t in workers):
                for t in workers:
                    t.join(timeout=0.5)
                if self.hung is None and any(t.is_alive() for t in workers) and \
                        time.monotonic() - self.last_answer > HANG_S:
                    # no thread got an answer for HANG_S seconds: say what everyone waits for, cut loose
                    self.hung_at = self.last_answer
                    self.hung = (f"the daemon answered nothing for {HANG_S}s; in flight: "
                                 f"{sorted(self.inflight.values())}\n  {self.node.diagnose()}")
                    stop.set()
                    self.node.hard_kill()
            done.set()
            if obs:
                obs.join()

    def jobs_in_tree(self):
        """Every job of this workload the tree shows: {job: (device, profile, status)}."""
        found = {}
        for dev in sorted(os.listdir(self.node.mnt)):
            if not dev.startswith(("ppu", "gpu")):
                continue
            for prof in sorted(os.listdir(self.node.path(dev, "mig"))):
                if prof in ("mode", "instances", "map"):
                    continue
                for job in os.listdir(self.node.path(dev, "mig", prof)):
                    if job.startswith("t") and "-" in job and os.path.isdir(self.node.path(dev, "mig", prof, job)):
                        found[job] = (dev, prof, self.node.keyvals(dev, "mig", prof, job, "status"))
        return found

    def adopt(self, found):
        """After a restart: each thread's jobs are what the tree shows of its names."""
        for tid in range(self.threads):
            self.mine[tid] = {j: (d, p) for j, (d, p, _) in found.items() if j.startswith(f"t{tid}-")}

    def analyze(self, initial=(), kill_time=math.inf, allowed_mkdir=(errno.ENOSPC,)):
        """The answers against each other.  `initial`: {job: profile} that existed when the log began.  An
        answer given after `kill_time` that is not 0 says nothing (the daemon was gone)."""
        problems = [f"HUNG: {self.hung}"] if self.hung else []
        kill_time = min(kill_time, self.hung_at)  # what the cut-loose requests answered says nothing
        life = {j: {"born": -math.inf, "prof": prof, "failed": None, "rm_t0": None, "gone": None}
                for j, prof in dict(initial).items()}
        for e in sorted(self.log, key=lambda e: e["t0"]):
            k = e["kind"]
            if k == "exception" and e["t1"] < kill_time:
                problems.append(f"thread {e['thread']}: unexpected exception {e['what']}")
            if k not in ("mkdir", "rmdir"):
                continue
            L = life.setdefault(e["job"], {"born": None, "prof": None, "failed": None, "rm_t0": None, "gone": None})
            L["prof"] = e["prof"]
            where = f"thread {e['thread']}: {k} {os.path.relpath(e['path'], self.node.mnt)} at {e['t0']:.3f}"
            if k == "mkdir":
                if e["err"] == 0:
                    L["born"] = e["t1"]
                elif e["t1"] < kill_time:
                    L["failed"] = e["t1"]
                    if e["err"] == errno.ENOENT:
                        problems.append(f"{where} answered ENOENT")
                    elif e["err"] not in allowed_mkdir:
                        problems.append(f"{where} answered {name(e['err'])}")
            else:
                L["rm_t0"] = e["t0"]
                if e["err"] == 0:
                    L["gone"] = e["t1"]
                elif e["t1"] < kill_time:
                    problems.append(f"{where} of the thread's own job answered {name(e['err'])}"
                                    + (" (the job it had just created)" if L["born"] is not None else ""))

        def alive(job, t0, t1):
            L = life.get(job)
            return L is not None and L["born"] is not None and L["born"] < t0 and \
                (L["rm_t0"] is None or L["rm_t0"] > t1)

        def dead(job, t0):
            L = life.get(job)
            if L is None:
                return False
            return (L["gone"] is not None and L["gone"] < t0) or \
                (L["born"] is None and L["failed"] is not None and L["failed"] < t0)

        for e in self.log:
            if e["t1"] >= kill_time:
                continue
            k = e["kind"]
            if k == "status" and alive(e["job"], e["t0"], e["t1"]) and (e["err"] or e["state"] != "ready"):
                problems.append(f"thread {e['thread']}: status of its live job {e['job']} at {e['t0']:.3f}: "
                                f"{name(e['err'])}, state {e['state']!r}")
            elif k == "exists":
                if alive(e["job"], e["t0"], e["t1"]) and not e["ok"]:
                    problems.append(f"thread {e['thread']}: its job {e['job']} did not exist {e['why']} "
                                    f"at {e['t0']:.3f}")
                if dead(e["job"], e["t0"]) and e["ok"]:
                    problems.append(f"thread {e['thread']}: job {e['job']} still existed {e['why']} at {e['t0']:.3f}")
            elif k == "readlink" and e["err"]:
                problems.append(f"thread {e['thread']}: mig/.../{e['job']}/device right after its mkdir: "
                                f"{name(e['err'])}")
            elif k == "available" and e["err"]:
                problems.append(f"thread {e['thread']}: reading {e['where']}: {name(e['err'])}")
            elif k == "list":
                if e["err"]:
                    problems.append(f"observer: listing mig/{e['prof']}: {name(e['err'])}")
                    continue
                for job, L in life.items():
                    if L["prof"] != e["prof"] and L["prof"] is not None:
                        continue
                    if L["prof"] is None and job not in e["names"]:
                        continue
                    if alive(job, e["t0"], e["t1"]) and job not in e["names"]:
                        problems.append(f"observer: mig/{e['prof']}/ listed at {e['t0']:.3f} lacks {job}, "
                                        f"whose mkdir answered 0 at {L['born']:.3f} (no rmdir yet)")
                    if dead(job, e["t0"]) and job in e["names"]:
                        problems.append(f"observer: mig/{e['prof']}/ listed at {e['t0']:.3f} shows {job}, "
                                        f"gone (or never made) since {(L['gone'] or L['failed']):.3f}")
        return problems, life

    def counts(self):
        out = {}
        for e in self.log:
            if e["kind"] in ("mkdir", "rmdir"):
                key = f"{e['kind']} {name(e['err'])}"
                out[key] = out.get(key, 0) + 1
        return out


# ---- the test cases ------------------------------------------------------------------------------

class TrustCase(NodeTestCase):
    topology = TOPOLOGY
    poll = 0.2
    grace = 1.0

    def setUp(self):
        self.node = TrustNode(self.topology, self.poll, self.grace).start()
        self.hang_report = None
        self.watchdog = threading.Timer(TEST_BUDGET_S, self.on_hang)
        self.watchdog.daemon = True
        self.watchdog.start()

    def on_hang(self):
        """The test ran past its budget: most likely a hung daemon.  Cut it loose so that the test
        fails with what the daemon was waiting for instead of hanging the suite."""
        self.hang_report = f"test still running after {TEST_BUDGET_S}s:\n  {self.node.diagnose()}"
        print(f"\n{self.id()}: {self.hang_report}", file=sys.stderr)
        if self.node.mounted:
            self.node.hard_kill()

    def tearDown(self):
        self.watchdog.cancel()
        pid = self.node.pid() if self.node.mounted else None
        try:
            super().tearDown()
        except AssertionError as e:
            if pid and os.path.exists(f"/proc/{pid}"):
                # the daemon did not exit after its unmount: say what it waits for, then end it
                threads = []
                for tid in sorted(os.listdir(f"/proc/{pid}/task"), key=int):
                    try:
                        with open(f"/proc/{pid}/task/{tid}/wchan") as f:
                            threads.append(f"{tid}: {f.read().strip()}")
                    except OSError:
                        pass
                os.kill(pid, signal.SIGKILL)
                raise AssertionError(f"{e}; accelfs {pid} still runs after its unmount, threads waiting in "
                                     f"{threads}") from e
            raise
        finally:
            self.assertIsNone(self.hang_report)

    def assertInvariants(self, timeout=5.0, context="", **kw):
        problems = settled(self.node, timeout=timeout, **kw)
        self.assertEqual(problems, [], f"{context}: {format_problems(problems)}")

    def fault(self, family, function, ret, skip=0, times=1):
        self.node.smi(family, "sim", "fault", function, ret, "--skip", skip, "--times", times)

    def clear(self, family):
        self.node.smi(family, "sim", "clear-faults")

    def faults(self, family):
        """The armed faults as accel-smi lists them: [(text, fired)]."""
        out = []
        for line in self.node.smi(family, "sim", "faults").stdout.splitlines():
            if "fired" in line:
                out.append((line, int(line.rsplit("fired", 1)[1].strip().split()[0].strip(",)"))))
        return out

    def fired(self, family):
        return sum(f for _, f in self.faults(family))

    def empty_everywhere(self):
        """Every profile's available equals what an empty card offers."""
        n = self.node
        bad = []
        for dev in sorted(os.listdir(n.mnt)):
            if not dev.startswith(("ppu", "gpu")):
                continue
            for prof in os.listdir(n.path(dev, "mig")):
                if prof in ("mode", "instances", "map"):
                    continue
                cap = int(n.keyvals(dev, "mig", prof, "info")["capacity"])
                if n.available(dev, prof) != cap:
                    bad.append(f"{dev}/{prof}: available {n.available(dev, prof)} of {cap}")
        return bad


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


class CrashStorm(TrustCase):
    """Threads carving and reclaiming, kill -9 at a random moment, restart: nothing answered is undone."""

    def test_kill9_during_carves_and_reclaims_then_restart(self):
        n = self.node
        rng = random.Random(SEED)
        targets = [("ppu0", "4g.48gb"), ("ppu1", "4g.48gb"), ("ppu2", "8g.96gb"), ("ppu3", "4g.48gb"),
                   ("gpu0", "1g.18gb"), ("gpu0", "3g.71gb"), (None, "4g.48gb"), (None, "1g.18gb")]
        wl = Workload(n, targets, threads=3, max_jobs=2, observe=True)
        failures = []
        initial = {}
        for rnd in range(ROUNDS):
            wl.log = []
            wl.dead = False
            started = time.monotonic()
            stop = threading.Event()
            kill = {}
            delay = rng.uniform(0.2, 1.5)

            def killer():
                time.sleep(delay)
                kill["t"] = time.monotonic()
                n.hard_kill()  # kill -9 (the connection is aborted too, as the kernel does when the daemon dies)
                stop.set()

            wl.run(100000, stop=stop, during=killer)
            kill_time = kill["t"]
            problems, life = wl.analyze(initial=initial, kill_time=kill_time)
            if wl.hung:
                self.fail(f"round {rnd}: " + report(problems))
            problems = [f"before the kill: {p}" for p in problems]
            n.start()
            if not os.path.isdir(n.path("mig")):
                self.fail(f"round {rnd}: after the restart the mount shows no tree: {os.listdir(n.mnt)}")
            # what the answers promise, right after the restart
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
            problems += [f"invariants: {p}" for p in settled(n, timeout=3.0)]
            found = wl.jobs_in_tree()
            wl.adopt(found)
            initial = {j: p for j, (_, p, _) in found.items()}
            counts = wl.counts()
            print(f"\nround {rnd}: kill after {delay:.2f}s, {counts}, {len(found)} jobs survive; "
                  f"{time.monotonic() - started:.1f}s", file=sys.stderr)
            failures += [f"round {rnd}: {p}" for p in problems]
        self.assertEqual(failures, [], report(failures))
        for job, (dev, prof, _) in sorted(wl.jobs_in_tree().items()):
            os.rmdir(n.path(dev, "mig", prof, job))
        self.assertEqual(self.empty_everywhere(), [])
        self.assertInvariants(context="after removing every job")


class FaultAtEveryCall(TrustCase):
    """The k-th driver call of a carve or a reclaim fails, for every k, with nothing else calling the
    driver (the poller waits an hour): the answer must say what happened, and the node stays whole."""

    poll = 3600
    sweeps = 0

    def sweep(self):
        """Let a poller pass with the grace period over reclaim what is left, then go quiet again."""
        n = self.node
        n.stop()
        n.poll = 0.2
        n.start()
        try:
            wait_until(lambda: not unowned(n), timeout=3 * self.grace + 5, what="the sweep")
        finally:
            n.stop()
            n.poll = self.poll
            n.start()

    def check_failed_mkdir(self, F, dev, prof, job, err, ctx, problems, baseline, drv):
        n = self.node
        if err == errno.ENOENT:
            problems.append(f"{ctx}: mkdir answered ENOENT")
        elif err in (errno.EEXIST, errno.EPERM, errno.EINVAL, errno.ENOTCONN):
            problems.append(f"{ctx}: mkdir answered {name(err)}")
        for where in ((dev, "mig", prof, job), ("mig", prof, job)):
            if where[0] and os.path.exists(n.path(*where)):
                problems.append(f"{ctx}: mkdir answered {name(err)} but {'/'.join(where)} exists")
        le_where = (dev, "mig", prof, "last_error") if dev else ("mig", prof, "last_error")
        if not n.read(*le_where).strip():
            problems.append(f"{ctx}: mkdir answered {name(err)} with an empty {'/'.join(le_where)}")
        left = {d: gis for d, gis in unowned(n, [F["family"]], drv=drv).items() if gis != baseline.get(d)}
        if left and self.sweeps >= 3:
            problems.append(f"{ctx}: mkdir answered {name(err)} and left GPU instances {left} (not swept: "
                            f"this is the {self.sweeps + 1}th time)")
            return False
        if left:
            self.sweeps += 1
            print(f"\nNOTE {ctx}: mkdir answered {name(err)} and left GPU instances {left}; "
                  f"waiting for the sweep", file=sys.stderr)
            try:
                self.sweep()
            except AssertionError:
                problems.append(f"{ctx}: mkdir answered {name(err)}, left GPU instances {left} and the sweep "
                                f"did not reclaim them: {unowned(n, [F['family']])}")
        return bool(left)

    def carve_sweep(self, F, dev, prof, code, setup=()):
        """mkdir on dev/prof (dev None: the node-level view) with the k-th driver call failing `code`."""
        n, fam = self.node, F["family"]
        for d, p, j in setup:
            n.mkdir(d, "mig", p, j)
        baseline = unowned(n, [fam])
        problems = []
        k = 0
        while True:
            job = f"c{k}"
            where = (dev, "mig", prof, job) if dev else ("mig", prof, job)
            ctx = f"{fam}: mkdir {'/'.join(where)} with driver call #{k} failing {code}"
            before_avail = int(n.read(*(where[:-1] + ("available",))))
            self.fault(fam, "*", code, skip=k, times=1)
            err = n.errno_of(os.mkdir, n.path(*where))
            fired = self.fired(fam)
            self.clear(fam)
            drv = driver_view(n, [fam])
            if err == 0:
                try:
                    st = n.keyvals(*where, "status")
                except OSError as e:
                    problems.append(f"{ctx}: mkdir answered 0 but its status is {name(e.errno)}")
                    st = {}
                if st and st.get("state") != "ready":
                    problems.append(f"{ctx}: mkdir answered 0 but the job is {st.get('state')}")
                if int(n.read(*(where[:-1] + ("available",)))) >= before_avail:
                    problems.append(f"{ctx}: mkdir answered 0 but available did not drop from {before_avail}")
            else:
                if self.check_failed_mkdir(F, dev, prof, job, err, ctx, problems, baseline, drv):
                    drv = None  # swept meanwhile: read it again
            problems += [f"{ctx}: {p}" for p in invariants(n, [fam], drv=drv)]
            if err == 0 or os.path.isdir(n.path(*where)):
                e2 = n.errno_of(os.rmdir, n.path(*where))
                if e2:
                    problems.append(f"{ctx}: cleaning up, rmdir answered {name(e2)}")
            if not fired:
                if err:
                    problems.append(f"{ctx}: no fault fired, yet mkdir answered {name(err)}")
                break
            if len(problems) >= MAX_REPORTED:
                problems.append(f"{fam}: stopped at call #{k}: enough evidence")
                break
            k += STRIDE
            if k > 400:
                problems.append(f"{fam}: the fault still fires at call #{k}: the sweep never ends")
                break
        print(f"\n{self.id()}: {fam} carve took {k} driver calls", file=sys.stderr)
        self.assertEqual(problems, [], report(problems))
        self.assertGreater(k, 3, "the carve made almost no driver call: the fault never reached it")
        self.assertInvariants(context="after the sweep", families=[fam])

    def reclaim_sweep(self, F, dev, prof, code, setup=()):
        """rmdir of a job on dev/prof with the k-th driver call failing `code`."""
        n, fam = self.node, F["family"]
        for d, p, j in setup:
            n.mkdir(d, "mig", p, j)
        problems = []
        k = 0
        while True:
            job = f"r{k}"
            ctx = f"{fam}: rmdir {dev}/mig/{prof}/{job} with driver call #{k} failing {code}"
            free = n.available(dev, prof)
            e0 = n.errno_of(os.mkdir, n.path(dev, "mig", prof, job))
            if e0:
                problems.append(f"{ctx}: carving the job to remove (no fault) answered {name(e0)}; the driver has "
                                f"{ {g: v['placement'] for g, v in driver_view(n, [fam]).get(dev, {}).items()} }, "
                                f"unowned {unowned(n, [fam])}")
                break
            st = n.keyvals(dev, "mig", prof, job, "status")
            self.fault(fam, "*", code, skip=k, times=1)
            err = n.errno_of(os.rmdir, n.path(dev, "mig", prof, job))
            fired = self.fired(fam)
            self.clear(fam)
            drv = None
            if err == 0:
                if os.path.exists(n.path(dev, "mig", prof, job)) or os.path.exists(n.path("mig", prof, job)):
                    problems.append(f"{ctx}: rmdir answered 0 but the job is still listed")
                drv = driver_view(n, [fam])
                g = drv.get(dev, {}).get(int(st["gi"]))
                if g and st["uuid"] in g["uuids"].values():
                    problems.append(f"{ctx}: rmdir answered 0 but the driver still has GPU instance {st['gi']}")
                if n.available(dev, prof) != free:
                    problems.append(f"{ctx}: rmdir answered 0 but available is {n.available(dev, prof)}, not {free}")
            else:
                if err in (errno.ENOENT, errno.EPERM, errno.ENOTCONN):
                    problems.append(f"{ctx}: rmdir answered {name(err)}")
                try:
                    st2 = n.keyvals(dev, "mig", prof, job, "status")
                    if st2.get("state") not in ("ready", "removing"):
                        problems.append(f"{ctx}: rmdir answered {name(err)}; the job is {st2.get('state')}")
                    if st2.get("state") == "removing" and not st2.get("reason"):
                        problems.append(f"{ctx}: rmdir answered {name(err)}; removing without a reason")
                except OSError as e:
                    problems.append(f"{ctx}: rmdir answered {name(err)} but the job's status is {name(e.errno)}")
                if not n.read(dev, "mig", prof, "last_error").strip():
                    problems.append(f"{ctx}: rmdir answered {name(err)} with an empty last_error")
                problems += [f"{ctx}: {p}" for p in invariants(n, [fam])]
                e2 = n.errno_of(os.rmdir, n.path(dev, "mig", prof, job))
                if e2:
                    problems.append(f"{ctx}: rmdir again (no fault) answered {name(e2)}")
                elif n.available(dev, prof) != free:
                    problems.append(f"{ctx}: rmdir again answered 0 but available is {n.available(dev, prof)}, "
                                    f"not {free}")
            problems += [f"{ctx}: {p}" for p in invariants(n, [fam], drv=drv)]
            if os.path.isdir(n.path(dev, "mig", prof, job)):
                n.errno_of(os.rmdir, n.path(dev, "mig", prof, job))
            if not fired:
                if err:
                    problems.append(f"{ctx}: no fault fired, yet rmdir answered {name(err)}")
                break
            if len(problems) >= MAX_REPORTED:
                problems.append(f"{fam}: stopped at call #{k}: enough evidence")
                break
            k += STRIDE
            if k > 400:
                problems.append(f"{fam}: the fault still fires at call #{k}: the sweep never ends")
                break
        print(f"\n{self.id()}: {fam} reclaim took {k} driver calls", file=sys.stderr)
        self.assertEqual(problems, [], report(problems))
        self.assertGreater(k, 3, "the reclaim made almost no driver call: the fault never reached it")
        self.assertInvariants(context="after the sweep", families=[fam])

    # carve: a card with another instance on it, so that placement and available matter
    def test_carve_fault_at_every_call_ppu(self):
        self.carve_sweep(THEAD, "ppu1", THEAD["profile"], "UNKNOWN", setup=[("ppu1", THEAD["profile"], "keep")])

    def test_carve_fault_at_every_call_gpu(self):
        self.carve_sweep(NVIDIA, "gpu0", NVIDIA["profile"], "UNKNOWN", setup=[("gpu0", "1g.18gb", "keep")])

    def test_carve_gpu_is_lost_at_every_call_node_level_ppu(self):
        self.carve_sweep(THEAD, None, THEAD["profile"], "GPU_IS_LOST",
                         setup=[("ppu0", THEAD["profile"], "keep0"), ("ppu2", THEAD["wide"], "keep2")])

    def test_reclaim_fault_at_every_call_ppu(self):
        self.reclaim_sweep(THEAD, "ppu1", THEAD["profile"], "UNKNOWN", setup=[("ppu1", THEAD["profile"], "keep")])

    def test_reclaim_fault_at_every_call_gpu(self):
        self.reclaim_sweep(NVIDIA, "gpu0", NVIDIA["profile"], "UNKNOWN", setup=[("gpu0", "1g.18gb", "keep")])

    def test_reclaim_in_use_at_every_call_gpu(self):
        self.reclaim_sweep(NVIDIA, "gpu0", "1g.18gb", "IN_USE", setup=[("gpu0", NVIDIA["profile"], "keep")])

    # -- (2) a fault listing the compute instances while the carve looks at its work ------------------
    def ci_listing_fault(self, F, dev, prof):
        n, fam = self.node, F["family"]
        problems = []
        for code in ("UNKNOWN", "GPU_IS_LOST"):
            for skip in (0, 1, 2):
                job = f"ci-{code.lower()}-{skip}"
                ctx = f"{fam}: mkdir {dev}/mig/{prof}/{job} with GpuInstanceGetComputeInstances {code} --skip {skip}"
                free = n.available(dev, prof)
                self.fault(fam, "GpuInstanceGetComputeInstances", code, skip=skip, times=1)
                err = n.errno_of(os.mkdir, n.path(dev, "mig", prof, job))
                self.clear(fam)
                present = os.path.isdir(n.path(dev, "mig", prof, job))
                if err == 0:
                    if not present:
                        problems.append(f"{ctx}: mkdir answered 0 but the job does not exist (carved-but-ENOENT)")
                    else:
                        st = n.keyvals(dev, "mig", prof, job, "status")
                        if st.get("state") != "ready":
                            problems.append(f"{ctx}: mkdir answered 0, the job is {st.get('state')}")
                    if n.available(dev, prof) != free - 1:
                        problems.append(f"{ctx}: mkdir answered 0, available {n.available(dev, prof)} (was {free})")
                else:
                    if err == errno.ENOENT:
                        problems.append(f"{ctx}: mkdir answered ENOENT")
                    if present:
                        problems.append(f"{ctx}: mkdir answered {name(err)} but the job exists")
                    if unowned(n, [fam]).get(dev):
                        problems.append(f"{ctx}: mkdir answered {name(err)} and left GPU instances "
                                        f"{unowned(n, [fam])[dev]} on {dev} (carved, not recorded)")
                    if not n.read(dev, "mig", prof, "last_error").strip():
                        problems.append(f"{ctx}: mkdir answered {name(err)} with an empty last_error")
                problems += [f"{ctx}: {p}" for p in invariants(n, [fam])]
                if present:
                    n.errno_of(os.rmdir, n.path(dev, "mig", prof, job))
        self.assertEqual(problems, [], report(problems))

    def test_bug2_compute_instance_listing_fault_during_carve_ppu(self):
        self.ci_listing_fault(THEAD, "ppu2", THEAD["profile"])

    def test_bug2_compute_instance_listing_fault_during_carve_gpu(self):
        self.ci_listing_fault(NVIDIA, "gpu0", NVIDIA["profile"])

    # -- (4) the GPU instance stays busy after its compute instance went ------------------------------
    def gi_destroy_in_use(self, F, dev, prof):
        n, fam = self.node, F["family"]
        job = "stuck"
        free = n.available(dev, prof)
        n.mkdir(dev, "mig", prof, job)
        st = n.keyvals(dev, "mig", prof, job, "status")
        gi = int(st["gi"])
        self.fault(fam, "GpuInstanceDestroy", "IN_USE", skip=0, times=1000)
        err = n.errno_of(os.rmdir, n.path(dev, "mig", prof, job))
        self.clear(fam)
        self.assertEqual(err, errno.EBUSY, f"rmdir with GpuInstanceDestroy IN_USE answered {name(err)}")
        self.assertTrue(os.path.isdir(n.path(dev, "mig", prof, job)), "the job went away although rmdir failed")
        st2 = n.keyvals(dev, "mig", prof, job, "status")
        self.assertEqual(st2.get("state"), "removing", st2)
        self.assertIn(IN_USE_WORDS[fam], st2.get("reason", ""), f"status does not carry the driver's words: {st2}")
        self.assertIn(IN_USE_WORDS[fam], n.read(dev, "mig", prof, "last_error"))
        g = driver_view(n, [fam]).get(dev, {}).get(gi)
        self.assertIsNotNone(g, "the GPU instance is gone although its destroy was refused")
        self.assertEqual(g["cis"], {}, "the compute instance was expected to be destroyed first")
        line = [l for l in n.read(dev, "mig", "instances").splitlines() if l.startswith(f"gi={gi} ")]
        self.assertEqual(len(line), 1, n.read(dev, "mig", "instances"))
        self.assertIn(f"job={job}", line[0], "the removing job's GPU instance is not listed as its own")
        self.assertNotIn("orphan", line[0])
        self.assertEqual(unowned(n, [fam]), {}, "the removing job's GPU instance is taken for nobody's")
        self.assertInvariants(context="while the job is removing", families=[fam])
        err = n.errno_of(os.rmdir, n.path(dev, "mig", prof, job))
        self.assertEqual(err, 0, f"rmdir again, with the fault cleared, answered {name(err)}")
        self.assertFalse(os.path.exists(n.path(dev, "mig", prof, job)))
        self.assertEqual(n.available(dev, prof), free)
        self.assertEqual(driver_view(n, [fam]).get(dev, {}), {})
        self.assertInvariants(context="after the second rmdir", families=[fam])

    def test_bug4_gpu_instance_destroy_in_use_leaves_job_removing_ppu(self):
        self.gi_destroy_in_use(THEAD, "ppu1", THEAD["profile"])

    def test_bug4_gpu_instance_destroy_in_use_leaves_job_removing_gpu(self):
        self.gi_destroy_in_use(NVIDIA, "gpu0", NVIDIA["profile"])


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
        """ppu2 refused (a GPU instance subdivided by hand), then driver faults while it stays refused."""
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
        wait_until(lambda: "refused" in n.keyvals("ppu2", "info")["state"], what="ppu2 to be refused")
        problems = []
        for fn, code, skip, times in [("DeviceGetMigMode", "UNKNOWN", 0, 1), ("DeviceGetMigMode", "UNKNOWN", 0, 3),
                                      ("DeviceGetGpuInstances", "UNKNOWN", 0, 6), ("*", "GPU_IS_LOST", 5, 30)]:
            ctx = f"ppu2 refused, sim fault {fn} {code} --skip {skip} --times {times}"
            def during():
                self.fault("ppu", fn, code, skip=skip, times=times)
                # what refreshes the refused card outside the poller: a mkdir there, a node-level mkdir
                e1 = n.errno_of(os.mkdir, n.path("ppu2", "mig", "8g.96gb", "never"))
                if e1 != errno.EBUSY:
                    problems.append(f"{ctx}: mkdir on the refused ppu2 answered {name(e1)}, not EBUSY")
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
            st = n.keyvals("ppu2", "mig", "4g.48gb", "a2", "status")
            if "refused" not in st:
                problems.append(f"{ctx}: a2's status does not say the card is refused: {st}")
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
        # back to one compute instance on ppu2: every card managed again, nothing lost
        cis = dict(f.split("=", 1) for f in [l for l in n.read("ppu2", "mig", "instances").splitlines()
                                            if l.startswith(f"gi={gi} ")][0].split() if "=" in f)["ci"].split(",")
        n.smi("ppu", "mig", "-i", 2, "-gi", gi, "-ci", cis[-1], "-dci")
        try:
            self.settle_ok()
        except AssertionError as e:
            problems.append(str(e))
        for d, p, j in jobs:
            if not os.path.isdir(n.path(d, "mig", p, j)):
                problems.append(f"after the faults: {d}/mig/{p}/{j} is gone")
        # the hand-made GI becomes an orphan and is reclaimed; then the node is whole
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
