# SPDX-License-Identifier: MIT
"""accelfs as a node service, on a mounted simulated node: node.json field by
field against the individual files of the same moment, mig/map against
mig/instances, /accel/metrics through promtool and against the files, the
node_exporter textfile, readiness over a notify socket as systemd reads it,
journal priorities on stderr, and the exit statuses a service manager reads."""
import errno
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
from harness import ACCELFS, ACCEL_SMI, Node, NodeTestCase, daemon_under_valgrind, wait_until  # noqa: E402
from service_checks import check_map, check_node_json, metrics_of, promtool_check, quota_of  # noqa: E402

DEVICE_RE = re.compile(r"^(ppu|gpu)\d+$")


def slurp(path):
    with open(path) as f:
        return f.read()


class Populated(NodeTestCase):
    """Jobs on both families and at node level, a foreign instance, a card with the mode off."""

    poll = 5.0  # an idle window: the files and node.json must come from the same snapshot
    grace = 3600.0  # the foreign instance stays foreign

    def setUp(self):
        super().setUp()
        n = self.node
        with open(n.path("quota"), "w") as f:  # root's jobs, under limits of its own and of its group
            f.write("user:0 slices=64 4g.48gb=8 jobs=40\ngroup:0 jobs=50\ndefault jobs=1\n")
        n.mkdir("ppu3", "mig", "4g.48gb", "job1")
        n.mkdir("gpu0", "mig", "3g.71gb", "jobg")
        n.mkdir("mig", "1g.18gb", "job2")
        n.mkdir("ppu4", "mig", "8g.96gb", "big")
        n.smi("ppu", "mig", "-i", 6, "-cgi", 5, "-C")
        n.smi("ppu", "-i", 5, "-mig", 0)
        wait_until(lambda: "job=-" in n.read("ppu6", "mig", "instances"), timeout=30, what="the foreign instance")
        wait_until(lambda: n.read("ppu5", "mig", "mode").strip() == "disabled", timeout=30, what="ppu5 off")


class NodeJson(Populated):
    def test_every_field_matches_the_files_of_the_same_snapshot(self):
        problems = check_node_json(self.node)
        self.assertEqual(problems, [], "\n".join(problems))

    def test_node_json_follows_a_change(self):
        n = self.node
        before = json.loads(n.read("node.json"))
        os.rmdir(n.path("ppu3", "mig", "4g.48gb", "job1"))
        after = json.loads(n.read("node.json"))
        self.assertGreater(after["generation"], before["generation"])
        jobs = [j["name"] for d in after["devices"] for j in d["jobs"]]
        self.assertNotIn("job1", jobs)
        self.assertEqual(check_node_json(n), [])


class Map(Populated):
    def test_every_map_draws_its_instances(self):
        n = self.node
        for dev in sorted(e for e in os.listdir(n.mnt) if DEVICE_RE.match(e)):
            with self.subTest(dev=dev):
                self.assertEqual(check_map(n, dev), [])

    def test_map_follows_mkdir_and_rmdir(self):
        n = self.node
        first = n.read("ppu3", "mig", "map")  # now in the page cache: the change must drop it
        self.assertIn("A job=job1 profile=4g.48gb gi=0 placement=0:4 state=ready", first)
        n.mkdir("ppu3", "mig", "4g.48gb", "job3")
        self.assertIn("job=job3", n.read("ppu3", "mig", "map"))
        self.assertIn(". free=- slices=0/8", n.read("ppu3", "mig", "map"))
        os.rmdir(n.path("ppu3", "mig", "4g.48gb", "job1"))
        os.rmdir(n.path("ppu3", "mig", "4g.48gb", "job3"))
        self.assertEqual(n.read("ppu3", "mig", "map"), "slice 0 1 2 3 4 5 6 7\n      . . . . . . . .\n"
                         ". free=0:8 slices=8/8\n")
        self.assertEqual(check_map(n, "ppu6"), [])
        self.assertIn("foreign", n.read("ppu6", "mig", "map"))

    def test_map_of_a_card_with_the_mode_off(self):
        self.assertEqual(self.node.read("ppu5", "mig", "map"), "MIG mode is disabled: no slices to draw\n")


