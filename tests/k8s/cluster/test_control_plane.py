# SPDX-License-Identifier: MIT
"""Test 3 of docs/kubernetes.md: the real control plane (etcd, kube-apiserver, kube-scheduler,
kube-controller-manager, v1.37) over the slices accelfs-dra publishes for a simulated node.  No
kubelet: the Node object is made here, and nothing is prepared (test 4 does that).  Asserted: the
API server's validation accepts every slice and DeviceClass; the published devices are exactly the
legal placements of node.json, each consuming exactly its memory slices; the real scheduler
allocates the claims of pods of mixed profiles, including one asked with plain `limits:`, never two
overlapping placements, never a placement taken outside Kubernetes, and leaves a pod unschedulable
only when no placement of its profile is free; deleting pods frees their placements for the pods
that waited.  The plugin writes under k8s/deploy/admission.yaml, with a token bound to a pod on its
node; a token of another node's plugin, or one bound to no pod, cannot write its slices.  A cordoned
card's devices are tainted (NoSchedule): a new pod goes to another card, one that only that card
can take waits Unschedulable and is told why by the plugin (an Event naming the node, the card
and the taint), and lifting the cordon lifts the taint.
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
from harness import Node  # noqa: E402

NODE = "node-b"


def spans(node_json):
    """{device name: (card, profile, start, size)} of every legal placement, as the plugin names them."""
    out = {}
    for d in node_json["devices"]:
        for p in d["profiles"]:
            for pl in p["placements"]:
                name = f"{d['name']}-{p['name'].replace('.', '-')}-{pl['start']}"
                out[name] = (d["name"], p["name"], pl["start"], pl["size"])
    return out


def overlaps(a, b):
    return a[0] == b[0] and a[2] < b[2] + b[3] and b[2] < a[2] + a[3]


def pod(name, profile=None, limits=None):
    spec = {"automountServiceAccountToken": False, "nodeSelector": {"kubernetes.io/hostname": NODE},
            "containers": [{"name": "main", "image": "busybox", "command": ["sleep", "3600"],
                            "resources": {}}]}
    if profile:
        spec["resourceClaims"] = [{"name": "mig", "resourceClaimTemplateName": f"one-{profile}"}]
        spec["containers"][0]["resources"]["claims"] = [{"name": "mig"}]
    if limits:
        spec["containers"][0]["resources"]["limits"] = limits
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default",
                                                            "labels": {"test": "cp"}}, "spec": spec}


def template(profile):
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
            "metadata": {"name": f"one-{profile}", "namespace": "default"},
            "spec": {"spec": {"devices": {"requests": [
                {"name": "mig", "exactly": {"deviceClassName": f"{profile}.accelfs.io"}}]}}}}


class ControlPlaneTest(unittest.TestCase):
    maxDiff = None

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="accelfs-k8s-t3-")
        cls.addClassCleanup(shutil.rmtree, cls.tmp, ignore_errors=True)  # last: class cleanups run in reverse
        cls.node = Node(extra=[f"--cdi-dir={os.path.join(cls.tmp, 'cdi')}"]).start()
        cls.cp = cluster.ControlPlane(node_lifecycle=False).start()
        cls.addClassCleanup(cls.cp.stop)
        cls.addClassCleanup(cls.node.cleanup)
        cp = cls.cp
        cp.apply({"apiVersion": "v1", "kind": "Node",
                  "metadata": {"name": NODE, "labels": {"kubernetes.io/hostname": NODE, "accelfs.io/node": "true"}}})
        res = {"cpu": "64", "memory": "512Gi", "pods": "250"}
        cp.kubectl("patch", "node", NODE, "--subresource=status", "--type=merge", "-p", json.dumps(
            {"status": {"capacity": res, "allocatable": res,
                        "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                                        "message": "made by the test: no kubelet at this stage"}]}}))
        # The taint a new Node is given until the node lifecycle controller (off here: no kubelet
        # heartbeats) sees it Ready.
        cp.kubectl("taint", "node", NODE, "node.kubernetes.io/not-ready:NoSchedule-", check=False)
        classes = cluster.subprocess.run([cluster.program("accelfs-dra"), "classes", f"--mount={cls.node.mnt}"],
                                         capture_output=True, text=True, check=True).stdout
        cp.kubectl("apply", "-f", "-", input=classes)
        # One node, its own slices (k8s/deploy/admission.yaml): applied before the plugin starts, which
        # writes with a token bound to a pod on its node, as the DaemonSet's pod has it.
        with open(os.path.join(cluster.SOURCE, "k8s", "deploy", "admission.yaml")) as f:
            cp.apply(f.read())
        cls.plugin = cluster.Plugin(cp, NODE, cls.node.mnt, cls.node.cdi_dir(), os.path.join(cls.tmp, "kubelet"),
                                    os.path.join(cls.tmp, "accelfs-dra.log"),
                                    kubeconfig=cp.plugin_pod_kubeconfig(NODE)).start()
        cls.addClassCleanup(cls.plugin.proc.stop)

    def run(self, result=None):
        failures = len(result.failures) + len(result.errors) if result else 0
        out = super().run(result)
        if result and len(result.failures) + len(result.errors) > failures:
            # What the programs said, for the record (scripts/test --k8s keeps it).
            pending = [(p["metadata"]["name"], p.get("status", {}).get("conditions"))
                       for p in self.cp.items("pods", "-A") if not p["spec"].get("nodeName")]
            claims = [(c["metadata"]["name"], c["metadata"].get("deletionTimestamp"), c["metadata"].get("finalizers"),
                       c.get("status")) for c in self.cp.items("resourceclaims", "-A")]
            print(f"{self.cp.logs()}\n{self.plugin.proc.tail(60)}\n"
                  f"pods not bound: {json.dumps(pending)[:3000]}\nclaims: {json.dumps(claims)[:5000]}", file=sys.stderr)
        return out

    # -- what the API server holds ----------------------------------------------------------
    def pool(self):
        """The node's pool: (devices {name: consumed counters}, counter sets {name: counters}), once whole."""
        slices = [s for s in self.cp.items("resourceslices") if s["spec"]["pool"]["name"] == NODE]
        if not slices:
            return None
        gen = max(s["spec"]["pool"]["generation"] for s in slices)
        slices = [s for s in slices if s["spec"]["pool"]["generation"] == gen]
        if len(slices) != slices[0]["spec"]["pool"]["resourceSliceCount"]:
            return None
        devices, counters = {}, {}
        for s in slices:
            self.assertEqual(s["spec"]["driver"], "accelfs.io")
            for d in s["spec"].get("devices", []):
                devices[d["name"]] = d
            for c in s["spec"].get("sharedCounters", []):
                counters[c["name"]] = {k: v["value"] for k, v in c["counters"].items()}
        return devices, counters

    def wait_pool(self, pred, what):
        return cluster.wait_until(lambda: (p := self.pool()) and pred(*p) and p, 120, what)

    def allocations(self):
        """{claim name: (pod name, device name)} of every allocated claim of the test's pods."""
        out = {}
        for c in self.cp.items("resourceclaims", "-n", "default"):
            alloc = c.get("status", {}).get("allocation")
            if not alloc:
                continue
            results = alloc["devices"]["results"]
            self.assertEqual(len(results), 1, c["metadata"]["name"])
            r = results[0]
            self.assertEqual((r["driver"], r["pool"]), ("accelfs.io", NODE))
            owners = [o["name"] for o in c.get("status", {}).get("reservedFor", [])]
            out[c["metadata"]["name"]] = (owners[0] if owners else None, r["device"])
        return out

    def settled(self):
        """Every test pod bound to the node or found unschedulable: {pod: True when bound}."""
        out = {}
        for p in self.cp.items("pods", "-n", "default", "-l", "test=cp"):
            if p["metadata"].get("deletionTimestamp"):
                return None
            if p["spec"].get("nodeName"):
                out[p["metadata"]["name"]] = True
                continue
            conds = {c["type"]: c for c in p.get("status", {}).get("conditions", [])}
            if conds.get("PodScheduled", {}).get("reason") != "Unschedulable":
                return None
            out[p["metadata"]["name"]] = False
        return out

    def check_allocations(self, layout, bound, outside):
        """The invariants over what the scheduler decided; returns the allocated placements."""
        allocs = self.allocations()
        pods = {p["metadata"]["name"]: p for p in self.cp.items("pods", "-n", "default", "-l", "test=cp")}
        taken = {}
        for claim, (owner, device) in allocs.items():
            self.assertIn(device, layout, f"{claim}: {device} is not a placement of the node")
            self.assertIn(owner, pods, f"{claim} reserved for {owner}, not a pod of the test")
            self.assertTrue(bound[owner], f"{claim} allocated for {owner}, which is not bound")
            want = pods[owner]["metadata"]["labels"].get("profile")
            self.assertEqual(layout[device][1], want, f"{owner} asked for {want}, got {device}")
            for other, span in taken.items():
                self.assertFalse(overlaps(span, layout[device]), f"{device} overlaps {other}, both allocated")
            for job, span in outside.items():
                self.assertFalse(overlaps(span, layout[device]), f"{device} overlaps {job}, carved outside Kubernetes")
            taken[device] = layout[device]
        for name, ok in bound.items():
            owned = [c for c, (o, _) in allocs.items() if o == name]
            self.assertEqual(len(owned), 1 if ok else 0, f"{name}: bound={ok}, claims allocated {owned}")
            if ok:
                continue
            # Unschedulable only when no placement of its profile is free.
            profile = pods[name]["metadata"]["labels"]["profile"]
            held = list(taken.values()) + list(outside.values())
            free = [d for d, span in layout.items()
                    if span[1] == profile and not any(overlaps(span, h) for h in held)]
            self.assertEqual(free, [], f"{name} ({profile}) left unschedulable with {free} free")
        return taken

    def decided(self, layout, outside, pred):
        """Wait until the scheduler is done: every pod bound or unschedulable (pred holds of them) and
        no pod left waiting while a placement of its profile is free (a retry not yet made)."""
        def done():
            s = self.settled()
            if not s or not pred(s):
                return None
            try:
                self.check_allocations(layout, s, outside)
            except AssertionError:
                return None
            return s
        return cluster.wait_until(done, 600, "the scheduler's decisions on every pod")

    # -- the tests (unittest runs them by name: admission, cordon, then the scheduler's) ------------
    def test_1_a_plugin_writes_only_its_own_nodes_slices(self):
        """admission.yaml: the plugin's ServiceAccount, with a token bound to a pod on node A, may
        write node A's slices and no other node's; with a token bound to no pod, none.  Node B's
        plugin publishes under the same policy the whole test (its pool is checked by the others)."""
        other = "node-a"
        self.cp.apply({"apiVersion": "v1", "kind": "Node", "metadata": {"name": other}})
        node_a = self.cp.plugin_pod_kubeconfig(other)
        unbound = self.cp.plugin_kubeconfig()
        ours = self.wait_pool(lambda d, c: d, "node-b's pool")
        theirs = next(s["metadata"]["name"] for s in self.cp.items("resourceslices")
                      if s["spec"]["pool"]["name"] == NODE)
        self.assertTrue(ours)

        def slice_of(node, name):
            return json.dumps({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": name},
                               "spec": {"driver": "accelfs.io", "nodeName": node,
                                        "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
                                        "devices": []}})

        def refused(*args, kubeconfig, input=None):
            res = self.cp.kubectl(*args, input=input, kubeconfig=kubeconfig, check=False)
            self.assertNotEqual(res.returncode, 0, f"kubectl {' '.join(args)} was let through")
            self.assertIn("ValidatingAdmissionPolicy 'accelfs-dra-own-node-slices'", res.stderr, res.stderr)
            return res.stderr

        # Node A's plugin: another node's slice cannot be made, changed or deleted ...
        why = refused("create", "-f", "-", input=slice_of(NODE, "forged"), kubeconfig=node_a)
        self.assertIn("accelfs-dra on node node-a may write only its own node's ResourceSlices, not node-b", why)
        refused("label", "resourceslice", theirs, "forged=1", kubeconfig=node_a)
        refused("delete", "resourceslice", theirs, "--wait=false", kubeconfig=node_a)
        # ... its own node's can.
        self.cp.kubectl("create", "-f", "-", input=slice_of(other, "node-a-own"), kubeconfig=node_a)
        self.cp.kubectl("delete", "resourceslice", "node-a-own", kubeconfig=node_a)
        # A token bound to no pod names no node: refused even for a slice of its own pool.
        why = refused("create", "-f", "-", input=slice_of(NODE, "unbound"), kubeconfig=unbound)
        self.assertIn("only with a token bound to a pod on a node", why)
        # Node B's slices are as they were.
        self.assertIn(theirs, [s["metadata"]["name"] for s in self.cp.items("resourceslices")])
        self.assertNotIn("forged", self.cp.get("resourceslice", theirs)["metadata"].get("labels") or {})
        # Node A goes (the scheduler's messages then count node B alone), its placeholder pod with it.
        self.cp.kubectl("delete", "pod", f"accelfs-dra-{other}", "-n", "accelfs-dra", "--grace-period=0", "--force")
        self.cp.kubectl("delete", "node", other)

    def card_taints(self, card):
        """{device: {taint key: effect}} of the card's published devices."""
        devices, _ = self.pool()
        return {n: {t["key"]: t["effect"] for t in d.get("taints") or []}
                for n, d in devices.items() if n.startswith(f"{card}-")}

    def test_2_a_cordoned_card_takes_no_new_pod(self):
        """echo 1 > ppu0/mig/cordon: ppu0's devices carry accelfs.io/cordoned (NoSchedule), a new pod
        goes to another card that has room (first fit would take ppu0), a pod that only ppu0 can take
        waits Unschedulable, told why by an AccelfsDevicesTainted Event of the plugin, and the cordon
        lifted takes the taint away and the pod is allocated."""
        card = "ppu0"
        self.wait_pool(lambda d, c: any(n.startswith(f"{card}-") for n in d), f"{card} published")
        with open(self.node.path(card, "mig", "cordon"), "w") as f:
            f.write("1")
        try:
            cluster.wait_until(lambda: (t := self.card_taints(card)) and all(
                k == {"accelfs.io/cordoned": "NoSchedule"} for k in t.values()), 60, f"{card}'s devices tainted")
            self.assertFalse(any(k for n, k in self.card_taints("ppu1").items()), "ppu1 tainted too")
            # The command docs/kubernetes.md gives a user to find the tainted devices.
            shown = self.cp.kubectl("get", "resourceslices", "-o",
                                    "jsonpath={range .items[*].spec.devices[?(@.taints)]}"
                                    '{.name}{"\\t"}{.taints[*].key}{"\\n"}{end}').stdout.splitlines()
            self.assertEqual(sorted(shown), sorted(f"{n}\taccelfs.io/cordoned" for n in self.card_taints(card)))
            self.cp.apply(template("8g.96gb"))
            self.cp.apply(dict(template("8g.96gb"), metadata={"name": f"on-{card}", "namespace": "default"},
                               spec={"spec": {"devices": {"requests": [{"name": "mig", "exactly": {
                                   "deviceClassName": "8g.96gb.accelfs.io", "selectors": [{"cel": {
                                       "expression": f'device.attributes["accelfs.io"].card == "{card}"'}}]}}]}}}))
            anywhere = pod("cordon-anywhere", "8g.96gb")
            only = pod("cordon-only", "8g.96gb")
            only["spec"]["resourceClaims"][0]["resourceClaimTemplateName"] = f"on-{card}"
            for p in (anywhere, only):
                p["metadata"]["labels"] = {"test": "cordon"}
                self.cp.apply(p)

            def state(name):
                p = self.cp.get("pod", name)
                cond = {c["type"]: c for c in p.get("status", {}).get("conditions", [])}.get("PodScheduled", {})
                return p["spec"].get("nodeName"), cond.get("reason"), cond.get("message", "")
            cluster.wait_until(lambda: state("cordon-anywhere")[0], 120, "cordon-anywhere bound")
            allocs = self.allocations()
            (device,) = [d for o, d in allocs.values() if o == "cordon-anywhere"]
            self.assertFalse(device.startswith(f"{card}-"), f"{device}: a new pod on the cordoned card")
            # What a user reads of the waiting pod: the scheduler says its claim cannot be allocated
            # (it does not name device taints); the card's devices in the slices say why.
            _, reason, message = cluster.wait_until(
                lambda: (s := state("cordon-only"))[1] == "Unschedulable" and s, 120, "cordon-only Unschedulable")
            self.assertIn("cannot allocate all claims", message)
            print(f"test 3: the pod only {card} can take waits: {message!r}", file=sys.stderr)
            # The plugin says which: one Warning Event on the pod (k8s/pending), shown by describe.
            def told(name):
                return [e for e in self.cp.items("events", "-n", "default", "--field-selector",
                                                 f"involvedObject.name={name},reason=AccelfsDevicesTainted")]
            (event,) = cluster.wait_until(lambda: told("cordon-only"), 60, "cordon-only told why")
            self.assertEqual((event["type"], event["source"].get("host")), ("Warning", NODE))
            for part in (f"node {NODE}", f"{card} cordoned", "accelfs.io/cordoned:NoSchedule", f"{card}/mig/cordon"):
                self.assertIn(part, event["message"])
            self.assertIn("AccelfsDevicesTainted", self.cp.kubectl("describe", "pod", "cordon-only").stdout)
            print(f"test 3: its Event: {event['message']!r}", file=sys.stderr)
            self.assertEqual(told("cordon-anywhere"), [], "an Event on a pod that was placed")
            self.assertNotIn("cordon-only", [o for o, _ in allocs.values()])
        finally:
            with open(self.node.path(card, "mig", "cordon"), "w") as f:
                f.write("0")
        # Recovery lifts the taint, and the waiting pod gets the card.
        cluster.wait_until(lambda: (t := self.card_taints(card)) and not any(t.values()), 60,
                           f"{card}'s taint lifted")
        cluster.wait_until(lambda: state("cordon-only")[0], 120, "cordon-only bound once the cordon is lifted")
        (device,) = [d for o, d in self.allocations().values() if o == "cordon-only"]
        self.assertTrue(device.startswith(f"{card}-"), device)
        # Gone before the scheduler's test: their claims' placements free again.
        self.cp.kubectl("delete", "pod", "-l", "test=cordon", "--grace-period=0", "--force", "--wait=false")
        cluster.wait_until(lambda: not self.cp.items("resourceclaims", "-n", "default"), 120,
                           "the cordon test's claims deleted")

    def test_3_slices_classes_and_the_scheduler(self):
        node = json.loads(self.node.read("node.json"))
        layout = spans(node)
        mig_on = [d["name"] for d in node["devices"] if d["profiles"]]

        # 1. Accepted by validation, exactly the node's placements, each consuming exactly its slices.
        devices, counters = self.wait_pool(lambda d, c: len(d) == len(layout), "the whole pool published")
        self.assertEqual(sorted(devices), sorted(layout))
        self.assertEqual(sorted(counters), sorted(mig_on))
        for name, dev in devices.items():
            card, profile, start, size = layout[name]
            (use,) = dev["consumesCounters"]
            self.assertEqual(use["counterSet"], card)
            self.assertEqual(sorted(use["counters"]), sorted(f"slice-{i}" for i in range(start, start + size)), name)
            attrs = dev["attributes"]  # unqualified: in the driver's domain, accelfs.io
            self.assertEqual((attrs["profile"]["string"], attrs["card"]["string"], attrs["placementStart"]["int"],
                              attrs["placementSize"]["int"]), (profile, card, start, size), name)
        classes = {c["metadata"]["name"] for c in self.cp.items("deviceclasses")}
        profiles = {p for _, p, _, _ in layout.values()}
        self.assertEqual(classes, {"mig.accelfs.io"} | {f"{p}.accelfs.io" for p in profiles})

        # 2. A job carved outside Kubernetes: its card's placements are withdrawn.
        self.node.mkdir("ppu0", "mig", "8g.96gb", "notebook")
        outside = {"notebook": ("ppu0", "8g.96gb", 0, 8)}
        self.wait_pool(lambda d, c: not any(n.startswith("ppu0-") for n in d), "ppu0's placements withdrawn")

        # 3. Plain limits: the scheduler makes the claim (the class's extendedResourceName).
        self.cp.apply(dict(pod("by-limits", limits={"accelfs.io/mig-4g.48gb": "1"}),
                           metadata={"name": "by-limits", "namespace": "default",
                                     "labels": {"test": "cp", "profile": "4g.48gb"}}))
        cluster.wait_until(lambda: (s := self.settled()) and s.get("by-limits"), 60, "the pod asking by limits bound")

        # 4. More pods than the node holds, of mixed profiles: 15 PPUs left for 4g.48gb (2 a card)
        # and 8g.96gb (1), gpu0 shared by 1g.18gb, 3g.71gb and 7g.141gb.
        want = {"4g.48gb": 22, "8g.96gb": 6, "1g.18gb": 4, "3g.71gb": 2, "7g.141gb": 1}
        for profile in want:
            self.cp.apply(template(profile))
        for profile, n in want.items():
            for i in range(n):
                p = pod(f"p-{profile.replace('.', '-')}-{i}", profile)
                p["metadata"]["labels"]["profile"] = profile
                self.cp.apply(p)
        bound = self.decided(layout, outside, lambda s: len(s) == sum(want.values()) + 1)
        taken = self.check_allocations(layout, bound, outside)
        self.assertTrue(0 < sum(bound.values()) < len(bound), f"some pods bound, some not: {bound}")
        print(f"test 3: {sum(bound.values())} of {len(bound)} pods allocated a partition", file=sys.stderr)

        # 5. The slices did not change for the scheduler's allocations (no kubelet: nothing carved).
        devices, _ = self.pool()
        self.assertTrue(all(d in devices for d in taken))

        # 6. Deleting the bound pods frees their placements: the pods that waited get them.
        waiting = [n for n, ok in bound.items() if not ok]
        for name, ok in bound.items():
            if ok:
                self.cp.kubectl("delete", "pod", name, "--grace-period=0", "--force", "--wait=false")
        bound = self.decided(layout, outside, lambda s: set(s) == set(waiting) and any(s.values()))
        self.check_allocations(layout, bound, outside)
        print(f"test 3: then {sum(bound.values())} of the {len(waiting)} that waited", file=sys.stderr)


if __name__ == "__main__":
    unittest.main(verbosity=2)
