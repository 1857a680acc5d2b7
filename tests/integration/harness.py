# SPDX-License-Identifier: MIT
"""Mount the real accelfs daemon over the simulated drivers and drive it the
way a user does: mkdir, rmdir, cat, and the control tool for the hardware.

Paths to the binaries come from the environment meson sets for the tests:
ACCELFS (the daemon), ACCEL_SMI (the control tool), ACCELFS_SIM_LIBDIR.
"""
import contextlib
import ctypes
import errno
import fcntl
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest

ACCELFS = os.environ.get("ACCELFS", "accelfs")
ACCEL_SMI = os.environ.get("ACCEL_SMI", "accel-smi")
ACCEL_WAIT = os.environ.get("ACCEL_WAIT", "accel-wait")
HERE = os.path.dirname(os.path.abspath(__file__))

# The two MIG families, described by what a test needs to know of them.  The
# contract rows are written once against these and run for both.
# The files of <dev>/mig/ beside its profile directories (fs/tree_files.c, core/model/tree_names.h).
MIG_FILES = ("mode", "instances", "map", "layout", "layout_status", "cordon", "foreign", "adopt", "last_error")

THEAD = {
    "family": "ppu",
    "device": "ppu3",
    "index": 3,
    "profile": "4g.48gb",         # two instances of four slices: {0,4}:4
    "profile_id": 5,
    "driver_name": "4g48gb",
    "capacity": 2,
    "wide": "8g.96gb",            # one instance spanning everything: {0}:8
    "wide_id": 3,
    "placements": "{0,4}:4",
    "nodes": ["/dev/alixpu", "/dev/alixpu_ctl", "/dev/alixpu_ppu3"],
    "cap_prefix": "/dev/alixpu-caps/alixpu-cap",
    "other_device": "ppu4",
}
NVIDIA = {
    "family": "gpu",
    "device": "gpu0",
    "index": 0,
    "profile": "3g.71gb",         # two instances of four memory slices: {0,4}:4
    "profile_id": 9,
    "driver_name": "3g.71gb",
    "capacity": 2,
    "wide": "7g.141gb",
    "wide_id": 0,
    "placements": "{0,4}:4",
    "nodes": ["/dev/nvidiactl", "/dev/nvidia0"],
    "cap_prefix": "/dev/nvidia-caps/nvidia-cap",
    "other_device": None,
}


# ---- the kernel's bound on a FUSE answer: one setting for the whole machine ----------------------
# The kernel reads fs.fuse.default_request_timeout (Linux 6.14 and later) when a daemon answers
# FUSE_INIT, whoever's daemon it is.  integration-dies_bound and -dies_lend set it to 1 s for a mount
# of their own.  A mount made in that instant, by another run of the tests on the machine (CI beside
# a developer's run, or two developers), would get it too, and the first of its requests the kernel
# caught waiting more than 1 s would abort it: ECONNABORTED for every caller, a daemon lost.  So a
# daemon a harness starts mounts holding this lock shared, until it has answered a request (so INIT
# came before), and a test that sets the bound holds it alone (test_dies_bound.py).  The Go plugin's
# simulated nodes take the same file (k8s/accelfs/accelfstest/sim.go).
KERNEL_BOUND_LOCK = "/run/lock/accelfs-tests-kernel-bound.lock" if os.path.isdir("/run/lock") \
    else os.path.join(tempfile.gettempdir(), "accelfs-tests-kernel-bound.lock")
_bound_held_here = False  # this process holds the lock alone: its own mounts are what it guards


def _open_lock(path):
    try:
        return os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        # Not O_CREAT on an existing file: in a sticky directory the kernel refuses that for a file
        # another user made (fs.protected_regular), root included.
        try:
            return os.open(path, os.O_RDONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644)
        except FileExistsError:
            return os.open(path, os.O_RDONLY | os.O_CLOEXEC)