class Metrics(Populated):
    def test_promtool_accepts_it(self):
        self.assertEqual(promtool_check(self.node.read("metrics")), "")

    def test_gauges_match_the_files(self):
        n = self.node
        m = metrics_of(n)
        for dev in sorted(e for e in os.listdir(n.mnt) if DEVICE_RE.match(e)):
            mode = n.read(dev, "mig", "mode").split()[0]
            self.assertEqual(m[("accelfs_device_mig_enabled", (("device", dev),))], int(mode == "enabled"))
            refused = n.keyvals(dev, "info")["state"] != "ok"
            self.assertEqual(m[("accelfs_device_refused", (("device", dev),))], int(refused))
            lines = n.read(dev, "mig", "instances").splitlines()
            foreign = sum(" job=- " in line for line in lines)
            self.assertEqual(m[("accelfs_instances", (("device", dev), ("owner", "foreign")))], foreign)
            self.assertEqual(m[("accelfs_instances", (("device", dev), ("owner", "job")))], len(lines) - foreign)
            states = {"ready": 0, "lost": 0, "removing": 0}
            for prof in sorted(os.listdir(n.path(dev, "mig"))):
                if not os.path.isdir(n.path(dev, "mig", prof)):
                    continue
                key = (("device", dev), ("profile", prof))
                self.assertEqual(m[("accelfs_profile_available", key)], n.available(dev, prof))
                self.assertEqual(m[("accelfs_profile_capacity", key)],
                                 int(n.keyvals(dev, "mig", prof, "info")["capacity"]))
                jobs = [j for j in os.listdir(n.path(dev, "mig", prof))
                        if j != "placements" and os.path.isdir(n.path(dev, "mig", prof, j))]
                self.assertEqual(m[("accelfs_profile_jobs", key)], len(jobs))
                for j in jobs:
                    states[n.keyvals(dev, "mig", prof, j, "status")["state"]] += 1
            for state, count in states.items():
                self.assertEqual(m[("accelfs_jobs", (("device", dev), ("state", state)))], count, (dev, state))
        slot = n.keyvals("dies", "slot")
        self.assertEqual(m[("accelfs_dies_slot_swaps_total", ())], int(slot["swaps"]))
        self.assertEqual(m[("accelfs_dies_slot_holders", ())], int(slot["holders"]))
        self.assertEqual(m[("accelfs_dies_slot_waiters", ())], int(slot["waiters"]))
        self.assertEqual(m[("accelfs_die_enabled", (("die", "3"),))], int(n.read("dies", "3", "enabled")))
        self.assertEqual(m[("accelfs_devices_refused", ())], 0)
        rows, _ = quota_of(n)
        self.assertEqual(set(rows), {"user:0", "group:0"})
        for principal, (_, limits) in rows.items():
            for limit, (used, lim) in limits.items():
                key = (("limit", limit), ("principal", principal))
                self.assertEqual(m[("accelfs_quota_used", key)], used)
                self.assertEqual(m[("accelfs_quota_limit", key)], lim)
        self.assertEqual(rows["user:0"][1]["jobs"][0], 4)  # the four jobs of setUp, all root's

    def test_slot_waits_are_timed(self):
        n = self.node
        count = ("accelfs_dies_slot_wait_seconds_count", ())
        slow = ("accelfs_dies_slot_wait_seconds_bucket", (("le", "0.25"),))
        before = metrics_of(n)
        with open(n.path("dies", "3", "vram"), "rb"):
            pass
        # Another process holds die 1 for a second: the next open waits that long for the slot.
        holder = subprocess.Popen([os.environ["BARSWAP"], f"--sim={n.state}", "acquire", "1", "1"],
                                  stdout=subprocess.PIPE, text=True)
        self.assertTrue(holder.stdout.readline().startswith("acquired 1"))
        with open(n.path("dies", "2", "vram"), "rb"):
            pass
        self.assertEqual(holder.wait(timeout=30), 0)
        holder.stdout.close()
        after = metrics_of(n)
        self.assertEqual(after[count] - before[count], 2)
        self.assertEqual(after[slow] - before[slow], 1, "the open that waited for the slot is not the fast one")
        self.assertEqual(promtool_check(n.read("metrics")), "")

    def test_counters_follow_mkdir_and_rmdir(self):
        n = self.node
        before = metrics_of(n)
        n.mkdir("ppu3", "mig", "4g.48gb", "job3")
        self.assertEqual(n.errno_of(os.mkdir, n.path("ppu3", "mig", "4g.48gb", "job4")), errno.ENOSPC)
        os.rmdir(n.path("ppu3", "mig", "4g.48gb", "job3"))
        after = metrics_of(n)

        def grew(name, *labels):
            return after[(name, tuple(labels))] - before[(name, tuple(labels))]
        self.assertEqual(grew("accelfs_carves_total"), 1)
        self.assertEqual(grew("accelfs_carve_failures_total", ("reason", "no_space")), 1)
        self.assertEqual(grew("accelfs_reclaims_total"), 1)
        self.assertEqual(grew("accelfs_carve_duration_seconds_count"), 1)
        self.assertEqual(grew("accelfs_reclaim_duration_seconds_count"), 1)


