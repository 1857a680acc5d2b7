# SPDX-License-Identifier: MIT
"""Test 5 of docs/kubernetes.md: scale, simulated.  One real control plane (cluster.py) and NODES
nodes (32 unless ACCELFS_K8S_SCALE_NODES says otherwise), each a Node object made here (no kubelet:
scheduling needs none), its own accelfs over eight simulated H200s (eight-h200.json) and its own
accelfs-dra publishing that node's pool.  Pods with a ResourceClaim each are bound by the real
scheduler; nothing is prepared (tests 3 and 4 do that).

1. Whole cards: every node publishes plain devices, one per card and no counters (what a driver of
   whole cards publishes; the test writes those slices, the plugins are not started yet), as many as
   the pods need; PER_NODE pods a node each ask one.
2. Partitions: those slices gone, the plugins publish; the same number of pods, of mixed profiles
   (MIX), each ask one partition.
3. Full: MORE of that again, more than the cards hold.

In 1 and 2 the scheduler is stopped while the pods are made and started once they all are, so it
meets them all at once, in name order; throughput is the rate of its `Scheduled` events, first to
last, and its CPU time per pod.  Asserted: every allocation is a placement of the node its pod is
bound to, of the pod's profile, no two overlapping; in 1 every pod is bound; a pod is left
unschedulable only when no placement of its profile is free on any node.  Reported, not asserted
(docs/performance.md): throughput with partitions against whole cards, the slices per node and
their size, and fragmentation, how many more of the same jobs, in the same order, a best-fit packer
(packing.py) places on the same cards than the scheduler did.
"""
import json
import math
import os
import shutil
import random
import sys
import tempfile
import time
import unittest
from datetime import datetime

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "integration"))

import cluster  # noqa: E402
import packing  # noqa: E402
import rest  # noqa: E402
from harness import Node  # noqa: E402
from test_control_plane import overlaps, spans  # noqa: E402

NODES = int(os.environ.get("ACCELFS_K8S_SCALE_NODES", "32"))
PER_NODE = 32  # pods a node in steps 1 and 2: 1024 on 32 nodes
MORE = 0.27  # step 3: this share more again, past what the cards hold
# Mostly small partitions, as a shared inference cluster asks: 1.75 memory slices a claim on average,
# so that step 2's claims fit the cards (87 % of their slices) and step 3's do not.
MIX = {"1g.18gb": 65, "1g.35gb": 15, "2g.35gb": 8, "3g.71gb": 8, "7g.141gb": 4}
SEED = int(os.environ.get("ACCELFS_K8S_SEED", "5"))
TOPOLOGY = os.path.join(HERE, "eight-h200.json")
WHOLE = "whole-card.accelfs.test"  # the driver, and the class, of step 1's devices

PODS = "/api/v1/namespaces/default/pods"
CLAIMS = "/apis/resource.k8s.io/v1/namespaces/default/resourceclaims"
SLICES = "/apis/resource.k8s.io/v1/resourceslices"
EVENTS = "/apis/events.k8s.io/v1/namespaces/default/events"


def node_name(i):
    return f"scale-{i:03d}"


def claim(name, step, device_class):
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"name": name, "namespace": "default", "labels": {"test": "scale", "step": step}},
            "spec": {"devices": {"requests": [{"name": "dev", "exactly": {"deviceClassName": device_class}}]}}}


def pod(name, step, profile):
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "default",
                         "labels": {"test": "scale", "step": step, "profile": profile}},
            "spec": {"automountServiceAccountToken": False, "terminationGracePeriodSeconds": 0,
                     "enableServiceLinks": False,
                     "resourceClaims": [{"name": "dev", "resourceClaimName": name}],
                     "containers": [{"name": "main", "image": "busybox", "resources": {"claims": [{"name": "dev"}]}}]}}


def whole_card_slice(node, cards):
    """A node's whole cards: a device per card, no counters, attributes as the plugin's."""
    assert cards <= 128, "one slice holds 128 devices"
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": f"{node}-whole"},
            "spec": {"driver": WHOLE, "nodeName": node, "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
                     "devices": [{"name": f"card{i}",
                                  "attributes": {"card": {"string": f"card{i}"}, "cardIndex": {"int": i},
                                                 "vendor": {"string": "NVIDIA"}, "product": {"string": "NVIDIA H200"}},
                                  "capacity": {"memory": {"value": "143771Mi"}}} for i in range(cards)]}}


def whole_card_class():
    return {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": WHOLE},
            "spec": {"selectors": [{"cel": {"expression":
                                            f'device.driver == "{WHOLE}" && '
                                            f'device.attributes["{WHOLE}"].product == "NVIDIA H200"'}}]}}


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss_mib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def event_time(ev):
    t = ev.get("eventTime") or ev.get("deprecatedFirstTimestamp")
    if not t:
        return None
    return datetime.fromisoformat(t.replace("Z", "+00:00")).timestamp()


