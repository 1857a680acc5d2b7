# SPDX-License-Identifier: MIT
"""accelfs's life as a process under a service manager: readiness and stopping over a notify
socket as systemd reads them, journal priorities on stderr, the exit statuses a service manager
reads (signals, a log that cannot be opened), and the log file of a daemon started in the
background (test_service.py is the mounted node's files and metrics)."""
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
from harness import ACCELFS, NodeTestCase, exited, wait_until  # noqa: E402
from service_checks import sanitizer_env  # noqa: E402

DEVICE_RE = re.compile(r"^(ppu|gpu)\d+$")


def slurp(path):
    with open(path) as f:
        return f.read()


def foreground(state, mnt, env_extra, stderr=subprocess.DEVNULL, args=()):
    """accelfs --sim in the foreground as a service manager starts it; sanitizer reports to files."""
    env = sanitizer_env(state, env_extra)
    return subprocess.Popen([ACCELFS, "--sim", f"--state-dir={state}", *args, mnt], env=env,
                            stdout=subprocess.DEVNULL, stderr=stderr)


def sanitizer_reports(state):
    return "".join(slurp(os.path.join(state, f)) for f in os.listdir(state) if f.startswith("sanitizer"))


class Readiness(unittest.TestCase):
    def setUp(self):
        self.state = tempfile.mkdtemp(prefix="accelfs-state-")
        self.mnt = tempfile.mkdtemp(prefix="accelfs-mnt-")
        self.sock_path = os.path.join(self.state, "notify")
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(self.sock_path)
        self.sock.settimeout(120)

    def tearDown(self):
        subprocess.run(["fusermount3", "-u", "-z", self.mnt], check=False, stderr=subprocess.DEVNULL)
        self.sock.close()
        subprocess.run(["rm", "-rf", self.state], check=True)
        os.rmdir(self.mnt)

    def test_ready_once_the_tree_is_complete_and_stopping_on_the_way_out(self):
        proc = foreground(self.state, self.mnt, {"NOTIFY_SOCKET": self.sock_path})
        ready = self.sock.recv(4096).decode()
        # What systemd would now let start: the whole tree, in one snapshot, is there.
        entries = os.listdir(self.mnt)
        self.assertIn("READY=1", ready.splitlines())
        self.assertIn(f"STATUS=Serving {self.mnt} (a simulated node)", ready.splitlines())
        self.assertIn(f"MAINPID={proc.pid}", ready.splitlines())
        self.assertEqual(len([e for e in entries if DEVICE_RE.match(e)]), 17)
        self.assertIsNone(proc.poll(), "with NOTIFY_SOCKET set accelfs must stay in the foreground")
        self.assertTrue(os.path.isdir(os.path.join(self.mnt, "ppu15", "mig", "4g.48gb")))
        subprocess.run(["fusermount3", "-u", self.mnt], check=True)
        stopping = self.sock.recv(4096).decode()
        self.assertIn("STOPPING=1", stopping.splitlines())
        self.assertEqual(proc.wait(timeout=60), 0)
        self.assertEqual(sanitizer_reports(self.state), "")

    def test_no_socket_no_message_and_a_plain_start_still_forks(self):
        res = subprocess.run([ACCELFS, "--sim", f"--state-dir={self.state}", self.mnt], capture_output=True,
                             text=True, timeout=120, env={k: v for k, v in os.environ.items() if k != "NOTIFY_SOCKET"})
        self.assertEqual(res.returncode, 0, res.stderr)
        self.assertTrue(os.path.isdir(os.path.join(self.mnt, "ppu0")))  # the parent returned, the child serves
        self.sock.settimeout(0.2)
        with self.assertRaises(socket.timeout):
            self.sock.recv(4096)
        subprocess.run(["fusermount3", "-u", self.mnt], check=True)