@contextlib.contextmanager
def kernel_bound_lock(alone=False, timeout=300.0):
    """KERNEL_BOUND_LOCK, shared (a mount) or alone (the bound set); nothing where this process
    already holds it alone.  A liveness bound on the wait: a holder never keeps it long."""
    global _bound_held_here
    if _bound_held_here:
        yield
        return
    fd = _open_lock(KERNEL_BOUND_LOCK)
    try:
        deadline = time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(fd, (fcntl.LOCK_EX if alone else fcntl.LOCK_SH) | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise AssertionError(f"{KERNEL_BOUND_LOCK} was held for more than {timeout} s")
                time.sleep(0.05)
        _bound_held_here = alone
        try:
            yield
        finally:
            _bound_held_here = False
    finally:
        os.close(fd)  # lets go of the lock


def start_daemon(cmd, mnt, **kwargs):
    """subprocess.run of a start of accelfs in the background (which returns once it has mounted mnt),
    inside kernel_bound_lock until the mount has answered a request, so INIT came before.  For a
    test's own start, as Node.start's."""
    with kernel_bound_lock():
        res = subprocess.run(cmd, **kwargs)
        if res.returncode == 0:
            os.statvfs(mnt)
    return res


SUPPRESSIONS = os.path.join(HERE, "..", "valgrind.supp")


@contextlib.contextmanager
def daemon_under_valgrind(test, ready, extra=(), state=None):
    """Run `accelfs -f --sim` under valgrind and yield its mountpoint once `ready` (a path below it)
    exists; then unmount and fail the test on any memory error or definite leak.  test.vg_state is
    the daemon's state directory (for accel-smi --sim) while it runs: a new one, removed after, or
    `state`, kept for the caller (what a daemon before it left there, and what it leaves for the next)."""
    own_state = state is None
    if own_state:
        state = tempfile.mkdtemp(prefix="accelfs-vg-state-")
    test.vg_state = state
    mnt = tempfile.mkdtemp(prefix="accelfs-vg-mnt-")
    log = os.path.join(state, "valgrind.log")
    mounting = contextlib.ExitStack()  # the kernel's bound: held until the mount has answered
    mounting.enter_context(kernel_bound_lock())
    try:
        proc = subprocess.Popen(["valgrind", "--error-exitcode=99", "--leak-check=full",
                                 "--errors-for-leak-kinds=definite", f"--suppressions={SUPPRESSIONS}",
                                 f"--log-file={log}", ACCELFS, "-f", "--sim", f"--state-dir={state}", *extra, mnt],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    except BaseException:
        mounting.close()
        raise
    try:
        with mounting:
            wait_until(lambda: os.path.exists(os.path.join(mnt, ready)), timeout=120,
                       what="the mount under valgrind")
        yield mnt
    finally:
        subprocess.run(["fusermount3", "-u", mnt], check=False)
        rc = proc.wait(timeout=120)
    with open(log) as f:
        report = f.read()
    if own_state:
        shutil.rmtree(state, ignore_errors=True)
    else:
        os.unlink(log)
    os.rmdir(mnt)
    test.assertEqual(rc, 0, report)


def exited(pid):
    """Whether process `pid` has ended: gone, or a zombie not yet reaped whose every thread is gone.
    The daemon runs in the background, an orphan whose reaper is init, and an init may collect it
    seconds late (this machine's did, 1.7 s after each exit).  Its main thread can be a zombie
    while the others still exit, holding its descriptors, /dev/fuse among them: only once the
    zombie is its last thread has it let go of everything."""
    try:
        with open(f"/proc/{pid}/status") as f:
            fields = dict(line.split(":", 1) for line in f.read().splitlines() if ":" in line)
    except OSError:
        return True
    return fields["State"].split()[0] in ("Z", "X") and int(fields["Threads"]) <= 1


def wait_until(pred, timeout=10.0, step=0.05, what="condition"):
    deadline = time.monotonic() + timeout
    while True:
        value = pred()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(step)


def cdi_tag(state):
    """The tag of a daemon's CDI spec files (accelfs-<tag>-<job>.json, core/state/cdi_dir.c): eight hex digits of the
    FNV-1a hash of its state directory's real path, folded to 32 bits."""
    h = 0xcbf29ce484222325
    for b in os.path.realpath(state).encode():
        h = ((h ^ b) * 0x100000001b3) & 0xffffffffffffffff
    return "%08x" % (((h >> 32) ^ h) & 0xffffffff)


# poll(2) and ppoll(2) on x86_64 and aarch64: what /proc/PID/syscall names while accel-wait waits.
POLL_SYSCALLS = {"7", "271", "73"}


class Waiter:
    """`accel-wait [ARGS] PATH` in the background, returned once it has read the file and waits in
    poll(): a change made after that is one it must see.  result() is its exit status, stdout and
    stderr, with a generous bound on how long it may take (a liveness bound, not a timing).

    Its output goes to files, not pipes: a waiter woken before the test reads it (node.json moved on
    its own) writes the whole file, and node.json is larger than a pipe holds.  Blocked in write(),
    it would neither wait in poll() nor exit, and the test would wait for it for good."""

    def __init__(self, path, *args):
        self.path = path
        self.out = tempfile.TemporaryFile(mode="w+")
        self.err = tempfile.TemporaryFile(mode="w+")
        self.texts = None
        self.proc = subprocess.Popen([ACCEL_WAIT, *args, path], stdout=self.out, stderr=self.err, text=True)
        try:
            wait_until(self.polling, timeout=60, what=f"accel-wait on {path} to wait in poll()")
        except BaseException:
            self.kill()  # its open file would keep the node from unmounting
            raise

    def polling(self):
        if self.proc.poll() is not None:
            return True  # it ended already: result() says how
        try:
            with open(f"/proc/{self.proc.pid}/syscall") as f:
                return f.read().split()[0] in POLL_SYSCALLS
        except (OSError, IndexError):
            return False

    def output(self):
        """Its stdout and stderr, once it has ended (read once; the files are closed then)."""
        if self.texts is None:
            self.texts = []
            for f in (self.out, self.err):
                f.seek(0)
                self.texts.append(f.read())
                f.close()
        return self.texts

    def result(self, timeout=60):
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise AssertionError(f"accel-wait on {self.path} did not return within {timeout} s "
                                 f"(stderr: {self.output()[1]})")
        out, err = self.output()
        return self.proc.returncode, out, err

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        self.output()


_libc = ctypes.CDLL(None, use_errno=True)
_libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]
PTRACE_DETACH, PTRACE_SEIZE, PTRACE_INTERRUPT = 17, 0x4206, 0x4207
WALL = 0x40000000  # __WALL: waitpid on a thread of another process
SYS_FUTEX = 202    # x86_64


def _ptrace(request, tid):
    return _libc.ptrace(request, tid, None, None)


class Node:
    """One mounted simulated node with its own state directory."""

    def __init__(self, topology=None, poll=0.2, grace=1.0, extra=(), busy_retries=2):
        self.state = tempfile.mkdtemp(prefix="accelfs-state-")
        self.mnt = tempfile.mkdtemp(prefix="accelfs-mnt-")
        self.topology = topology
        self.poll = poll
        self.grace = grace
        self.busy_retries = busy_retries
        self.extra = list(extra)
        self.mounted = False

    # -- the daemon ---------------------------------------------------------
    def start(self):
        sim = "--sim" if not self.topology else f"--sim={self.topology}"
        cmd = [ACCELFS, sim, f"--state-dir={self.state}", f"--poll-interval={self.poll}",
               f"--orphan-grace={self.grace}", f"--busy-retries={self.busy_retries}", *self.extra, self.mnt]
        # A daemon in the background has no stderr: sanitizer reports go to files the test checks.
        env = dict(os.environ)
        env["ASAN_OPTIONS"] = f"log_path={self.state}/sanitizer:" + env.get("ASAN_OPTIONS", "")
        env["TSAN_OPTIONS"] = f"log_path={self.state}/sanitizer:" + env.get("TSAN_OPTIONS", "")
        env["UBSAN_OPTIONS"] = f"log_path={self.state}/sanitizer:print_stacktrace=1:" + env.get("UBSAN_OPTIONS", "")
        res = start_daemon(cmd, self.mnt, capture_output=True, text=True, timeout=60, env=env)
        if res.returncode != 0:
            raise AssertionError(f"accelfs failed ({res.returncode}): {res.stderr}\n{self.log()}")
        self.mounted = True
        return self

    def pid(self):
        with open(os.path.join(self.state, "accelfs.pid")) as f:
            return int(f.read())

    def thread(self, name):
        """The daemon's thread of that name (its comm: the daemon names its threads)."""
        pid = self.pid()
        for tid in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{tid}/comm") as f:
                if f.read().strip() == name:
                    return int(tid)
        raise AssertionError(f"accelfs {pid} has no thread named {name}")

    @contextlib.contextmanager
    def thread_paused(self, name):
        """The daemon's thread `name` held in a ptrace stop, caught while it waits for work (in
        futex, holding no lock), so that what it would do next, a test sees it not do: whatever
        must be true before an answer cannot then rest on that thread's being quick."""
        tid = self.thread(name)
        for _ in range(100):
            if _ptrace(PTRACE_SEIZE, tid) or _ptrace(PTRACE_INTERRUPT, tid):
                raise AssertionError(f"ptrace of thread {name} ({tid}): {os.strerror(ctypes.get_errno())}")
            os.waitpid(tid, WALL)
            with open(f"/proc/{self.pid()}/task/{tid}/syscall") as f:
                waiting = f.read().split()[0] == str(SYS_FUTEX)
            if waiting:
                break
            _ptrace(PTRACE_DETACH, tid)  # busy: let it finish and catch it at its next wait
            time.sleep(0.01)
        else:
            raise AssertionError(f"thread {name} ({tid}) was never caught waiting")
        try:
            yield tid
        finally:
            _ptrace(PTRACE_DETACH, tid)

    def stop(self):
        if self.mounted:
            pid = self.pid()
            subprocess.run(["fusermount3", "-u", self.mnt], check=True)
            self.mounted = False
            # A liveness bound, not a timing: a sanitized daemon's exit (the leak scan) on a loaded
            # 2-core machine has taken more than 10 s; a daemon that hangs still fails here.
            wait_until(lambda: exited(pid), timeout=60.0, what="accelfs to exit")

    def kill9(self):
        pid = self.pid()
        os.kill(pid, signal.SIGKILL)
        wait_until(lambda: exited(pid), what="accelfs to die")
        subprocess.run(["fusermount3", "-u", "-z", self.mnt], check=False)
        self.mounted = False

    def restart(self):
        self.stop()
        return self.start()

    def sanitizer_reports(self):
        """What ASan/UBSan/LSan said about the daemon, if it was built with them."""
        out = []
        for name in sorted(os.listdir(self.state)):
            if name.startswith("sanitizer"):
                with open(os.path.join(self.state, name)) as f:
                    out.append(f.read())
        return "".join(out)

    def keep_log(self, name):
        """Copy the daemon's log, and any sanitizer report, out of the state directory, which
        cleanup removes: a failed test's daemon says there what it did and why it went.  Kept as
        accelfs-<name>.log in meson's log directory when meson runs the tests, else in the
        temporary directory.  Returns the path."""
        text = self.log()
        reports = self.sanitizer_reports() if os.path.isdir(self.state) else ""
        if reports:
            text += "\n--- what its sanitizers reported ---\n" + reports
        safe = "".join(c if c.isalnum() or c in "._-" else "_" for c in name)
        path = os.path.join(os.environ.get("MESON_LOG_DIR") or tempfile.gettempdir(), f"accelfs-{safe}.log")
        with open(path, "w") as f:
            f.write(text)
        return path

    def cleanup(self):
        try:
            self.stop()
        except Exception:
            subprocess.run(["fusermount3", "-u", "-z", self.mnt], check=False)
        shutil.rmtree(self.state, ignore_errors=True)
        try:
            os.rmdir(self.mnt)
        except OSError:
            pass

    def log(self):
        try:
            with open(os.path.join(self.state, "accelfs.log")) as f:
                return f.read()
        except OSError:
            return ""

    # -- the CDI spec files -------------------------------------------------------
    def cdi_dir(self):
        """Where this daemon publishes its jobs: --cdi-dir, else STATE/cdi (a simulated node)."""
        for arg in self.extra:
            if arg.startswith("--cdi-dir="):
                return arg[len("--cdi-dir="):]
        return os.path.join(self.state, "cdi")

    def cdi_files(self):
        """This daemon's node-level spec files, {job: path} (another daemon's are not its own)."""
        prefix = f"accelfs-{cdi_tag(self.state)}-"
        try:
            names = os.listdir(self.cdi_dir())
        except FileNotFoundError:
            return {}
        return {n[len(prefix):-len(".json")]: os.path.join(self.cdi_dir(), n)
                for n in names if n.startswith(prefix) and n.endswith(".json")}

    def cdi_specs(self):
        """{job: the parsed spec of its file}."""
        out = {}
        for job, path in self.cdi_files().items():
            with open(path) as f:
                out[job] = json.load(f)
        return out

    # -- the control tool (the simulated hardware's ppu-smi / nvidia-smi) ------
    def smi_cmd(self, family):
        return [ACCEL_SMI, f"--sim={self.state}", "-f", family]

    def smi(self, family, *args, check=True):
        cmd = [*self.smi_cmd(family), *[str(a) for a in args]]
        res = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
        if check and res.returncode != 0:
            raise AssertionError(f"{' '.join(cmd)} failed ({res.returncode}): {res.stdout}{res.stderr}")
        return res

    # -- the tree -------------------------------------------------------------
    def path(self, *parts):
        return os.path.join(self.mnt, *parts)

    def read(self, *parts):
        with open(self.path(*parts)) as f:
            return f.read()

    def keyvals(self, *parts):
        out = {}
        for line in self.read(*parts).splitlines():
            key, _, value = line.partition(":")
            out[key.strip()] = value.strip()
        return out

    def available(self, device, profile):
        return int(self.read(device, "mig", profile, "available"))

    def mkdir(self, *parts):
        os.mkdir(self.path(*parts))

    def errno_of(self, fn, *args):
        try:
            fn(*args)
        except OSError as e:
            return e.errno
        return 0


# How many of the daemon's last log lines a failed test shows (all of it is kept in a file).
KEPT_LOG_TAIL = 30


def test_failed(case):
    """Whether the test case has failed or errored so far: in tearDown, whether its body or one of
    its subtests did.  unittest says it nowhere public: since Python 3.11 a failure is on the
    result as it happens; before, it waits in the outcome's errors until the test ends."""
    outcome = getattr(case, "_outcome", None)
    if outcome is None:
        return False
    if hasattr(outcome, "errors"):
        return any(exc_info for _, exc_info in outcome.errors)
    result = outcome.result
    return any(getattr(test, "test_case", test) is case for test, _ in result.failures + result.errors)


def keep_failed_log(case, node):
    """A failed test keeps its daemon's log (Node.keep_log) and shows its last lines.  Call it
    before node.cleanup(), and after the stop, so that the log says how the daemon ended."""
    try:
        path = node.keep_log(case.id())
    except OSError as e:
        print(f"{case.id()}: cannot keep the daemon's log: {e}", file=sys.stderr)
        return
    tail = node.log().splitlines()[-KEPT_LOG_TAIL:]
    print(f"{case.id()} failed: its daemon's log is kept in {path}; its last lines:\n    " +
          "\n    ".join(tail), file=sys.stderr)


class NodeTestCase(unittest.TestCase):
    """A test case with a fresh node per test (slower, but no test sees another's state)."""

    topology = None
    poll = 0.2
    grace = 1.0
    busy_retries = 2
    maxDiff = None  # a sanitizer report is long, and all of it matters

    def setUp(self):
        self.waiters = []
        self.node = Node(self.topology, self.poll, self.grace, busy_retries=self.busy_retries).start()

    def waiter(self, path, *args):
        """An accel-wait on path (harness.Waiter), stopped before the node is unmounted."""
        w = Waiter(path, *args)
        self.waiters = getattr(self, "waiters", [])
        self.waiters.append(w)
        return w

    def tearDown(self):
        for w in getattr(self, "waiters", ()):  # a setUp of its own may not have called this one's
            w.kill()
        if os.environ.get("ACCELFS_TEST_LOG"):
            print(self.node.log())
        failed = test_failed(self)
        try:
            self.node.stop()  # a clean exit, so leak reports are written too
        finally:
            reports = self.node.sanitizer_reports()
            if failed or reports:
                keep_failed_log(self, self.node)
            self.node.cleanup()
        self.assertEqual(reports, "", "the daemon's sanitizers reported errors")

    def assertErrno(self, expected, fn, *args):
        got = self.node.errno_of(fn, *args)
        self.assertEqual(got, expected, f"expected {errno.errorcode.get(expected)}, got "
                         f"{errno.errorcode.get(got, got)}")


def topology_path(name):
    return os.path.join(HERE, "topologies", name)


def load_json(text):
    return json.loads(text)