class Textfile(unittest.TestCase):
    # The live series (what jobs use) are sampled by a scrape of the file, never by the textfile
    # writer, which writes unasked: the textfile is the metrics without them (docs/tree.md).
    LIVE = ("accelfs_job_sm_active_ratio", "accelfs_job_sm_occupancy_ratio", "accelfs_job_dram_active_ratio",
            "accelfs_job_memory_used_bytes", "accelfs_job_energy_estimate_joules")

    def metrics_without_live(self, n):
        def live(line):
            name = line.split()[2] if line.startswith("# ") else line.split("{")[0].split()[0]
            return name in self.LIVE
        return "".join(line for line in n.read("metrics").splitlines(keepends=True) if not live(line))

    def test_the_textfile_follows_the_metrics_and_goes_with_the_daemon(self):
        outdir = tempfile.mkdtemp(prefix="accelfs-textfile-")
        prom = os.path.join(outdir, "accelfs.prom")
        n = Node(extra=[f"--metrics-textfile={outdir}"])
        try:
            n.start()
            self.assertEqual(os.listdir(outdir), ["accelfs.prom"])  # written before the mount serves
            self.assertEqual(without_write_time(slurp(prom)), self.metrics_without_live(n))
            n.mkdir("ppu3", "mig", "4g.48gb", "job1")
            want = self.metrics_without_live(n)
            self.assertIn('accelfs_profile_jobs{device="ppu3",profile="4g.48gb"} 1', want)
            wait_until(lambda: without_write_time(slurp(prom)) == want, timeout=5,
                       what="the textfile to follow the mkdir")
            self.assertEqual(promtool_check(slurp(prom)), "")
            self.assertEqual(os.listdir(outdir), ["accelfs.prom"])  # no temporary file left behind
            n.stop()
            self.assertEqual(os.listdir(outdir), [], "a stopped daemon's metrics were left behind")
            self.assertEqual(n.sanitizer_reports(), "")
        finally:
            n.cleanup()
            for name in os.listdir(outdir):
                os.unlink(os.path.join(outdir, name))
            os.rmdir(outdir)


    def test_a_quiet_daemon_rewrites_it_and_a_killed_one_leaves_it_down(self):
        outdir = tempfile.mkdtemp(prefix="accelfs-textfile-")
        prom = os.path.join(outdir, "accelfs.prom")
        n = Node(extra=[f"--metrics-textfile={outdir}"])
        try:
            n.start()
            first = slurp(prom)
            self.assertIn("accelfs_up 1", first.splitlines(), "no accelfs_up 1 in the running daemon's textfile")
            self.assertEqual(promtool_check(first), "")
            # Nothing changes on the node, yet the file is written again with a later time: a heartbeat.
            stamp = write_time(first)
            wait_until(lambda: write_time(slurp(prom)) > stamp, timeout=60,
                       what="the textfile of a quiet daemon to be written again")
            self.assertEqual(without_write_time(slurp(prom)), without_write_time(first))
            n.kill9()
            # The guardian marks it: no series of the dead daemon looks current.
            wait_until(lambda: "\naccelfs_up 0\n" in slurp(prom), timeout=60,
                       what="the textfile to say the daemon is down")
            down = slurp(prom)
            self.assertEqual(promtool_check(down), "")
            self.assertFalse("accelfs_profile_jobs" in down, f"a dead daemon's series are left:\n{down[:2000]}")
            self.assertGreaterEqual(write_time(down), stamp)
            self.assertEqual(os.listdir(outdir), ["accelfs.prom"])  # no temporary file left behind
            self.assertIn("died without stopping", n.log())
        finally:
            n.cleanup()
            for name in os.listdir(outdir):
                os.unlink(os.path.join(outdir, name))
            os.rmdir(outdir)