class Journal(unittest.TestCase):
    def run_daemon(self, journal_stream):
        state = tempfile.mkdtemp(prefix="accelfs-state-")
        mnt = tempfile.mkdtemp(prefix="accelfs-mnt-")
        err_path = os.path.join(state, "stderr")
        try:
            with open(err_path, "w") as err:
                st = os.fstat(err.fileno())
                stream = f"{st.st_dev}:{st.st_ino}" if journal_stream else "1:1"
                proc = foreground(state, mnt, {"JOURNAL_STREAM": stream}, stderr=err, args=["-f"])
                wait_until(lambda: os.path.isdir(os.path.join(mnt, "ppu3", "mig")), timeout=120, what="the mount")
                os.mkdir(os.path.join(mnt, "ppu3", "mig", "8g.96gb", "big"))
                # What a user's command meets is logged at notice, not as an error the administrator must read.
                with self.assertRaises(OSError):
                    os.mkdir(os.path.join(mnt, "ppu3", "mig", "8g.96gb", "nospace"))  # no free placement
                with self.assertRaises(OSError):
                    os.mkdir(os.path.join(mnt, "ppu4", "mig", "8g.96gb", "big"))  # the name is taken
                with self.assertRaises(OSError):
                    os.mkdir(os.path.join(mnt, "ppu4", "mig", "8g.96gb", "bad-"))  # not a legal name
                subprocess.run(["fusermount3", "-u", mnt], check=True)
                self.assertEqual(proc.wait(timeout=60), 0)
            self.assertEqual(sanitizer_reports(state), "")
            with open(err_path) as f:
                return f.read().splitlines()
        finally:
            subprocess.run(["fusermount3", "-u", "-z", mnt], check=False, stderr=subprocess.DEVNULL)
            subprocess.run(["rm", "-rf", state], check=True)
            os.rmdir(mnt)

    def test_journal_lines_carry_their_priority(self):
        lines = self.run_daemon(journal_stream=True)
        self.assertTrue(lines)
        bad = [line for line in lines if not re.match(r"^<[0-7]>\S", line)]
        self.assertEqual(bad, [], "every line on the journal starts with its priority")
        self.assertTrue(any(re.match(r"^<6>serving /", line) for line in lines), lines)
        for job in ("nospace", "big", "bad-"):
            self.assertTrue(any(line.startswith("<5>") and f"mkdir {job}:" in line for line in lines), (job, lines))
        self.assertEqual([line for line in lines if line[:3] in ("<3>", "<4>")], [],
                         "journalctl -p warning shows nothing for a node that only refused users' commands")
        self.assertTrue(any(re.match(r"^<6>ppu3/8g\.96gb: carved job big for uid 0 gid 0:", line) for line in lines),
                        "which uid carved a job")
        self.assertFalse(any(re.search(r"\d{4}-\d\d-\d\dT", line[:30]) for line in lines), "the journal dates lines")

    def test_a_stream_that_is_not_stderr_is_not_the_journal(self):
        lines = self.run_daemon(journal_stream=False)
        self.assertTrue(any(re.match(r"^\d{4}-\d\d-\d\dT\S+ accelfs\[\d+\] info: serving /", line) for line in lines),
                        lines)
        self.assertFalse(any(re.match(r"^<\d>", line) for line in lines))


def tree_state(root):
    """Every name under root with its type, mode, size, mtime and content: what a refused start must not change."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            path = os.path.join(dirpath, name)
            st = os.lstat(path)
            body = slurp_bytes(path) if os.path.isfile(path) and not os.path.islink(path) else b""
            out[os.path.relpath(path, root)] = (st.st_mode, st.st_size, st.st_mtime_ns, body)
    return out


def slurp_bytes(path):
    with open(path, "rb") as f:
        return f.read()


SIGNAL_BITS = {"SigIgn", "SigBlk"}


def signal_masks(pid):
    """The ignored and blocked signal sets of pid's main thread, from /proc."""
    masks = {}
    for line in slurp(f"/proc/{pid}/status").splitlines():
        key, _, value = line.partition(":")
        if key in SIGNAL_BITS:
            masks[key] = int(value.strip(), 16)
    return masks


def has_signal(mask, sig):
    return bool(mask & (1 << (sig - 1)))


