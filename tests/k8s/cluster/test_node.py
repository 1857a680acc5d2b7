# SPDX-License-Identifier: MIT
"""Test 4 of docs/kubernetes.md, the whole path: the control plane of cluster.py, a real kubelet
and containerd (kubenode.py), accelfs-dra as a host process and accelfs over a simulated node.  A
pod with a ResourceClaim starts and its container sees exactly its job's device nodes; deleting
the pod gives the job back; the plugin, the kubelet and accelfs are each killed with -9 while a pod
is being prepared and while one is being unprepared, and started again; after every step the jobs
in the tree and the claims in the API server agree one to one, each job at its claim's placement
(nothing lost, nothing owned twice).  Then pods per minute that get a partition on this node,
against the same pods without one, in the same run (reported, not asserted: docs/performance.md),
and an Xid on a pod's card in the pod's status and the card's taints.  Last, the plugin as its
DaemonSet (k8s/deploy, image built with podman) in place of the host process: Ready, serving
claims, and a rolling update that keeps a prepared claim's pod running.
"""
import json
import os
import re
import shutil
import statistics
import sys
import time
import urllib.request
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import cluster  # noqa: E402
import images  # noqa: E402
from nodecase import NODE, NodeCase, pod  # noqa: E402


class NodeTest(NodeCase):
    # -- the tests (in order: unittest sorts them by name) ------------------------------------
    def test_1_a_pod_gets_its_partition_and_gives_it_back(self):
        self.cp.apply(pod("first"))
        job, card, profile = self.check_pod("first")
        self.settle("first running")
        self.assertIn("id=", self.node.read(card, "mig", profile, job, "containers"),
                      "the OCI hook did not record the container")
        self.delete("first")
        self.gone("first", job, card, profile)
        self.settle("first deleted")

    def kill_restart(self, what):
        if what == "accelfs":
            self.node.kill9()
            self.node.start()
        elif what == "accelfs-dra":
            self.plugin.proc.kill9()
            self.plugin.proc.start()
        else:
            self.kn.restart(what)

    def crash_around(self, what):
        name = f"crash-{what}"
        self.cp.apply(pod(name, profile="3g.71gb"))
        # Killed once the scheduler has allocated (the prepare is due or under way).
        cluster.wait_until(lambda: any(name in c[2] for c in self.claims().values()), 300, f"{name}'s claim allocated")
        self.kill_restart(what)
        job, card, profile = self.check_pod(name)
        self.settle(f"{name} running after {what} was killed")
        self.delete(name)
        self.kill_restart(what)  # while the pod ends: the unprepare is due or under way
        self.gone(name, job, card, profile)
        self.settle(f"{name} deleted, {what} killed again")

    def test_2_kill_the_plugin(self):
        self.crash_around("accelfs-dra")

    def test_3_kill_the_kubelet(self):
        self.crash_around("kubelet")

    def test_4_kill_accelfs(self):
        self.crash_around("accelfs")

    def test_5_pods_per_minute(self):
        """Pods to Running, with a partition each and without, then deleted until their jobs are gone."""
        n = 12
        rates = {}
        for claim in (False, True):
            names = [f"rate-{'mig' if claim else 'plain'}-{i}" for i in range(n)]
            t0 = time.monotonic()
            self.cp.kubectl("apply", "-f", "-", input="\n---\n".join(json.dumps(pod(x, claim=claim)) for x in names))
            cluster.wait_until(lambda: sum(p.get("status", {}).get("phase") == "Running"
                                           for p in self.cp.items("pods", "-n", "default", "-l", "test=node")) == n,
                               600, f"{n} pods Running", step=0.1)
            rates[claim] = n / ((time.monotonic() - t0) / 60)
            if claim:
                timeline = self.timeline(names)
                self.keep_logs("pods-per-minute")
            self.settle("the rate's pods running")
            self.cp.kubectl("delete", "pods", "-n", "default", "-l", "test=node", "--wait=true", timeout=600)
            cluster.wait_until(lambda: not self.jobs(), 300, "every job given back")
        print(f"pods per minute on one node: {rates[True]:.1f} with a partition each, {rates[False]:.1f} without "
              f"({rates[True] / rates[False]:.2f}x), {n} pods at once", file=sys.stderr)
        print(timeline, file=sys.stderr)
        self.settle("all deleted")

    def keep_logs(self, what):
        """ACCELFS_K8S_KEEP=DIR: copy the kubelet's, containerd's, the plugin's and accelfs's logs
        there (the test's directory is removed at its end), to put a slow pod's seconds on one timeline."""
        keep = os.environ.get("ACCELFS_K8S_KEEP")
        if not keep:
            return
        os.makedirs(keep, exist_ok=True)
        for src in (self.cp.path("kube-apiserver.log"), self.kn.path("kubelet.log"), self.kn.path("containerd.log"), self.plugin.proc.log,
                    os.path.join(self.node.state, "accelfs.log")):
            if os.path.exists(src):
                shutil.copy(src, os.path.join(keep, f"{what}-{os.path.basename(src)}"))
        for kind in ("pods", "events"):
            with open(os.path.join(keep, f"{what}-{kind}.json"), "w") as f:
                f.write(self.cp.kubectl("get", kind, "-A", "-o", "json", check=False).stdout)

    def timeline(self, names):
        """Where a partitioned pod's time goes, on one timeline: the API server's times (created,
        PodScheduled, Ready: whole seconds) and the plugin's (each prepare's carve and CDI wait, in
        milliseconds; how many times it republished the slices during the burst)."""
        def t(stamp):
            return time.mktime(time.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ"))
        sched, start = [], []
        for name in names:
            p = self.cp.get("pod", name, "-n", "default")
            cond = {c["type"]: c.get("lastTransitionTime") for c in p["status"].get("conditions", [])}
            created = t(p["metadata"]["creationTimestamp"])
            sched.append(t(cond["PodScheduled"]) - created)
            start.append(t(cond["Ready"]) - t(cond["PodScheduled"]))
        log = self.plugin.proc.tail(100000).splitlines()
        carve = [int(m.group(1)) for m in (re.search(r'carveMs=(\d+)', x) for x in log) if m][-len(names):]
        cdi = [int(m.group(1)) for m in (re.search(r'cdiMs=(\d+)', x) for x in log) if m][-len(names):]
        published = sum('"Published devices"' in x for x in log)
        # The kubelet's failed syncs before any prepare: each costs its pod worker a 10-15 s back-off
        # (a claim the Node authorizer did not yet let it read was 14-16 s stalls, k8s/deploy/rbac.yaml).
        events = self.cp.items("events", "-n", "default", "--field-selector=reason=FailedPrepareDynamicResources")
        failed = sum(e.get("count") or 1 for e in events if e["involvedObject"]["name"] in names)

        def span(v):
            return f"median {statistics.median(v):g}, max {max(v):g}" if v else "none"
        return (f"timeline of {len(names)} partitioned pods: created->scheduled s {span(sched)}; "
                f"scheduled->ready s {span(start)}; prepare carve ms {span(carve)}; CDI wait ms {span(cdi)}; "
                f"slices published {published} times since the plugin started; "
                f"kubelet prepare failures {failed}")

    # -- card state and health (issue 32) ---------------------------------------------------------
    def test_6_xid_shows_in_the_pod_and_a_failed_card_is_tainted(self):
        """An Xid whose recovery is a reset fails the card and its job: the pod's device reads
        Unhealthy in its status, every device of the card carries accelfs.io/failed (NoSchedule);
        the driver's recovery lifts the taint and the pod's device reads Healthy again.  Then an
        Xid on the pod's own GPU instance: its device reads Unhealthy again."""
        self.cp.apply(pod("xid", profile="3g.71gb"))
        job, card, profile = self.check_pod("xid")
        index = next(d["index"] for d in json.loads(self.node.read("node.json"))["devices"] if d["name"] == card)
        self.node.smi("gpu", "sim", "xid", "-i", index, "--action", "reset", 48)
        cluster.wait_until(lambda: "Unhealthy" in self.device_health("xid").values(), 120,
                           "the Xid in the pod's allocatedResourcesStatus")
        cluster.wait_until(lambda: (t := self.card_taints(card)) and all(
            k.get("accelfs.io/failed") == "NoSchedule" for k in t.values()), 60, f"{card}'s devices tainted failed")
        self.node.smi("gpu", "sim", "recover", "-i", index)
        cluster.wait_until(lambda: (t := self.card_taints(card)) and not any(t.values()), 60,
                           f"{card}'s taints lifted by the recovery")
        cluster.wait_until(lambda: set(self.device_health("xid").values()) == {"Healthy"}, 120,
                           "the pod's device Healthy again")
        # An Xid on the pod's own instance (its GPU instance, not the card) shows in its status too.
        gi = self.node.keyvals(card, "mig", profile, job, "status")["gi"]
        self.node.smi("gpu", "sim", "xid", "-i", index, "-gi", gi, "--action", "reset", 48)
        cluster.wait_until(lambda: "Unhealthy" in self.device_health("xid").values(), 120,
                           "the instance's Xid in the pod's allocatedResourcesStatus")
        self.delete("xid")
        self.gone("xid", job, card, profile)
        self.settle("xid deleted")
        # A reset asked for takes the card too (failed): the driver's recovery gives it back.
        self.node.smi("gpu", "sim", "recover", "-i", index)
        cluster.wait_until(lambda: (t := self.card_taints(card)) and not any(t.values()), 60,
                           f"{card}'s taints lifted by the second recovery")

    # -- the DaemonSet as users deploy it (issue 35) ----------------------------------------------
    def overlay(self):
        """A kustomize overlay of k8s/deploy for this node, as an operator writes one: the image
        built here, the node's own paths (accelfs's mount, its CDI directory, the kubelet's plugin
        directories: the plugin tells the kubelet its socket's path, so it is the host's), and the
        API server reached with the pod's own ServiceAccount token (projected, bound to the pod:
        what admission.yaml checks) through a kubeconfig, since this cluster has no kube-proxy for
        the kubernetes Service's address."""
        d = os.path.join(self.tmp, "overlay")
        os.makedirs(d, exist_ok=True)
        plugins, registry = (os.path.join(self.kn.kubelet_dir, x) for x in ("plugins", "plugins_registry"))
        with open(os.path.join(d, "kubeconfig"), "w") as f:
            json.dump({"apiVersion": "v1", "kind": "Config", "current-context": "c",
                       "clusters": [{"name": "c", "cluster": {"server": self.cp.server,
                                                              "insecure-skip-tls-verify": True}}],
                       "users": [{"name": "u", "user": {"tokenFile": "/var/run/secrets/tokens/token"}}],
                       "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}]}, f)
        spec, c = "/spec/template/spec", "/spec/template/spec/containers/0"
        patch = [
            # Where the base's list entries are (the patch fails if they move).
            *({"op": "test", "path": f"{spec}/volumes/{i}/name", "value": v} for i, v in
              enumerate(("accel", "cdi", "plugins", "registry"))),
            {"op": "replace", "path": f"{spec}/volumes/0/hostPath/path", "value": self.node.mnt},
            {"op": "replace", "path": f"{spec}/volumes/1/hostPath/path", "value": self.cdi},
            {"op": "replace", "path": f"{spec}/volumes/2/hostPath/path", "value": plugins},
            {"op": "replace", "path": f"{spec}/volumes/3/hostPath/path", "value": registry},
            {"op": "replace", "path": f"{c}/volumeMounts/2/mountPath", "value": plugins},
            {"op": "replace", "path": f"{c}/volumeMounts/3/mountPath", "value": registry},
            {"op": "add", "path": f"{spec}/automountServiceAccountToken", "value": False},
            {"op": "add", "path": f"{spec}/volumes/-", "value": {
                "name": "kubeconfig", "configMap": {"name": "accelfs-dra-kubeconfig"}}},
            {"op": "add", "path": f"{spec}/volumes/-", "value": {"name": "token", "projected": {"sources": [
                {"serviceAccountToken": {"path": "token", "expirationSeconds": 3600}}]}}},
            {"op": "add", "path": f"{c}/volumeMounts/-",
             "value": {"name": "kubeconfig", "mountPath": "/etc/accelfs-dra"}},
            {"op": "add", "path": f"{c}/volumeMounts/-",
             "value": {"name": "token", "mountPath": "/var/run/secrets/tokens"}},
            *({"op": "add", "path": f"{c}/args/-", "value": a} for a in (
                f"--plugin-dir={plugins}/accelfs.io", f"--registrar-dir={registry}",
                "--kubeconfig=/etc/accelfs-dra/kubeconfig", "--resync=5s", "-v=2")),
        ]
        base = os.path.relpath(os.path.join(cluster.SOURCE, "k8s", "deploy"), d)
        with open(os.path.join(d, "kustomization.yaml"), "w") as f:
            json.dump({"apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization",
                       "resources": [base],
                       "images": [{"name": "accelfs-dra", "newName": images.PLUGIN.rsplit(":", 1)[0],
                                   "newTag": images.PLUGIN.rsplit(":", 1)[1]}],
                       "configMapGenerator": [{"name": "accelfs-dra-kubeconfig", "namespace": "accelfs-dra",
                                               "files": ["kubeconfig"]}],
                       "patches": [{"target": {"kind": "DaemonSet", "name": "accelfs-dra"},
                                    "patch": json.dumps(patch)}]}, f)
        return d

    def ds_pods(self):
        return [p for p in self.cp.items("pods", "-n", "accelfs-dra", "-l", "app=accelfs-dra")
                if not p["metadata"].get("deletionTimestamp")]

    def ds_ready(self):
        """The DaemonSet's one pod, once it is the only one, of the current template, and Ready."""
        ds = self.cp.get("daemonset", "accelfs-dra", "-n", "accelfs-dra")
        st = ds.get("status", {})
        pods = self.ds_pods()
        if (st.get("observedGeneration") != ds["metadata"]["generation"] or st.get("updatedNumberScheduled") != 1
                or st.get("numberReady") != 1 or len(pods) != 1):
            return None
        conds = {c["type"]: c["status"] for c in pods[0].get("status", {}).get("conditions", [])}
        return conds.get("Ready") == "True" and pods[0]

    def plugin_metrics(self, pod):
        """The plugin's /metrics, from its pod's address: {name: value} of the unlabelled samples."""
        text = urllib.request.urlopen(f"http://{pod['status']['podIP']}:8081/metrics", timeout=10).read().decode()
        return {k: float(v) for k, v in (line.split() for line in text.splitlines()
                                         if line and not line.startswith("#") and "{" not in line)}

    def test_7_the_daemonset_serves_claims_through_a_rolling_update(self):
        """k8s/deploy with kustomize (rbac, the admission policy, the DeviceClasses, the DaemonSet)
        and the image built from the Containerfile: the plugin's pod comes up Ready (its readiness
        probe: registered and published), serves a claim, and a rolling update (maxSurge: a new
        pod beside the old one) keeps the prepared claim's pod running; the new pod unprepares it,
        and a pod created during the update is served."""
        tar = images.plugin(os.path.join(self.tmp, "image"), cluster.program("accelfs-dra"))
        self.kn.ctr("images", "import", tar)
        shutil.rmtree(os.path.join(self.tmp, "image"))  # podman's storage: the image is containerd's now
        self.assertIn(images.PLUGIN, self.kn.ctr("images", "list", "--quiet").stdout.split())
        # HostToContainer needs the mount to be shared (or a slave), as systemd makes every mount; this
        # machine's root is private, so the test's own accelfs mount is made shared.
        cluster.subprocess.run(["mount", "--make-shared", self.node.mnt], check=True)
        # The host process gives way to the DaemonSet (a node runs one or the other).
        self.plugin.proc.stop()
        self.cp.kubectl("label", "node", NODE, "accelfs.io/node=true", "--overwrite")
        self.cp.kubectl("apply", "--server-side", "--force-conflicts", "-k", self.overlay())
        first = cluster.wait_until(self.ds_ready, 300, "the DaemonSet's pod Ready")
        self.cp.apply(pod("ds-claim", profile="3g.71gb"))
        job, card, profile = self.check_pod("ds-claim")
        self.settle("ds-claim running, prepared by the DaemonSet's plugin")
        m = self.plugin_metrics(first)
        self.assertEqual(m.get("accelfs_dra_claims_prepared"), 1.0, m)
        self.assertGreaterEqual(m.get("accelfs_dra_prepare_seconds_count", 0), 1, m)
        before = self.container_of("ds-claim")

        self.cp.kubectl("rollout", "restart", "daemonset/accelfs-dra", "-n", "accelfs-dra")
        self.cp.apply(pod("ds-during", profile="3g.71gb"))
        second = cluster.wait_until(lambda: (p := self.ds_ready()) and p["metadata"]["uid"] != first["metadata"]["uid"]
                                    and p, 300, "the rolling update done: a new pod Ready, the old one gone")
        during = self.check_pod("ds-during")
        self.assertTrue(self.running("ds-claim"))
        self.assertEqual(self.container_of("ds-claim"), before, "ds-claim's container restarted by the update")
        self.assertEqual(self.node.keyvals(card, "mig", profile, job, "status")["state"], "ready")
        self.settle("after the rolling update")
        # The new pod serves what the old one prepared: the unprepare gives the job back.
        self.delete("ds-claim")
        self.delete("ds-during")
        for name, (j, c, p) in (("ds-claim", (job, card, profile)), ("ds-during", during)):
            self.gone(name, j, c, p)
        self.settle("the DaemonSet's claims deleted")
        self.assertGreaterEqual(self.plugin_metrics(second).get("accelfs_dra_unprepare_seconds_count", 0), 1)
        # Its pod goes before the node does (containerd then takes its sandbox down).
        self.cp.kubectl("delete", "daemonset", "accelfs-dra", "-n", "accelfs-dra", "--wait=true")
        cluster.wait_until(lambda: not self.cp.items("pods", "-n", "accelfs-dra", "-l", "app=accelfs-dra"), 120,
                           "the DaemonSet's pods gone")


if __name__ == "__main__":
    unittest.main(verbosity=2)
