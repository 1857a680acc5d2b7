# SPDX-License-Identifier: MIT
"""A real Kubernetes node for test 4 of docs/kubernetes.md: containerd 2.x (built by build.sh) with
Debian's runc and CNI plugins, CDI reading accelfs's --cdi-dir, the pause and busybox images of
images.py imported with ctr; and a kubelet on cgroup v1 (failCgroupV1: false, cgroupDriver:
cgroupfs), registered to the ControlPlane of cluster.py as system:node:<name>.  Everything lives in
one temporary directory; each program is a process of the test (killed by pid).
"""
import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile

import cluster
import images

RUNC = shutil.which("runc") or "/usr/sbin/runc"
CNI_BIN = "/usr/lib/cni"  # containernetworking-plugins


def node_ip():
    """The address of the interface of the default route: a Node's address may not be loopback, and
    the API server reaches the kubelet there (kubectl logs)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.connect(("192.0.2.1", 9))  # no packet is sent: connect() on UDP only picks the route
        return s.getsockname()[0]


class KubeNode:
    def __init__(self, cp, name, cdi_dir):
        self.cp, self.name, self.cdi_dir = cp, name, cdi_dir
        self.dir = tempfile.mkdtemp(prefix="accelfs-k8s-node-", dir="/var/tmp")
        self.sock = os.path.join(self.dir, "containerd.sock")
        self.kubelet_dir = os.path.join(self.dir, "kubelet")
        self.procs = {}
        self.port = cluster.free_port()
        self.ip = node_ip()

    def path(self, *parts):
        return os.path.join(self.dir, *parts)

    def _write(self, name, text):
        with open(self.path(name), "w") as f:
            f.write(text)
        return self.path(name)

    # -- containerd -----------------------------------------------------------------------
    def _containerd_config(self):
        os.makedirs(self.path("cni"), exist_ok=True)
        # A bridge of its own and a subnet no other test uses; no masquerade (nothing leaves the node).
        self._write("cni/10-accelfs-k8s.conflist", json.dumps({
            "cniVersion": "1.0.0", "name": "accelfs-k8s",
            "plugins": [{"type": "bridge", "bridge": "accelfsk8s0", "isGateway": True, "ipMasq": False,
                         "ipam": {"type": "host-local", "ranges": [[{"subnet": "10.213.0.0/24"}]],
                                  # The node's address, through the bridge: a pod reaches the API
                                  # server there (the DaemonSet's plugin); nothing else is routed.
                                  "routes": [{"dst": f"{self.ip}/32"}],
                                  "dataDir": self.path("cni-ipam")}},
                        {"type": "loopback"}]}))
        return self._write("containerd.toml", f"""version = 3
root = "{self.path('containerd', 'root')}"
state = "{self.path('containerd', 'state')}"

[grpc]
  address = "{self.sock}"

[ttrpc]
  address = "{self.sock}.ttrpc"

[plugins.'io.containerd.cri.v1.images']
  snapshotter = "overlayfs"
  [plugins.'io.containerd.cri.v1.images'.pinned_images]
    sandbox = "{images.PAUSE}"