class ExitStatus(unittest.TestCase):
    """What a service manager reads: 0 when SIGTERM or SIGINT stopped the daemon (also when it was started with
    them ignored, as a shell script's `accelfs ... &` does), 2 for a --log that cannot be opened, with nothing
    created or changed."""

    def setUp(self):
        self.state = tempfile.mkdtemp(prefix="accelfs-state-")
        self.mnt = tempfile.mkdtemp(prefix="accelfs-mnt-")
        # Sanitizer reports go beside the state directory, never into it (a test compares its contents).
        self.reports = tempfile.mkdtemp(prefix="accelfs-reports-")
        self.env = sanitizer_env(self.reports)

    def tearDown(self):
        subprocess.run(["fusermount3", "-u", "-z", self.mnt], check=False, stderr=subprocess.DEVNULL)
        reports = sanitizer_reports(self.reports)
        subprocess.run(["rm", "-rf", self.state, self.reports], check=True)
        os.rmdir(self.mnt)
        self.assertEqual(reports, "", "the daemon's sanitizers reported errors")

    def start(self, *args, preexec=None):
        return subprocess.Popen([ACCELFS, "--sim", f"--state-dir={self.state}", *args, self.mnt], env=self.env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, preexec_fn=preexec)

    def run_daemon(self, *args, state=None):
        return subprocess.run([ACCELFS, "--sim", f"--state-dir={state or self.state}", *args, self.mnt],
                              capture_output=True, text=True, timeout=120, env=self.env)

    def unmount(self):
        pid = int(slurp(os.path.join(self.state, "accelfs.pid")))
        subprocess.run(["fusermount3", "-u", self.mnt], check=True)
        wait_until(lambda: exited(pid), timeout=60, what="accelfs to exit")

    def wait_serving(self, alive):
        """The daemon's pid once it serves; alive() says whether whatever started it still runs."""
        pid_file = os.path.join(self.state, "accelfs.pid")
        wait_until(lambda: not alive() or (os.path.exists(pid_file) and os.path.isdir(os.path.join(self.mnt, "ppu0"))),
                   timeout=120, what="the mount")
        self.assertTrue(alive(), "accelfs exited before it served")
        return int(slurp(pid_file))

    def stop_with(self, sig, preexec=None):
        proc = self.start("-f", preexec=preexec)
        pid = self.wait_serving(lambda: proc.poll() is None)
        os.kill(pid, sig)
        self.assertEqual(proc.wait(timeout=60), 0, f"accelfs stopped by {signal.Signals(sig).name}")
        self.assertFalse(os.path.ismount(self.mnt), "the daemon left its mount behind")

    def test_sigterm_exits_0(self):
        self.stop_with(signal.SIGTERM)

    def test_sigint_exits_0(self):
        self.stop_with(signal.SIGINT)

    def test_sigint_and_sigterm_ignored_and_blocked_at_exec_still_stop_it(self):
        def ignore_and_block():
            signal.signal(signal.SIGINT, signal.SIG_IGN)
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
            signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})

        proc = self.start("-f", preexec=ignore_and_block)
        pid = self.wait_serving(lambda: proc.poll() is None)
        masks = signal_masks(pid)
        for sig in (signal.SIGINT, signal.SIGTERM):
            self.assertFalse(has_signal(masks["SigIgn"], sig), f"{sig.name} is still ignored: {masks}")
            self.assertFalse(has_signal(masks["SigBlk"], sig), f"{sig.name} is still blocked: {masks}")
        os.kill(pid, signal.SIGINT)
        self.assertEqual(proc.wait(timeout=60), 0)
        self.assertFalse(os.path.ismount(self.mnt))

    def test_sigint_stops_a_daemon_a_shell_script_started_with_ampersand(self):
        # The shell's rule first: without job control, an asynchronous command starts with SIGINT ignored.
        probe = subprocess.run(["sh", "-c", "grep '^SigIgn' /proc/self/status & wait"], capture_output=True,
                               text=True, check=True)
        self.assertTrue(has_signal(int(probe.stdout.split()[1], 16), signal.SIGINT), probe.stdout)
        shell = subprocess.Popen(["sh", "-c", '"$0" -f --sim --state-dir="$1" "$2" & wait $!', ACCELFS, self.state,
                                  self.mnt], env=self.env, stdout=subprocess.DEVNULL,
                                 stderr=subprocess.DEVNULL)
        pid = self.wait_serving(lambda: shell.poll() is None)
        os.kill(pid, signal.SIGINT)
        self.assertEqual(shell.wait(timeout=60), 0, "the shell's wait: accelfs's exit status")
        self.assertFalse(os.path.ismount(self.mnt))

    def ended(self, how):
        """Start in the background, end the session with how(pid), and return the log's last lines."""
        res = self.run_daemon()
        self.assertEqual(res.returncode, 0, res.stderr)
        pid = int(slurp(os.path.join(self.state, "accelfs.pid")))
        how(pid)
        wait_until(lambda: exited(pid), timeout=60, what="accelfs to exit")
        return slurp(os.path.join(self.state, "accelfs.log"))

    def test_the_log_says_why_the_session_ended(self):
        """A stop asked of accelfs names its sender, an unmount is an unmount, and a connection aborted
        under a mounted tree (readers in flight get ECONNABORTED) is an error that says so: a test
        whose daemon went away reads which in the log it keeps (fs/stop_reason.h)."""
        log = self.ended(lambda pid: os.kill(pid, signal.SIGTERM))
        self.assertRegex(log, rf"(?m) notice: stopping: SIGTERM from pid {os.getpid()} \(python3?[^)]*\)$")
        self.assertNotIn("aborted", log)
        log = self.ended(lambda pid: subprocess.run(["fusermount3", "-u", self.mnt], check=True))
        self.assertRegex(log, rf"(?m) notice: unmounted {re.escape(self.mnt)} \(umount or fusermount3 -u\)$")
        self.assertNotIn("stopping:", log.split("serving /")[-1])

        def abort(pid):
            conn = os.minor(os.stat(self.mnt).st_dev)
            ctl = f"/sys/fs/fuse/connections/{conn}"
            if not os.path.exists(ctl):
                subprocess.run(["mount", "-t", "fusectl", "none", os.path.dirname(ctl)], check=False)
            with open(f"{ctl}/abort", "w") as f:
                f.write("1")
            self.aborted = conn

        log = self.ended(abort).split("serving /")[-1]
        self.assertRegex(log, rf"(?m) error: the FUSE connection {self.aborted} of {re.escape(self.mnt)} was "
                              r"aborted while still mounted .*nobody asked accelfs to stop")

    def test_a_log_that_cannot_be_opened_is_a_usage_error_that_changes_nothing(self):
        # A state directory a normal run left behind (records, the lock, the log), and one that does not exist.
        res = self.run_daemon()
        self.assertEqual(res.returncode, 0, res.stderr)
        os.mkdir(os.path.join(self.mnt, "ppu3", "mig", "4g.48gb", "job1"))
        self.unmount()
        fresh = self.state + "-fresh"
        self.addCleanup(subprocess.run, ["rm", "-rf", fresh], check=True)
        a_file = os.path.join(self.state, "accelfs.log")
        before = tree_state(self.state)
        for log, why in ((os.path.join(self.mnt + "-nowhere", "accelfs.log"), "its directory does not exist"),
                         (self.mnt, "Is a directory"),
                         (os.path.join(a_file, "accelfs.log"), "Not a directory")):
            for state in (self.state, fresh):
                for fg in ([], ["-f"]):
                    with self.subTest(log=log, state=state, foreground=bool(fg)):
                        res = self.run_daemon(f"--log={log}", *fg, state=state)
                        self.assertEqual(res.returncode, 2, res.stderr)
                        self.assertEqual(res.stdout, "")
                        self.assertIn(f"accelfs: --log={log}: the log file cannot be opened for appending ({why})",
                                      res.stderr)
                        self.assertRegex(res.stderr, r"(?m)^usage: ")
                        self.assertFalse(os.path.ismount(self.mnt), "a refused start mounted")
                        self.assertFalse(os.path.exists(fresh), "a refused start created its state directory")
                        self.assertEqual(tree_state(self.state), before, "a refused start changed the state directory")
        self.assertFalse(os.path.exists(self.mnt + "-nowhere"))
        # A log that can be opened still works, in the background too.
        log = os.path.join(self.state, "elsewhere.log")
        res = self.run_daemon(f"--log={log}")
        self.assertEqual(res.returncode, 0, res.stderr)
        self.unmount()
        self.assertRegex(slurp(log), r"(?m) info: serving /")


class PlainStartLog(NodeTestCase):
    def test_the_log_file_keeps_timestamps_and_levels(self):
        log = self.node.log()
        self.assertRegex(log, r"(?m)^\d{4}-\d\d-\d\dT\S+ accelfs\[\d+\] info: serving /")
        self.assertNotRegex(log, r"(?m)^<\d>")

    def test_stderr_in_the_background_is_the_log_file(self):
        """What a dying daemon writes to stderr (a failed assertion, the C library's abort, libfuse) is
        its last word: in the background it goes to the log file, not /dev/null; the log's own lines
        are not written twice."""
        pid = self.node.pid()
        log = os.path.join(self.node.state, "accelfs.log")
        self.assertEqual(os.stat(f"/proc/{pid}/fd/2").st_ino, os.stat(log).st_ino)
        self.assertEqual(os.readlink(f"/proc/{pid}/fd/1"), "/dev/null")
        lines = self.node.log().splitlines()
        self.assertEqual(len(lines), len(set(lines)), "a log line was written twice")


if __name__ == "__main__":
    unittest.main()
