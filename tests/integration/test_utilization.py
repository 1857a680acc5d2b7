# SPDX-License-Identifier: MIT
"""What each job uses (issue 36): <job>/utilization and <dev>/utilization from the driver's GPM
counters, MIG device memory and the card's energy counter, as the simulator is told to report them;
the same in node.json and /accel/metrics; a reused GPU instance id never carries a job's counters
into the next; a library or card without GPM says `unknown:` and why; an idle daemon samples nothing."""
import json
import os
import re
import time
import unittest

from harness import NodeTestCase

JOB = ("gpu0", "mig", "3g.71gb")
# A reading under a window old (ACCEL_USAGE_WINDOW_MS) is answered from the last one: wait one out
# before a read that must sample again.  A wait, not a timing assertion.
WINDOW_S = 1.05


def keyvals(text):
    return {k.strip(): v.strip() for k, _, v in (line.partition(":") for line in text.splitlines())}


class Utilization(NodeTestCase):

    def calls(self, family, fn):
        for line in self.node.smi(family, "sim", "calls").stdout.splitlines():
            name, count = line.split()
            if name == fn:
                return int(count)
        return 0  # `sim calls` lists the functions called at least once

    def usage(self, gi, sm=0, occ=0, dram=0, mem=0):
        self.node.smi("gpu", "sim", "usage", "-i", 0, "-gi", gi, "--sm", sm, "--occupancy", occ, "--dram", dram,
                      "--memory", mem)

    def test_values_set_by_the_simulator_in_the_file_node_json_and_metrics(self):
        n = self.node
        n.mkdir(*JOB, "train")
        st = n.keyvals(*JOB, "train", "status")
        self.usage(st["gi"], sm=80, occ=40, dram=12.5, mem=3 << 30)
        n.smi("gpu", "sim", "energy", "-i", 0, 1000000)
        u = keyvals(n.read(*JOB, "train", "utilization"))  # the first read waits one window
        self.assertEqual(u["sm_activity_percent"], "80.0")
        self.assertEqual(u["sm_occupancy_percent"], "40.0")
        self.assertEqual(u["dram_bandwidth_percent"], "12.5")
        self.assertEqual(u["sm_activity_mean_percent"], "80.0")
        self.assertEqual(u["memory_used_bytes"], str(3 << 30))
        self.assertEqual(int(u["memory_total_bytes"]) >> 20, 71424, "the MIG device's memory, not the card's")
        self.assertGreater(int(u["window_ms"]), 0)
        self.assertEqual(u["energy_estimate_joules"], "0.000", "no energy since first observed")
        self.assertEqual(u["energy_estimate_share"], "60/132 SMs")
        n.smi("gpu", "sim", "energy", "-i", 0, 2320000)  # 1320 J more on the card: 60/132 of it is the job's
        time.sleep(WINDOW_S)
        # The job's files are the same through the node-level view; the estimate is said to be one.
        u = keyvals(n.read("mig", "3g.71gb", "train", "utilization"))
        self.assertEqual(u["energy_estimate_joules"], "600.000")
        self.assertNotIn("energy_joules", u, "a job's energy is only ever an estimate")
        card = keyvals(n.read("gpu0", "utilization"))
        self.assertRegex(card["sm_activity_percent"], r"^\d+\.\d$", "the card's own GPM sample")
        self.assertEqual(card["energy_joules"], "0.000", "the card's counter since first observed")
        doc = json.loads(n.read("node.json"))
        gpu0 = [d for d in doc["devices"] if d["name"] == "gpu0"][0]
        job = [j for j in gpu0["jobs"] if j["name"] == "train"][0]
        self.assertEqual(job["utilization"]["memory_used_bytes"], 3 << 30)
        self.assertAlmostEqual(job["utilization"]["sm_activity_mean_percent"], 80.0, places=3)
        self.assertAlmostEqual(job["utilization"]["energy_estimate_joules"], 600.0, places=3)
        self.assertIn("utilization", gpu0)
        m = n.read("metrics")
        labels = (f'job="train",device="gpu0",profile="3g.71gb",gi="{st["gi"]}",GPU_I_ID="{st["gi"]}",'
                  f'ci="{st["ci"]}",uuid="{st["uuid"]}",UUID="{gpu0["uuid"]}",owner="0"')
        self.assertIn(f"accelfs_job_info{{{labels}}} 1\n", m)
        # The value series carry the job's key alone; the identity (DCGM's UUID and GPU_I_ID among it)
        # is the info series', joined on (job, device): docs/operations.md's PromQL.
        key = 'job="train",device="gpu0"'
        self.assertIn(f"accelfs_job_memory_used_bytes{{{key}}} {3 << 30}\n", m)
        self.assertRegex(m, re.escape(f"accelfs_job_sm_active_ratio{{{key}}} ") + r"0\.8\n")
        self.assertRegex(m, re.escape(f"accelfs_job_sm_occupancy_ratio{{{key}}} ") + r"0\.4\n")
        self.assertRegex(m, re.escape(f"accelfs_job_dram_active_ratio{{{key}}} ") + r"0\.125\n")
        self.assertRegex(m, re.escape(f"accelfs_job_energy_estimate_joules{{{key}}} ") + r"600(\.0*)?\n")
        series = re.findall(r"^(accelfs_job_[a-z_]+)\{([^}]*)\}", m, re.M)
        info_keys = {tuple(re.findall(r'(job|device)="([^"]*)"', lab)) for name, lab in series
                     if name == "accelfs_job_info"}
        for name, lab in series:
            if name in ("accelfs_job_info", "accelfs_job_health"):
                continue
            self.assertEqual([k for k, _ in re.findall(r'(\w+)="([^"]*)"', lab)], ["job", "device"], name)
            self.assertIn(tuple(re.findall(r'(job|device)="([^"]*)"', lab)), info_keys, f"{name} joins an info series")

    def test_a_reused_gpu_instance_id_starts_from_nothing(self):
        n = self.node
        n.mkdir(*JOB, "first")
        gi = n.keyvals(*JOB, "first", "status")["gi"]
        self.usage(gi, sm=90, mem=5 << 30)
        n.smi("gpu", "sim", "energy", "-i", 0, 5000000)
        u = keyvals(n.read(*JOB, "first", "utilization"))
        self.assertEqual(u["sm_activity_percent"], "90.0")
        n.smi("gpu", "sim", "energy", "-i", 0, 7640000)
        time.sleep(WINDOW_S)
        self.assertEqual(keyvals(n.read(*JOB, "first", "utilization"))["energy_estimate_joules"], "1200.000")
        n.read("metrics")  # a scrape keeps its own samples of the first job too
        os.rmdir(n.path(*JOB, "first"))
        n.mkdir(*JOB, "second")
        self.assertEqual(n.keyvals(*JOB, "second", "status")["gi"], gi, "the driver gave the id again")
        u = keyvals(n.read(*JOB, "second", "utilization"))
        self.assertEqual(u["sm_activity_percent"], "0.0", "the first job's counters are not the second's")
        self.assertEqual(u["sm_activity_peak_percent"], "0.0")
        self.assertEqual(u["memory_used_peak_bytes"], "0")
        self.assertEqual(u["energy_estimate_joules"], "0.000", "the second job's energy starts when it does")

    def test_a_library_or_card_without_gpm_says_unknown_and_why(self):
        n = self.node
        n.mkdir("ppu3", "mig", "4g.48gb", "job1")
        u = keyvals(n.read("ppu3", "mig", "4g.48gb", "job1", "utilization"))
        self.assertRegex(u["sm_activity_percent"], r"^unknown: .*libhgml\.so has no hgmlGpmSampleAlloc")
        self.assertRegex(u["energy_estimate_joules"], r"^unknown: .*has no hgmlDeviceGetTotalEnergyConsumption")
        self.assertRegex(u["memory_used_bytes"], r"^\d+$", "memory is still known")
        n.mkdir(*JOB, "nogpm")
        n.smi("gpu", "sim", "gpm", "-i", 0, "off")
        u = keyvals(n.read(*JOB, "nogpm", "utilization"))
        self.assertEqual(u["sm_activity_percent"], "unknown: gpu0 has no GPU performance monitoring "
                         "(GPM needs a Hopper or later card)")
        self.assertNotIn("accelfs_job_sm_active_ratio{", n.read("metrics"), "no series where the driver cannot say")
        doc = json.loads(n.read("node.json"))
        job = [j for d in doc["devices"] for j in d["jobs"] if j["name"] == "nogpm"][0]
        self.assertIsNone(job["utilization"]["sm_activity_percent"])
        self.assertIn("no GPU performance monitoring", job["utilization"]["gpm_unknown"])

    def test_an_idle_daemon_samples_nothing_and_a_stat_does_not_either(self):
        n = self.node
        n.mkdir(*JOB, "idle")
        n.smi("gpu", "sim", "calls", "--reset")
        n.smi("ppu", "sim", "calls", "--reset")
        time.sleep(1.0)  # several poll passes
        os.stat(n.path(*JOB, "idle", "utilization"))
        os.listdir(n.path(*JOB, "idle"))
        for fn in ("GpmMigSampleGet", "GpmSampleGet", "GpmMetricsGet", "DeviceGetTotalEnergyConsumption"):
            self.assertEqual(self.calls("gpu", fn), 0, fn)
        n.read(*JOB, "idle", "utilization")
        self.assertEqual(self.calls("gpu", "GpmMigSampleGet"), 2, "one pair for the first read")


if __name__ == "__main__":
    unittest.main()