class ScaleTest(unittest.TestCase):
    maxDiff = None

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="accelfs-k8s-t5-")
        cls.addClassCleanup(shutil.rmtree, cls.tmp, ignore_errors=True)  # last: class cleanups run in reverse
        cls.nodes = [node_name(i) for i in range(NODES)]
        # The scheduler's client unthrottled: each pod costs it a bind and a claim's status.
        cls.cp = cluster.ControlPlane(node_lifecycle=False, scheduler_qps=1000).start()
        cls.addClassCleanup(cls.cp.stop)
        cls.api = rest.Api(cls.cp.server, cls.cp.tokens["admin"])
        res = {"cpu": "64", "memory": "512Gi", "pods": "250"}
        for name in cls.nodes:
            cls.api.create({"apiVersion": "v1", "kind": "Node",
                            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name,
                                                                  "accelfs.io/node": "true"}}})
            cls.api.patch(f"/api/v1/nodes/{name}/status", {"status": {
                "capacity": res, "allocatable": res,
                "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                                "message": "made by the test: no kubelet"}]}})
            # The not-ready taint admission gives a new Node (the node lifecycle controller, off
            # here, would lift it on the kubelet's first heartbeat).
            cls.api.patch(f"/api/v1/nodes/{name}", {"spec": {"taints": None}})
        cls.accelfs = []
        for i in range(NODES):
            # The default poll interval: an unused simulated node rests, 32 of them cost nearly nothing.
            n = Node(topology=TOPOLOGY, poll=2, extra=[f"--cdi-dir={os.path.join(cls.tmp, f'cdi-{i}')}"])
            cls.addClassCleanup(n.cleanup)
            cls.accelfs.append(n.start())
        cls.node_json = [json.loads(n.read("node.json")) for n in cls.accelfs]
        cls.layout = spans(cls.node_json[0])
        classes = cluster.subprocess.run([cluster.program("accelfs-dra"), "classes", f"--mount={cls.accelfs[0].mnt}"],
                                         capture_output=True, text=True, check=True).stdout
        cls.cp.kubectl("apply", "-f", "-", input=classes)
        cls.api.create(whole_card_class())
        cls.plugins = []
        cls.report = {}

    @classmethod
    def start_plugins(cls):
        kubeconfig = cls.cp.plugin_kubeconfig()
        for i, (name, n) in enumerate(zip(cls.nodes, cls.accelfs)):
            # The look for stale jobs at start only: nothing is carved here, and 32 plugins listing
            # every claim of the cluster every few seconds would be what the test measured.
            p = cluster.Plugin(cls.cp, name, n.mnt, n.cdi_dir(), os.path.join(cls.tmp, f"kubelet-{i}"),
                               os.path.join(cls.tmp, f"accelfs-dra-{i}.log"), kubeconfig=kubeconfig,
                               flags=("--reconcile-every=-1s", "-v=2")).start()
            cls.addClassCleanup(p.proc.stop)
            cls.plugins.append(p)

    def run(self, result=None):
        failures = len(result.failures) + len(result.errors) if result else 0
        out = super().run(result)
        if result and len(result.failures) + len(result.errors) > failures:
            dead = [i for i, p in enumerate(self.plugins) if not p.proc.alive()]
            print(f"{self.cp.logs()}\nplugins not running: {dead}\n"
                  f"{self.plugins[dead[0] if dead else 0].proc.tail(40) if self.plugins else ''}", file=sys.stderr)
        return out

    # -- what the API server holds ---------------------------------------------------------------
    def pools(self, driver):
        """{node: [its slices]} of the driver, each pool once whole (its newest generation, every slice)."""
        items, _ = self.api.list(SLICES, fieldSelector=f"spec.driver={driver}")
        by_pool = {}
        for s in items:
            by_pool.setdefault(s["spec"]["pool"]["name"], []).append(s)
        out = {}
        for node, slices in by_pool.items():
            gen = max(s["spec"]["pool"]["generation"] for s in slices)
            slices = [s for s in slices if s["spec"]["pool"]["generation"] == gen]
            if len(slices) == slices[0]["spec"]["pool"]["resourceSliceCount"]:
                out[node] = slices
        return out

    def slice_figures(self, driver):
        """Per node: slices, devices, counter sets, the slices' specs in bytes of JSON (min-max over nodes)."""
        pools = self.pools(driver)
        rows = [(len(sl), sum(len(s["spec"].get("devices", [])) for s in sl),
                 sum(len(s["spec"].get("sharedCounters", [])) for s in sl),
                 sum(len(json.dumps(s["spec"], separators=(",", ":"))) for s in sl)) for sl in pools.values()]

        def span(k):
            lo, hi = min(r[k] for r in rows), max(r[k] for r in rows)
            return f"{lo}" if lo == hi else f"{lo}-{hi}"
        return f"{span(0)} slice(s), {span(1)} devices, {span(2)} counter sets, {span(3)} bytes of JSON"

    def unbound(self, names):
        """The pods of names not bound: {name: True when the scheduler found it unschedulable}."""
        pods = self.api.items(PODS, fieldSelector="spec.nodeName=", labelSelector="test=scale")
        out = {}
        for p in pods:
            if p["metadata"]["name"] not in names:
                continue
            conds = {c["type"]: c for c in p.get("status", {}).get("conditions", [])}
            out[p["metadata"]["name"]] = conds.get("PodScheduled", {}).get("reason") == "Unschedulable"
        return out

    def decided(self, names):
        """Wait until the scheduler decided every pod of names, bound or unschedulable; returns the
        names of the unschedulable ones."""
        def done():
            left = self.unbound(names)
            return (sorted(left),) if all(left.values()) else None
        return cluster.wait_until(done, 1800, f"the scheduler's decision on {len(names)} pods", step=2)[0]

    def allocations(self, names):
        """{pod: (node, device)} of the bound pods of names, from their claims (named as the pods)."""
        out = {}
        for c in self.api.items(CLAIMS, labelSelector="test=scale"):
            name = c["metadata"]["name"]
            alloc = c.get("status", {}).get("allocation")
            if name not in names or not alloc:
                continue
            (r,) = alloc["devices"]["results"]
            owners = [o["name"] for o in c["status"].get("reservedFor", [])]
            self.assertEqual(owners, [name], f"claim {name} reserved for {owners}")
            out[name] = (r["pool"], r["device"], r["driver"])
        return out

    # -- one step ----------------------------------------------------------------------------------
    def schedule(self, step, jobs):
        """Make jobs' claims and pods ([(name, device class, profile)]) with the scheduler stopped,
        then start it and wait for its decisions: {pods (bound), unschedulable, seconds, rate, cpu,
        first} (rate: pods a second from its first Scheduled event to its last; cpu: its CPU time
        from its start; first: from its start to the first Scheduled event)."""
        sched = self.cp.procs["kube-scheduler"]
        sched.stop()
        self.api.create_all([claim(n, step, c) for n, c, _ in jobs])
        self.api.create_all([pod(n, step, p) for n, _, p in jobs])
        t0 = time.time()
        sched.start()
        names = {n for n, _, _ in jobs}
        unschedulable = self.decided(names)
        cpu = cpu_seconds(sched.p.pid)
        bound = len(jobs) - len(unschedulable)

        def scheduled():
            return sorted(t for ev in self.api.items(EVENTS)
                          if ev.get("reason") == "Scheduled" and ev.get("regarding", {}).get("name") in names
                          and (t := event_time(ev)) is not None)
        # The scheduler sends its events after the binding, on a queue of their own.
        times = cluster.wait_until(lambda: (t := scheduled()) and len(t) >= bound and t, 300,
                                   f"a Scheduled event for each of the {bound} pods bound", step=2) if bound else []
        seconds = times[-1] - times[0] if times else 0.0
        return {"pods": bound, "unschedulable": unschedulable, "seconds": seconds,
                "rate": (len(times) - 1) / seconds if seconds > 0 else 0.0, "cpu": cpu,
                "first": times[0] - t0 if times else 0.0}

    def check(self, names, unschedulable):
        """The invariants over the scheduler's decisions on the partitions of names; returns
        {pod: (node, card, profile, start, size)} of the bound ones."""
        pods = {p["metadata"]["name"]: p for p in self.api.items(PODS, labelSelector="test=scale")
                if p["metadata"]["name"] in names}
        placed = {}
        for name, (pool, device, driver) in self.allocations(names).items():
            self.assertEqual(driver, "accelfs.io", name)
            self.assertEqual(pods[name]["spec"].get("nodeName"), pool, f"{name}: bound elsewhere than its claim")
            self.assertIn(device, self.layout, f"{name}: {device} is not a placement of {pool}")
            span = self.layout[device]
            self.assertEqual(span[1], pods[name]["metadata"]["labels"]["profile"], f"{name} got {device}")
            placed[name] = (pool, *span)
        self.assertEqual(sorted(set(names) - set(placed)), sorted(unschedulable), "pods neither bound nor unschedulable")
        by_node = {}
        for n, card, _, start, size in placed.values():
            by_node.setdefault(n, []).append((card, start, size))
        for n, ps in by_node.items():
            self.assertEqual(packing.overlapping(ps), [], f"{n}: placements allocated twice")
        # Unschedulable only when no placement of its profile is free on any node.
        for name in unschedulable:
            profile = pods[name]["metadata"]["labels"]["profile"]
            for n in self.nodes:
                held = [(card, profile_, start, size) for node_, card, profile_, start, size in placed.values()
                        if node_ == n]
                free = [d for d, sp in self.layout.items() if sp[1] == profile and not any(overlaps(sp, h) for h in held)]
                self.assertEqual(free, [], f"{name} ({profile}) unschedulable with {free} free on {n}")
        return placed

    def idle_cost(self, what, pids):
        cpu = sum(cpu_seconds(p) for p in pids)
        rss = sum(rss_mib(p) for p in pids)
        return f"{len(pids)} {what}: {cpu:.1f} CPU s in all, {rss:.0f} MiB resident in all"

    # -- the test ------------------------------------------------------------------------------------
    def test_scale(self):
        rng = random.Random(SEED)
        n = PER_NODE * NODES
        profiles = list(MIX)
        mix = rng.choices(profiles, weights=[MIX[p] for p in profiles], k=n + math.ceil(MORE * n))
        print(f"test 5: {NODES} nodes of 8 simulated H200s, {n} pods, then {len(mix) - n} more; seed {SEED}",
              file=sys.stderr)

        # 1. Whole cards.
        cards = math.ceil(n / NODES)
        self.api.create_all([whole_card_slice(name, cards) for name in self.nodes])
        whole = self.schedule("whole", [(f"whole-{i:04d}", WHOLE, "whole") for i in range(n)])
        self.assertEqual(whole["unschedulable"], [], "a whole card for every pod")
        whole_slices = self.slice_figures(WHOLE)
        self.api.delete_all(PODS, labelSelector="step=whole")
        self.api.delete_all(SLICES, fieldSelector=f"spec.driver={WHOLE}")

        # 2. Partitions, of mixed profiles.
        self.start_plugins()
        cluster.wait_until(lambda: len(p := self.pools("accelfs.io")) == NODES and all(
            sum(len(s["spec"].get("devices", [])) for s in sl) == len(self.layout) for sl in p.values()),
            300, "every node's whole pool published")
        jobs = [(f"part-{i:04d}", f"{p}.accelfs.io", p) for i, p in enumerate(mix)]
        part = self.schedule("part", jobs[:n])
        self.check({j[0] for j in jobs[:n]}, part["unschedulable"])
        part_slices = self.slice_figures("accelfs.io")

        # 3. More than the cards hold: the scheduler stopped again, so that it takes them in name
        # order, the order the best-fit packer is given.
        full = self.schedule("part", jobs[n:])
        placed = self.check({j[0] for j in jobs}, part["unschedulable"] + full["unschedulable"])
        cards_of = [c for name, nj in zip(self.nodes, self.node_json) for c in packing.cards_of(nj, name)]
        frag = packing.fragmentation(cards_of, mix, len(placed))

        ratio = part["rate"] / whole["rate"] if whole["rate"] else 0.0
        cpu_ratio = (part["cpu"] / part["pods"]) / (whole["cpu"] / whole["pods"]) if whole["cpu"] else 0.0
        for label, r in (("whole cards", whole), ("partitions", part)):
            print(f"test 5: {label}: {r['pods']} pods bound in {r['seconds']:.1f} s, {r['rate']:.1f} pods/s "
                  f"(first bound {r['first']:.1f} s after the scheduler's start); scheduler CPU "
                  f"{1000 * r['cpu'] / r['pods']:.1f} ms a pod", file=sys.stderr)
        print(f"test 5: throughput with partitions {ratio:.2f}x whole cards (goal >= 0.5x); scheduler CPU a pod "
              f"{cpu_ratio:.2f}x", file=sys.stderr)
        print(f"test 5: slices per node: partitions {part_slices}; whole cards ({cards} a node) {whole_slices}",
              file=sys.stderr)
        print(f"test 5: full: {len(placed)} of {len(mix)} pods placed, best fit places {frag['best_fit']}: "
              f"{frag['more']} more, {100 * frag['share']:.1f} % (goal <= 5 %)", file=sys.stderr)
        print("test 5: " + self.idle_cost("accelfs daemons", [d.pid() for d in self.accelfs]) + "; " +
              self.idle_cost("plugins", [p.proc.p.pid for p in self.plugins]), file=sys.stderr)


if __name__ == "__main__":
    unittest.main(verbosity=2)
