# SPDX-License-Identifier: MIT
"""What the one-node cluster tests (test_node.py, test_heal.py) share: the node (accelfs over a
simulated node, its CDI directory), the control plane of cluster.py at the node's address, a real
kubelet and containerd (kubenode.py) and accelfs-dra as a host process, set up once per class; a
pod that lists its device nodes; and the checks that the tree's jobs and the API server's claims
agree one to one, each job at its claim's placement.
"""
import json
import os
import shutil
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "integration"))

import cluster  # noqa: E402
import images  # noqa: E402
import kubenode  # noqa: E402
from harness import Node  # noqa: E402
from test_control_plane import spans  # noqa: E402

NODE = "node-c"
LIST_DEVICES = "find /dev -type c | sort | while read f; do stat -c '%n %t %T' $f; done; echo END; exec sleep 3600"


def pod(name, profile="4g.48gb", claim=True):
    c = {"name": "main", "image": images.BUSYBOX, "imagePullPolicy": "Never",
         "command": ["sh", "-c", LIST_DEVICES], "resources": {}}
    spec = {"automountServiceAccountToken": False, "terminationGracePeriodSeconds": 1,
            "enableServiceLinks": False, "containers": [c]}
    if claim:
        spec["resourceClaims"] = [{"name": "mig", "resourceClaimTemplateName": f"one-{profile}"}]
        c["resources"]["claims"] = [{"name": "mig"}]
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "default", "labels": {"test": "node"}}, "spec": spec}