[plugins.'io.containerd.cri.v1.runtime']
  # The kubelet gives every sandbox oom_score_adj -998; lowering it needs CAP_SYS_RESOURCE, which
  # root lacks on machines like the project's (runc then fails: "can't get final child's PID").
  restrict_oom_score_adj = true
  # The pods' network namespaces under the state directory: the test's cleanup unmounts them.
  netns_mounts_under_state_dir = true
  cdi_spec_dirs = ["{self.cdi_dir}"]
  [plugins.'io.containerd.cri.v1.runtime'.containerd]
    default_runtime_name = "runc"
    [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
        BinaryName = "{RUNC}"
        SystemdCgroup = false
  [plugins.'io.containerd.cri.v1.runtime'.cni]
    bin_dirs = ["{CNI_BIN}"]
    conf_dir = "{self.path('cni')}"
""")

    def start_containerd(self):
        if "containerd" not in self.procs:
            env = dict(os.environ, PATH=f"{cluster.BIN}:{os.environ.get('PATH', '/usr/bin:/bin')}")
            self.procs["containerd"] = cluster.Proc(
                "containerd", [cluster.program("containerd"), f"--config={self._containerd_config()}"],
                self.path("containerd.log"), env)
        self.procs["containerd"].start()
        cluster.wait_until(lambda: self.ctr("version", check=False).returncode == 0, 120, "containerd")

    def ctr(self, *args, check=True):
        res = subprocess.run([cluster.program("ctr"), f"--address={self.sock}", "--namespace=k8s.io", *args],
                             capture_output=True, text=True, timeout=300)
        if check and res.returncode != 0:
            raise AssertionError(f"ctr {' '.join(args)} failed: {res.stderr}{res.stdout}")
        return res

    def import_images(self):
        tar = images.build(self.path("images.tar"))
        self.ctr("images", "import", tar)
        names = self.ctr("images", "list", "--quiet").stdout.split()
        for want in (images.PAUSE, images.BUSYBOX):
            if want not in names:
                raise AssertionError(f"{want} not imported: {names}")

    # -- the kubelet -------------------------------------------------------------------------
    def _kubelet_config(self):
        return self._write("kubelet.json", json.dumps({
            "apiVersion": "kubelet.config.k8s.io/v1beta1", "kind": "KubeletConfiguration",
            "failCgroupV1": False, "cgroupDriver": "cgroupfs",
            "containerRuntimeEndpoint": f"unix://{self.sock}",
            "address": self.ip, "port": self.port, "readOnlyPort": 0, "healthzPort": 0,
            "authentication": {"anonymous": {"enabled": True}, "webhook": {"enabled": False}},
            "authorization": {"mode": "AlwaysAllow"},
            "failSwapOn": False, "podLogsDir": self.path("pods-logs"),
            "resolvConf": "", "serializeImagePulls": False,
            "imageGCHighThresholdPercent": 100, "imageGCLowThresholdPercent": 99,
            "evictionHard": {"memory.available": "1Mi", "nodefs.available": "1%", "imagefs.available": "1%"},
            "enforceNodeAllocatable": [], "cgroupsPerQOS": False,
            "nodeStatusUpdateFrequency": "4s", "syncFrequency": "10s",
            "shutdownGracePeriod": "0s",
        }))

    def start_kubelet(self):
        if "kubelet" not in self.procs:
            kubeconfig = self.cp.kubeconfig(f"kubelet-{self.name}", self.cp.node_token(self.name))
            self.procs["kubelet"] = cluster.Proc("kubelet", [
                cluster.program("kubelet"), f"--config={self._kubelet_config()}", f"--kubeconfig={kubeconfig}",
                f"--root-dir={self.kubelet_dir}", f"--cert-dir={self.path('kubelet-pki')}",
                f"--hostname-override={self.name}", f"--node-ip={self.ip}",
                # ACCELFS_K8S_KUBELET_V: a higher verbosity to trace a pod's sync (4: each pod worker's step).
                f"-v={os.environ.get('ACCELFS_K8S_KUBELET_V', '2')}"],
                self.path("kubelet.log"))
        self.procs["kubelet"].start()

    def ready(self):
        node = self.cp.get("node", self.name)
        conds = {c["type"]: c["status"] for c in node["status"].get("conditions", [])}
        return conds.get("Ready") == "True"

    def start(self):
        self.start_containerd()
        self.import_images()
        self.start_kubelet()
        cluster.wait_until(self.ready, 300, f"node {self.name} Ready")
        return self

    def restart(self, name):
        self.procs[name].kill9()
        self.procs[name].start()

    def stop(self):
        """The kubelet, then every pod's containers (ctr), then containerd; the shims are containerd's."""
        if "kubelet" in self.procs:
            self.procs["kubelet"].stop()
        if "containerd" in self.procs and self.procs["containerd"].alive():
            for task in self.ctr("tasks", "list", "--quiet", check=False).stdout.split():
                self.ctr("tasks", "kill", "--signal=SIGKILL", task, check=False)
            self.procs["containerd"].stop()

    def shims(self):
        """The runc shims of this containerd (their command line names its socket), by pid."""
        out = []
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    argv = f.read().split(b"\0")
            except OSError:
                continue
            if argv[0].endswith(b"containerd-shim-runc-v2") and self.sock.encode() in b" ".join(argv):
                out.append(int(pid))
        return out

    def cleanup(self):
        self.stop()
        # A shim outlives a containerd killed with -9: its container's processes, then it.
        for shim in self.shims():
            for child in subprocess.run(["ps", "-o", "pid=", "--ppid", str(shim)], capture_output=True,
                                        text=True).stdout.split():
                try:
                    os.kill(int(child), signal.SIGKILL)
                except ProcessLookupError:
                    pass
            try:
                os.kill(shim, signal.SIGKILL)
            except ProcessLookupError:
                pass
        # containerd's snapshots and sandboxes (a pod still there at the end leaves its sandbox's shm
        # and network namespace mounted), and the kubelet's root (a mount of its own): every mount
        # under the node's directory, the deepest first.
        with open("/proc/self/mounts") as f:
            mounts = [line.split()[1].encode().decode("unicode_escape") for line in f]
        for m in sorted((m for m in mounts if m.startswith(self.dir + "/")), key=len, reverse=True):
            subprocess.run(["umount", "-l", m], capture_output=True)
        subprocess.run(["ip", "link", "del", "accelfsk8s0"], capture_output=True)
        shutil.rmtree(self.dir, ignore_errors=True)

    def logs(self):
        return "".join(f"---- {name} ----\n{p.tail(60)}" for name, p in self.procs.items())
