# SPDX-License-Identifier: MIT
"""accelfs as a node service, on a mounted simulated node: node.json field by
field against the individual files of the same moment, mig/map against
mig/instances, /accel/metrics through promtool and against the files, the
node_exporter textfile, a node without a driver library, and the daemon under valgrind
(test_daemon_life.py is the process under a service manager: readiness, the journal, exit
statuses, the background log)."""
import errno
import json
import os
import re
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
from harness import ACCELFS, Node, NodeTestCase, daemon_under_valgrind, start_daemon, wait_until  # noqa: E402
from service_checks import check_map, check_node_json, metrics_of, promtool_check, quota_of, sanitizer_env  # noqa: E402

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
            # The guardian writes its log line just after the textfile.
            wait_until(lambda: "died without stopping" in n.log(), timeout=60, what="the guardian's log line")
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
        res = start_daemon([ACCELFS, f"--state-dir={node.state}", f"--cdi-dir={node.state}/cdi", node.mnt], node.mnt,
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