class NoDriver(unittest.TestCase):
    def test_a_node_without_a_driver_library_says_so(self):
        """No T-Head SDK in PPU_HOME and (on this machine) no NVML: the tree is empty, and metrics and
        node.json say which library was looked for and why it is not there."""
        node = Node()
        env = dict(sanitizer_env(node.state), PPU_HOME=node.state)
        # Nor the simulators: meson's LD_LIBRARY_PATH can lead the loader to build/sim's libraries.
        for var in ("ACCELFS_SIM_LIBDIR", "LD_LIBRARY_PATH"):
            env.pop(var, None)
        # No --sim: the CDI directory would default to the system's (a scripts/try node may hold it).
        res = subprocess.run([ACCELFS, f"--state-dir={node.state}", f"--cdi-dir={node.state}/cdi", node.mnt],
                             capture_output=True, text=True, timeout=60, env=env)
        self.assertEqual(res.returncode, 0, res.stderr)
        node.mounted = True
        try:
            doc = json.loads(node.read("node.json"))
            fams = {f["name"]: f for f in doc["families"]}
            self.assertEqual(sorted(fams), ["gpu", "ppu"])
            ppu = fams["ppu"]
            self.assertEqual((ppu["vendor"], ppu["library"], ppu["loaded"], ppu["reason"]),
                             ("T-Head", "libhgml.so", False, "not_found"), ppu["why"])
            self.assertIn("libhgml.so", ppu["why"])
            metrics = node.read("metrics")
            self.assertEqual(promtool_check(metrics), "")
            self.assertIn('accelfs_family_library_loaded{family="ppu",vendor="T-Head",library="libhgml.so",'
                          'reason="not_found"} 0', metrics.splitlines())
            gpu = fams["gpu"]
            self.assertEqual(gpu["vendor"], "NVIDIA")
            if not gpu["loaded"]:  # a machine with NVIDIA's driver loads it, and shows its GPUs
                self.assertEqual((gpu["library"], gpu["reason"]), ("libnvidia-ml.so.1", "not_found"))
                self.assertIn('accelfs_family_library_loaded{family="gpu",vendor="NVIDIA",library="libnvidia-ml.so.1",'
                              'reason="not_found"} 0', metrics.splitlines())
                self.assertEqual(doc["devices"], [])
        finally:
            node.stop()
            reports = node.sanitizer_reports()
            node.cleanup()
        self.assertEqual(reports, "")


WRITE_TIME = "accelfs_textfile_write_timestamp_seconds"


def write_time(text):
    """The textfile's write time (Unix seconds), which only the textfile carries."""
    for line in text.splitlines():
        if line.startswith(WRITE_TIME + " "):
            return float(line.split()[1])
    raise AssertionError(f"no {WRITE_TIME} in the textfile:\n{text}")


def without_write_time(text):
    """The textfile less its write time: the text of /accel/metrics."""
    return "".join(line for line in text.splitlines(keepends=True) if WRITE_TIME not in line)


def sanitizer_env(state, env_extra=None):
    """The environment with the sanitizers reporting into files under state (a daemon may have no stderr)."""
    env = dict(os.environ, **(env_extra or {}))
    env["ASAN_OPTIONS"] = f"log_path={state}/sanitizer:" + env.get("ASAN_OPTIONS", "")
    env["UBSAN_OPTIONS"] = f"log_path={state}/sanitizer:print_stacktrace=1:" + env.get("UBSAN_OPTIONS", "")
    return env


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
        wait_until(lambda: not os.path.exists(f"/proc/{pid}"), timeout=60, what="accelfs to exit")

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


@unittest.skipIf(os.environ.get("ACCELFS_NO_VALGRIND"), "ASan and valgrind exclude each other (scripts/test --sanitize)")
class UnderValgrind(unittest.TestCase):
    def test_metrics_node_json_map_and_textfile(self):
        outdir = tempfile.mkdtemp(prefix="accelfs-vg-textfile-")
        try:
            with daemon_under_valgrind(self, "ppu3/mig", extra=[f"--metrics-textfile={outdir}"]) as mnt:
                os.mkdir(os.path.join(mnt, "ppu3", "mig", "4g.48gb", "job1"))
                for path in ("metrics", "node.json", "ppu3/mig/map", "gpu0/mig/map"):
                    with open(os.path.join(mnt, path)) as f:
                        self.assertTrue(f.read())
                with open(os.path.join(mnt, "dies", "3", "vram"), "rb"):
                    pass
                wait_until(lambda: "accelfs_dies_slot_wait_seconds_count 1" in slurp(os.path.join(outdir, "accelfs.prom")),
                           timeout=30, what="the textfile to count the slot wait")
                os.rmdir(os.path.join(mnt, "ppu3", "mig", "4g.48gb", "job1"))
            self.assertEqual(os.listdir(outdir), [])
        finally:
            for name in os.listdir(outdir):
                os.unlink(os.path.join(outdir, name))
            os.rmdir(outdir)


if __name__ == "__main__":
    unittest.main()
