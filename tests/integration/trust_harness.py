# SPDX-License-Identifier: MIT
"""What the trust tests share (test_trust.py, test_trust_faults.py): a node that can be killed and
restarted under a workload, the workload itself, and the test case that holds the tree against the
driver afterwards (invariants.py).  Sizes come from the environment (see test_trust.py)."""
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

from harness import MIG_FILES, NVIDIA, THEAD, Node, NodeTestCase, exited, topology_path, wait_until
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
# The crash storm (test_trust.py): rounds of kill -9 / SEGV / ABRT, and how long a restart may take.
CRASH_ROUNDS = max(1, int(os.environ.get("ACCELFS_CRASH_ROUNDS", "30")))
RESTART_BOUND_S = float(os.environ.get("ACCELFS_RESTART_BOUND", "10"))
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

FUSECTL = "/sys/fs/fuse/connections"


def connection_id(conn):
    """Which FUSE connection the number conn names now (the inode of its fusectl directory), or
    None: fusectl mounted first if it is not."""
    if not os.path.ismount(FUSECTL):
        subprocess.run(["mount", "-t", "fusectl", "none", FUSECTL], check=False, capture_output=True)
    try:
        return os.stat(f"{FUSECTL}/{conn}").st_ino
    except OSError:
        return None

class TrustNode(Node):
    """A Node that knows its FUSE connection (the mount's device minor), so that a hung daemon can
    be cut loose: a daemon thread blocked in the kernel (an entry invalidation waiting for a
    directory lock that a request to the daemon holds) survives SIGKILL until the connection is
    aborted, and so do the test's threads waiting for its answers."""

    conn = None
    conn_id = None  # which connection conn named: a freed number goes to the next FUSE mount

    def start(self):
        super().start()
        self.conn = os.minor(os.stat(self.mnt).st_dev)
        self.conn_id = connection_id(self.conn)
        return self

    def guardian(self, pid):
        """The daemon's guardian (fs/crashguard.c: the process that aborts the connection when the
        daemon dies), or None."""
        for p in os.listdir("/proc"):
            if not p.isdigit():
                continue
            try:
                with open(f"/proc/{p}/stat") as f:
                    text = f.read()
            except OSError:
                continue
            comm, rest = text[text.index("(") + 1:text.rindex(")")], text[text.rindex(")") + 2:].split()
            if comm == "accelfs-guard" and int(rest[1]) == pid:
                return int(p)
        return None

    def crash(self, sig, guarded=True):
        """Kill the daemon with `sig` as a crash or the OOM killer would, and free nothing ourselves:
        the product must.  Unguarded, its guardian is killed first, so that only the next daemon's
        takeover can free a mount the dying one wedged.  Returns the daemon's pid."""
        pid = self.pid()
        if not guarded:
            g = self.guardian(pid)
            if g is None:
                raise AssertionError(f"accelfs {pid} has no guardian process (accelfs-guard)")
            os.kill(g, signal.SIGKILL)
        os.kill(pid, sig)
        self.mounted = False
        return pid

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
        # Only while the number still names this node's connection: another test's mount may have
        # it by now, and aborting that one would fail that test (fs/fusectl.h).
        if self.conn is not None and connection_id(self.conn) == self.conn_id:
            try:
                with open(f"{FUSECTL}/{self.conn}/abort", "w") as f:
                    f.write("1")
            except OSError:
                pass
        wait_until(lambda: exited(pid), timeout=20, what="accelfs to die")
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
                self.exists(tid, job, dev, prof,
                            f"after its rmdir of {os.path.relpath(path, n.mnt)} answered 0 at {t1:.3f}")
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
                if prof in MIG_FILES:
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
    budget = TEST_BUDGET_S
    topology = TOPOLOGY
    poll = 0.2
    grace = 1.0

    def setUp(self):
        self.node = TrustNode(self.topology, self.poll, self.grace).start()
        self.hang_report = None
        self.watchdog = threading.Timer(self.budget, self.on_hang)
        self.watchdog.daemon = True
        self.watchdog.start()

    def on_hang(self):
        """The test ran past its budget: most likely a hung daemon.  Cut it loose so that the test
        fails with what the daemon was waiting for instead of hanging the suite."""
        self.hang_report = f"test still running after {self.budget}s:\n  {self.node.diagnose()}"
        print(f"\n{self.id()}: {self.hang_report}", file=sys.stderr)
        if self.node.mounted:
            self.node.hard_kill()

    def tearDown(self):
        self.watchdog.cancel()
        pid = self.node.pid() if self.node.mounted else None
        try:
            super().tearDown()
        except AssertionError as e:
            if pid and not exited(pid):
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
                if prof in MIG_FILES:
                    continue
                cap = int(n.keyvals(dev, "mig", prof, "info")["capacity"])
                if n.available(dev, prof) != cap:
                    bad.append(f"{dev}/{prof}: available {n.available(dev, prof)} of {cap}")
        return bad