class NodeCase(unittest.TestCase):
    maxDiff = None

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="accelfs-k8s-t4-")
        # Removed last (class cleanups run in reverse): the node's CDI directory and the logs are in it.
        cls.addClassCleanup(shutil.rmtree, cls.tmp, ignore_errors=True)
        cls.cdi = os.path.join(cls.tmp, "cdi")
        cls.node = Node(extra=[f"--cdi-dir={cls.cdi}"]).start()
        cls.addClassCleanup(cls.node.cleanup)
        # At the node's address: the DaemonSet's plugin (test 7) reaches the API server from its pod.
        cls.cp = cluster.ControlPlane(address=kubenode.node_ip()).start(nodes=[NODE])
        cls.addClassCleanup(cls.cp.stop)
        classes = cluster.subprocess.run([cluster.program("accelfs-dra"), "classes", f"--mount={cls.node.mnt}"],
                                         capture_output=True, text=True, check=True).stdout
        cls.cp.kubectl("apply", "-f", "-", input=classes)
        for profile in ("4g.48gb", "3g.71gb"):
            cls.cp.apply({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
                          "metadata": {"name": f"one-{profile}", "namespace": "default"},
                          "spec": {"spec": {"devices": {"requests": [
                              {"name": "mig", "exactly": {"deviceClassName": f"{profile}.accelfs.io"}}]}}}})
        cls.kn = kubenode.KubeNode(cls.cp, NODE, cls.cdi)
        cls.addClassCleanup(cls.kn.cleanup)
        cls.kn.start()
        cls.plugin = cluster.Plugin(cls.cp, NODE, cls.node.mnt, cls.cdi, cls.kn.kubelet_dir,
                                    os.path.join(cls.tmp, "accelfs-dra.log")).start()
        cls.addClassCleanup(cls.plugin.proc.stop)
        cls.layout = spans(json.loads(cls.node.read("node.json")))
        cluster.wait_until(lambda: len(cls.cp.items("resourceslices")) > 0, 120, "the node's slices")

    def run(self, result=None):
        failures = len(result.failures) + len(result.errors) if result else 0
        out = super().run(result)
        if result and len(result.failures) + len(result.errors) > failures:
            pods = [(p["metadata"]["name"], p.get("status", {}).get("phase"),
                     p.get("status", {}).get("containerStatuses"), p.get("status", {}).get("conditions"))
                    for p in self.cp.items("pods", "-A")]
            events = self.cp.kubectl("get", "events", "-A", check=False).stdout[-4000:]
            for p in self.cp.items("pods", "-n", "accelfs-dra", "-l", "app=accelfs-dra"):
                for previous in ("--previous=true", "--previous=false"):
                    out = self.cp.kubectl("logs", "-n", "accelfs-dra", p["metadata"]["name"], previous, "--tail=40",
                                          check=False)
                    events += f"\n---- {p['metadata']['name']} {previous} ----\n{out.stdout}{out.stderr}"
            print(f"{self.cp.logs()}\n{self.kn.logs()}\n---- accelfs-dra ----\n{self.plugin.proc.tail(80)}\n"
                  f"---- accelfs ----\n{self.node.log()[-3000:]}\npods: {json.dumps(pods)[:4000]}\nevents:\n{events}",
                  file=sys.stderr)
        return out

    # -- what the tree and the API server hold --------------------------------------------------
    def jobs(self):
        """{job: (card, profile, start, size, state)} of the plugin's jobs in the tree."""
        out = {}
        for d in json.loads(self.node.read("node.json"))["devices"]:
            for j in d["jobs"]:
                if j["name"].startswith("k8s-"):
                    pl = j.get("placement") or {"start": -1, "size": 0}
                    out[j["name"]] = (d["name"], j["profile"], pl["start"], pl["size"], j["state"])
        return out

    def claims(self):
        """{job the claim's device should be: (claim, device, pods it is reserved for)} of allocated claims."""
        out = {}
        for c in self.cp.items("resourceclaims", "-n", "default"):
            alloc = c.get("status", {}).get("allocation")
            if not alloc:
                continue
            for i, r in enumerate(alloc["devices"]["results"]):
                job = f"k8s-{c['metadata']['uid']}-{i}"
                self.assertNotIn(job, out)
                out[job] = (c["metadata"]["name"], r["device"],
                            [o["name"] for o in c["status"].get("reservedFor", [])])
        return out

    def agree(self):
        """The jobs are exactly the claims reserved by running pods, each at its claim's placement."""
        running = {p["metadata"]["name"] for p in self.cp.items("pods", "-n", "default")
                   if p.get("status", {}).get("phase") == "Running" and not p["metadata"].get("deletionTimestamp")}
        pods = {p["metadata"]["name"] for p in self.cp.items("pods", "-n", "default")}
        jobs, claims = self.jobs(), self.claims()
        want = {j for j, (_, _, owners) in claims.items() if set(owners) & running}
        if not want <= set(jobs) or not set(jobs) <= set(claims):
            return False
        for job, (claim, device, owners) in claims.items():
            if job in jobs:
                card, profile, start, size = self.layout[device]
                self.assertEqual(jobs[job], (card, profile, start, size, "ready"), f"{job} of claim {claim}")
        # A job whose pod is gone is not kept.
        return all(set(claims[j][2]) & pods for j in jobs)

    def settle(self, what):
        cluster.wait_until(self.agree, 300, f"the tree's jobs and the API server's claims to agree ({what})")
        devices = [claim[1] for claim in self.claims().values()]
        self.assertEqual(len(devices), len(set(devices)), f"a device allocated twice: {devices}")
        spans_taken = [self.layout[d] for d in devices]
        for i, a in enumerate(spans_taken):
            for b in spans_taken[i + 1:]:
                self.assertFalse(a[0] == b[0] and a[2] < b[2] + b[3] and b[2] < a[2] + a[3], f"{a} and {b} overlap")

    def running(self, name):
        p = self.cp.get("pod", name, "-n", "default")
        return p.get("status", {}).get("phase") == "Running"

    def seen(self, name):
        """The character devices the pod's container lists: {path: (major, minor)}."""
        out = cluster.wait_until(lambda: (o := self.cp.kubectl("logs", name, check=False).stdout) and "END" in o and o,
                                 120, f"{name}'s device list")
        seen = {}
        for line in out.splitlines():
            if line == "END":
                break
            path, major, minor = line.split()
            seen[path] = (int(major, 16), int(minor, 16))
        return seen

    def job_of(self, name):
        claim = None
        for c in self.cp.items("resourceclaims", "-n", "default"):
            if any(o["name"] == name for o in c.get("status", {}).get("reservedFor", [])):
                claim = c
        self.assertIsNotNone(claim, f"no claim reserved for {name}")
        return f"k8s-{claim['metadata']['uid']}-0", claim["status"]["allocation"]["devices"]["results"][0]["device"]

    def check_pod(self, name):
        """The pod runs, and its container has exactly its job's accelerator nodes."""
        cluster.wait_until(lambda: self.running(name), 300, f"pod {name} Running")
        job, device = self.job_of(name)
        card, profile, start, size = self.layout[device]
        status = self.node.keyvals(card, "mig", profile, job, "status")
        self.assertEqual(status["placement"], f"{start}:{size}")
        want = {}
        for line in self.node.read(card, "mig", profile, job, "devices").splitlines():
            path, _, numbers = line.split()
            want[path] = tuple(int(x) for x in numbers.split(":"))
        accel = {p: v for p, v in self.seen(name).items() if p.startswith(("/dev/alixpu", "/dev/nvidia"))}
        self.assertEqual(accel, want, f"{name}'s container and job {job}'s devices")
        return job, card, profile

    def delete(self, name):
        self.cp.kubectl("delete", "pod", name, "--wait=false")

    def gone(self, name, job, card, profile):
        cluster.wait_until(lambda: self.cp.kubectl("get", "pod", name, check=False).returncode != 0, 300,
                           f"pod {name} gone")
        cluster.wait_until(lambda: not os.path.exists(self.node.path(card, "mig", profile, job)), 300,
                           f"job {job} given back")

    # -- card state and health (issue 32) ---------------------------------------------------------
    def device_health(self, name):
        """The health the kubelet shows for the pod's devices: {resourceID: health}."""
        out = {}
        for cs in self.cp.get("pod", name, "-n", "default").get("status", {}).get("containerStatuses") or []:
            for r in cs.get("allocatedResourcesStatus") or []:
                for res in r.get("resources") or []:
                    out[res.get("resourceID")] = res.get("health")
        return out

    def card_taints(self, card):
        """The taint keys of the card's published devices: {device: {key: effect}}."""
        out = {}
        for s in self.cp.items("resourceslices"):
            for d in s["spec"].get("devices") or []:
                if d["name"].startswith(f"{card}-"):
                    out[d["name"]] = {t["key"]: t["effect"] for t in d.get("taints") or []}
        return out

    def container_of(self, name):
        cs = self.cp.get("pod", name, "-n", "default")["status"]["containerStatuses"][0]
        return cs.get("containerID"), cs.get("restartCount")

