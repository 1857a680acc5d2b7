# SPDX-License-Identifier: MIT
"""Test 4 of docs/kubernetes.md, continued (issue 35): what a running claim meets that Kubernetes
did not do, on the one-node cluster of nodecase.py.  A pod's instance is destroyed behind accelfs
(accel-smi on the simulated driver, as a person or a reboot would): the plugin carves the job
again at its placement, and the container, restarted, runs with its device.  A placement taken
outside Kubernetes after the scheduler chose it (the plugin held still while the pod is scheduled
and the placement is taken, then let go): the device is tainted accelfs.io/unservable, the pod is
evicted and its ReplicaSet's new pod runs at another placement; the job taken outside is left as
it was.  The same when a lost instance's placement is taken before its container exits: the device
is tainted accelfs.io/unservable=lost and the pod made again elsewhere.
"""
import json
import os
import signal
import sys
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import cluster  # noqa: E402
from nodecase import NodeCase, pod  # noqa: E402

HEALED = "Carved a lost instance again at its placement"
WAITS = "carved again once the containers given it exit"
UNSERVABLE = "accelfs.io/unservable"


class HealTest(NodeCase):
    def job_record(self, job):
        """The job in node.json: (card index, its record)."""
        for d in json.loads(self.node.read("node.json"))["devices"]:
            for j in d["jobs"]:
                if j["name"] == job:
                    return d["index"], j
        return None, None

    def destroy(self, job):
        """The job's instance destroyed through the simulated driver, not through accelfs."""
        index, j = self.job_record(job)
        self.node.smi("gpu", "mig", "-i", index, "-gi", j["gi"], "-ci", j["ci"], "-dci")
        self.node.smi("gpu", "mig", "-i", index, "-gi", j["gi"], "-dgi")

    def container(self, name):
        """(containerID, restartCount, running) of the pod's container."""
        cs = (self.cp.get("pod", name, "-n", "default").get("status", {}).get("containerStatuses") or [{}])[0]
        return cs.get("containerID"), cs.get("restartCount", 0), "running" in (cs.get("state") or {})

    def kill_container(self, name):
        """The container's process killed through containerd: the kubelet restarts it (restartPolicy Always)."""
        cid = self.container(name)[0].split("//", 1)[1]
        self.kn.ctr("tasks", "kill", "--signal", "SIGKILL", cid)

    def restarted(self, name, before):
        cluster.wait_until(lambda: (c := self.container(name))[1] > before and c[2], 300,
                           f"{name}'s container restarted and running")

    def test_1_a_lost_instance_is_carved_again_and_the_container_restarts_with_it(self):
        """Issue 35, observation 2: every container restart used to fail with `unresolvable CDI
        devices` once the instance was lost.  While the container given the lost instance runs,
        accelfs keeps the job's record (rmdir: EBUSY, the container attached): the plugin waits,
        neither carving nor tainting; the container killed, it carves the job again at its
        placement, and the kubelet's restart of the container resolves its CDI device."""
        self.cp.apply(pod("lost", profile="3g.71gb"))
        job, card, profile = self.check_pod("lost")
        placement = self.node.keyvals(card, "mig", profile, job, "status")["placement"]
        device = self.job_of("lost")[1]
        uid = self.cp.get("pod", "lost", "-n", "default")["metadata"]["uid"]
        restarts = self.container("lost")[1]
        self.destroy(job)
        cluster.wait_until(lambda: WAITS in self.plugin.proc.tail(100000), 120,
                           f"the plugin to wait for {job}'s container")
        self.assertEqual(self.node.keyvals(card, "mig", profile, job, "status")["state"], "lost")
        self.assertNotIn(UNSERVABLE, self.card_taints(card).get(device) or {},
                         f"{device} tainted while its container runs")
        self.assertTrue(self.container("lost")[2], "the container stopped")
        t0 = time.monotonic()
        self.kill_container("lost")
        self.restarted("lost", restarts)
        events = json.loads(self.cp.kubectl("get", "events", "-n", "default", "-o", "json",
                                            "--field-selector=involvedObject.name=lost").stdout)["items"]
        failed = sum(e.get("count") or 1 for e in events if e["reason"] in ("Failed", "BackOff"))
        print(f"heal: the container ran again {time.monotonic() - t0:.1f} s after it was killed, its job carved "
              f"again at {placement}; {failed} failed start(s) or back-off(s) on the way", file=sys.stderr)
        # The same pod, its claim's job carved again at the same placement, its restarted container
        # with the job's device nodes as they are now.
        self.assertIn(HEALED, self.plugin.proc.tail(100000))
        self.assertEqual(self.cp.get("pod", "lost", "-n", "default")["metadata"]["uid"], uid)
        self.assertEqual(self.check_pod("lost"), (job, card, profile))
        self.assertEqual(self.node.keyvals(card, "mig", profile, job, "status")["placement"], placement)
        self.settle("lost, healed and restarted")
        self.delete("lost")
        self.gone("lost", job, card, profile)
        self.settle("lost deleted")

    def replicaset(self, name, profile):
        p = pod(name, profile=profile)
        template = {"metadata": {"labels": {"test": name}}, "spec": p["spec"]}
        return {"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": name, "namespace": "default"},
                "spec": {"replicas": 1, "selector": {"matchLabels": {"test": name}}, "template": template}}

    def pods_of(self, name):
        return [p for p in self.cp.items("pods", "-n", "default", "-l", f"test={name}")
                if not p["metadata"].get("deletionTimestamp")]

    def test_2_a_placement_taken_behind_the_scheduler_ends_in_a_reschedule(self):
        """Issue 35, observation 3: the pod used to wait until a person deleted it.  The plugin is
        stopped (SIGSTOP: it neither publishes nor prepares), the pod created and allocated from the
        slices as they were, its placement taken by a mkdir on the node's tree, and the plugin let
        go: its prepare finds the placement held outside Kubernetes and taints the device."""
        name, profile = "taken", "3g.71gb"
        # Room for the pod at a second placement (3g.71gb has two on the simulated gpu0).
        self.cp.kubectl("delete", "pods", "-n", "default", "-l", "test=node", "--wait=true", timeout=300)
        cluster.wait_until(lambda: not self.jobs(), 300, "every job given back")
        os.kill(self.plugin.proc.p.pid, signal.SIGSTOP)
        try:
            self.cp.apply(self.replicaset(name, profile))
            first = cluster.wait_until(lambda: (p := self.pods_of(name)) and p[0], 120, f"{name}'s pod")["metadata"]
            claims = cluster.wait_until(lambda: [c for c in self.claims().values() if first["name"] in c[2]], 120,
                                        f"{first['name']}'s claim allocated")
            device = claims[0][1]
            card, prof, start, size = self.layout[device]
            self.assertEqual(prof, profile)
            self.node.mkdir(card, "mig", profile, "placements", str(start), "outside")
        finally:
            os.kill(self.plugin.proc.p.pid, signal.SIGCONT)
        self.rescheduled(name, first, device, start, size)

    def rescheduled(self, name, first, device, start, size):
        """The ReplicaSet's first pod is evicted (the taint eviction controller deletes it) and its next
        one runs at another device; the job taken outside, "outside" at the device's placement, is
        left as it was, and once it is gone the device is offered again without the taint."""
        card, profile = self.layout[device][:2]
        outside = self.node.keyvals(card, "mig", profile, "outside", "status")
        self.assertEqual(outside["placement"], f"{start}:{size}")
        cluster.wait_until(lambda: self.cp.kubectl("get", "pod", first["name"], check=False).returncode != 0, 300,
                           f"{first['name']} evicted")
        events = self.cp.kubectl("get", "events", "-n", "default", "-o", "json",
                                 f"--field-selector=involvedObject.name={first['name']}").stdout
        self.assertIn("DeviceTaintManagerEviction", [e["reason"] for e in json.loads(events)["items"]])
        again = cluster.wait_until(lambda: [p for p in self.pods_of(name) if p["metadata"]["uid"] != first["uid"]],
                                   120, f"{name}'s next pod")[0]["metadata"]["name"]
        self.check_pod(again)
        self.assertNotEqual(self.job_of(again)[1], device, "scheduled again at the tainted device")
        self.settle(f"{name} running elsewhere")
        # The job taken outside is as it was: the plugin neither removed nor moved it.
        self.assertEqual(self.node.keyvals(card, "mig", profile, "outside", "status"), outside)
        self.cp.kubectl("delete", "replicaset", name, "--wait=true", timeout=300)
        cluster.wait_until(lambda: not self.cp.items("pods", "-n", "default", "-l", f"test={name}"), 300,
                           f"{name}'s pods gone")
        cluster.wait_until(lambda: not self.jobs(), 300, "every job given back")
        self.settle(f"{name} deleted")
        self.assertEqual(self.node.keyvals(card, "mig", profile, "outside", "status"), outside)
        # Its holder gone, the placement is offered again, untainted: no claim holds the taint.
        os.rmdir(self.node.path(card, "mig", profile, "outside"))
        cluster.wait_until(lambda: (t := self.card_taints(card)) and device in t and not t[device], 120,
                           f"{device} offered again without {UNSERVABLE}")

    def test_3_a_lost_instance_whose_placement_was_taken_ends_in_a_reschedule(self):
        """Issue 35, observation 2, the other way out: the instance of a ReplicaSet's pod is lost and
        its placement taken outside Kubernetes while the container runs; the container killed, the
        plugin cannot carve the job again there, taints the device accelfs.io/unservable=lost, and
        the pod is evicted and made again elsewhere."""
        name, profile = "lost-taken", "3g.71gb"
        self.cp.apply(self.replicaset(name, profile))
        first = cluster.wait_until(lambda: (p := self.pods_of(name)) and p[0], 120, f"{name}'s pod")["metadata"]
        job, card, _ = self.check_pod(first["name"])
        device = self.job_of(first["name"])[1]
        start, size = self.layout[device][2:]
        self.destroy(job)
        cluster.wait_until(lambda: self.node.keyvals(card, "mig", profile, job, "status")["state"] == "lost", 120,
                           f"{job} lost")
        self.node.mkdir(card, "mig", profile, "placements", str(start), "outside")
        self.kill_container(first["name"])
        self.rescheduled(name, first, device, start, size)
        self.assertIn("A lost instance of a running claim cannot be carved again", self.plugin.proc.tail(100000))


if __name__ == "__main__":
    unittest.main(verbosity=2)
