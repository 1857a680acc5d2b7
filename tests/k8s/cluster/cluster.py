# SPDX-License-Identifier: MIT
"""A real Kubernetes control plane for the tests 3 and 4 of docs/kubernetes.md, on this machine:
etcd, kube-apiserver, kube-controller-manager and kube-scheduler built by build.sh, each a
process of this test (started, killed with -9 and started again by pid, never by name), all on
127.0.0.1 with free ports and a temporary directory.  The API server authenticates by tokens
(admin in system:masters, each kubelet as system:node:<name>) and authorizes with Node and RBAC;
the plugin runs as the ServiceAccount of k8s/deploy/rbac.yaml, with a token the API server signs.

ACCELFS_K8S_BIN names the directory of the programs (build.sh OUTDIR).
"""
import json
import os
import shutil
import signal
import socket
import ssl
import subprocess
import tempfile
import time
import urllib.request

BIN = os.environ.get("ACCELFS_K8S_BIN", "")
SOURCE = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))


def program(name):
    path = os.path.join(BIN, name)
    if not BIN or not os.access(path, os.X_OK):
        raise AssertionError(f"{path}: not built; run tests/k8s/cluster/build.sh DIR and set ACCELFS_K8S_BIN=DIR "
                             "(scripts/test --k8s does both)")
    return path


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_until(pred, timeout, what, step=0.2):
    """A liveness bound (the machine is shared and slow), not a timing: pred() true, or fail."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        try:
            value = pred()
            if value:
                return value
        except Exception as e:  # the thing waited for may not answer yet
            last = e
        time.sleep(step)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}" + (f" (last: {last})" if last else ""))


class Proc:
    """One program of the cluster, its output in LOG."""

    def __init__(self, name, argv, log, env=None):
        self.name, self.argv, self.log, self.env = name, argv, log, env
        self.p = None

    def start(self):
        with open(self.log, "a") as out:
            out.write(f"\n==== {time.strftime('%H:%M:%S')} start: {' '.join(self.argv)}\n")
            out.flush()
            self.p = subprocess.Popen(self.argv, stdout=out, stderr=subprocess.STDOUT, env=self.env,
                                      start_new_session=True)
        return self

    def alive(self):
        return self.p is not None and self.p.poll() is None

    def kill9(self):
        """kill -9 of this process alone (its children, a shim, are not ours to kill)."""
        if self.alive():
            os.kill(self.p.pid, signal.SIGKILL)
            self.p.wait()

    def stop(self, timeout=30):
        if not self.alive():
            return
        self.p.terminate()
        try:
            self.p.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill9()

    def tail(self, n=40):
        try:
            with open(self.log, errors="replace") as f:
                return "".join(f.readlines()[-n:])
        except OSError:
            return ""


class ControlPlane:
    def __init__(self, node_lifecycle=True, address="127.0.0.1", scheduler_qps=None):
        """address: where the API server listens; a pod reaches it only at an address of the host
        other than loopback (its own network namespace has its own loopback).  scheduler_qps: the
        scheduler's client rate (default: its own, 50 a second, burst 100); test 5 raises it so
        that what it measures is the scheduler's work, not its throttle."""
        self.dir = tempfile.mkdtemp(prefix="accelfs-k8s-cp-")
        self.node_lifecycle = node_lifecycle
        self.address = address
        self.scheduler_qps = scheduler_qps
        self.procs = {}
        self.tokens = {"admin": os.urandom(16).hex()}
        self.etcd_port, self.peer_port, self.api_port = free_port(), free_port(), free_port()
        self.server = f"https://{address}:{self.api_port}"

    def path(self, *parts):
        return os.path.join(self.dir, *parts)

    # -- credentials ------------------------------------------------------------
    def node_token(self, node):
        """A kubelet's token (system:node:<node> in system:nodes), known to the API server from its start."""
        return self.tokens.setdefault(f"system:node:{node}", os.urandom(16).hex())

    def _token_file(self):
        with open(self.path("tokens.csv"), "w") as f:
            for user, token in self.tokens.items():
                group = "system:masters" if user == "admin" else "system:nodes"
                f.write(f'{token},{user},{user},"{group}"\n')

    def kubeconfig(self, name, token):
        path = self.path(f"{name}.kubeconfig")
        with open(path, "w") as f:
            json.dump({
                "apiVersion": "v1", "kind": "Config", "current-context": "c",
                "clusters": [{"name": "c", "cluster": {"server": self.server, "insecure-skip-tls-verify": True}}],
                "users": [{"name": "u", "user": {"token": token}}],
                "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
            }, f)
        return path

    # -- the programs -------------------------------------------------------------
    def _proc(self, name, argv, env=None):
        p = Proc(name, argv, self.path(f"{name}.log"), env)
        self.procs[name] = p
        return p.start()

    def start(self, nodes=()):
        for n in nodes:
            self.node_token(n)
        self._token_file()
        subprocess.run(["openssl", "genrsa", "-out", self.path("sa.key"), "2048"], check=True, capture_output=True)
        subprocess.run(["openssl", "rsa", "-in", self.path("sa.key"), "-pubout", "-out", self.path("sa.pub")],
                       check=True, capture_output=True)
        etcd = f"http://127.0.0.1:{self.etcd_port}"
        peer = f"http://127.0.0.1:{self.peer_port}"
        self._proc("etcd", [program("etcd"), f"--data-dir={self.path('etcd')}", f"--listen-client-urls={etcd}",
                            f"--advertise-client-urls={etcd}", f"--listen-peer-urls={peer}",
                            f"--initial-advertise-peer-urls={peer}", f"--initial-cluster=default={peer}",
                            "--unsafe-no-fsync", "--log-level=warn"])
        wait_until(lambda: b"true" in urllib.request.urlopen(f"{etcd}/health", timeout=5).read(), 120, "etcd")
        self._proc("kube-apiserver", [
            program("kube-apiserver"), f"--etcd-servers={etcd}", f"--bind-address={self.address}",
            f"--advertise-address={self.address}", f"--secure-port={self.api_port}", f"--cert-dir={self.path('pki')}",
            f"--token-auth-file={self.path('tokens.csv')}", "--authorization-mode=Node,RBAC",
            "--enable-admission-plugins=NodeRestriction",
            "--service-account-issuer=https://kubernetes.default.svc",
            f"--service-account-key-file={self.path('sa.pub')}",
            f"--service-account-signing-key-file={self.path('sa.key')}",
            "--service-cluster-ip-range=10.96.0.0/24", "--enable-priority-and-fairness=false",
            "--endpoint-reconciler-type=none",
            # A kubelet's host name resolves nowhere here: logs and exec reach it at its address.
            "--kubelet-preferred-address-types=InternalIP,Hostname",
            # ACCELFS_K8S_APISERVER_V=4: the node authorizer's graph logs each pod it learns (graph_populator.go).
            f"-v={os.environ.get('ACCELFS_K8S_APISERVER_V', '0')}"])
        self.wait_api()
        admin = self.kubeconfig("admin", self.tokens["admin"])
        controllers = "*" if self.node_lifecycle else "*,-node-lifecycle-controller"
        self._proc("kube-controller-manager", [
            program("kube-controller-manager"), f"--kubeconfig={admin}", "--leader-elect=false",
            "--secure-port=0", f"--controllers={controllers}",
            f"--service-account-private-key-file={self.path('sa.key')}"])
        self._proc("kube-scheduler", [program("kube-scheduler"), f"--config={self._scheduler_config(admin)}",
                                      "--secure-port=0"])
        # The namespace's default ServiceAccount is the controller manager's first sign of life.
        wait_until(lambda: self.kubectl("get", "serviceaccount", "default", check=False).returncode == 0, 180,
                   "the default ServiceAccount (kube-controller-manager)")
        return self

    def _scheduler_config(self, kubeconfig):
        conn = {"kubeconfig": kubeconfig}
        if self.scheduler_qps:
            conn.update(qps=self.scheduler_qps, burst=2 * self.scheduler_qps)
        path = self.path("kube-scheduler.json")
        with open(path, "w") as f:
            json.dump({"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
                       "clientConnection": conn, "leaderElection": {"leaderElect": False}}, f)
        return path

    def wait_api(self):
        ctx = ssl.create_default_context()
        ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE

        def ready():
            req = urllib.request.Request(f"{self.server}/readyz",
                                         headers={"Authorization": f"Bearer {self.tokens['admin']}"})
            return urllib.request.urlopen(req, context=ctx, timeout=5).read() == b"ok"
        wait_until(ready, 180, "kube-apiserver /readyz")

    def restart(self, name):
        p = self.procs[name]
        p.kill9()
        p.start()

    def stop(self):
        for name in ("kube-scheduler", "kube-controller-manager", "kube-apiserver", "etcd"):
            if name in self.procs:
                self.procs[name].stop()
        # etcd's data (60 MB a run) and the logs, printed already where a test failed.
        shutil.rmtree(self.dir, ignore_errors=True)

    def logs(self):
        return "".join(f"---- {name} ----\n{p.tail()}" for name, p in self.procs.items())

    # -- the API ---------------------------------------------------------------------
    def kubectl(self, *args, input=None, check=True, kubeconfig=None, timeout=120):
        cmd = [program("kubectl"), f"--kubeconfig={kubeconfig or self.kubeconfig('admin', self.tokens['admin'])}",
               *args]
        res = subprocess.run(cmd, input=input, capture_output=True, text=True, timeout=timeout)
        if check and res.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)} failed ({res.returncode}): {res.stderr}{res.stdout}")
        return res

    def get(self, *args):
        return json.loads(self.kubectl("get", "-o", "json", *args).stdout)

    def items(self, *args):
        return self.get(*args)["items"]

    def apply(self, obj):
        text = obj if isinstance(obj, str) else json.dumps(obj)
        return self.kubectl("apply", "--server-side", "--force-conflicts", "-f", "-", input=text)

    def plugin_kubeconfig(self):
        """The plugin's credentials: the ServiceAccount and ClusterRole of k8s/deploy/rbac.yaml, as deployed."""
        with open(os.path.join(SOURCE, "k8s", "deploy", "rbac.yaml")) as f:
            self.apply(f.read())
        token = self.kubectl("create", "token", "accelfs-dra", "-n", "accelfs-dra", "--duration=24h").stdout.strip()
        return self.kubeconfig("accelfs-dra", token)

    def plugin_pod_kubeconfig(self, node):
        """The plugin's credentials as its DaemonSet pod on NODE has them: the ServiceAccount's token
        bound to a pod on that node, so that the API server names the node in the request's user
        (authentication.kubernetes.io/node-name), which k8s/deploy/admission.yaml requires.  The
        pod is a placeholder (no kubelet runs it); the token is valid while it exists."""
        with open(os.path.join(SOURCE, "k8s", "deploy", "rbac.yaml")) as f:
            self.apply(f.read())
        name = f"accelfs-dra-{node}"
        self.apply({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "accelfs-dra"},
                    "spec": {"nodeName": node, "serviceAccountName": "accelfs-dra",
                             "automountServiceAccountToken": False,
                             "containers": [{"name": "plugin", "image": "accelfs-dra:placeholder"}]}})
        token = self.kubectl("create", "token", "accelfs-dra", "-n", "accelfs-dra", "--duration=24h",
                             "--bound-object-kind=Pod", f"--bound-object-name={name}").stdout.strip()
        return self.kubeconfig(f"accelfs-dra-{node}", token)


class Plugin:
    """accelfs-dra as a host process (k8s/deploy/accelfs-dra.service), with its own credentials."""

    def __init__(self, cp, node, mount, cdi_dir, kubelet_dir, log, kubeconfig=None,
                 flags=("--resync=5s", "--reconcile-every=10s", "-v=2")):
        """kubeconfig: the plugin's (made by cp.plugin_kubeconfig() when not given: many plugins share one)."""
        self.argv = [program("accelfs-dra"), f"--kubeconfig={kubeconfig or cp.plugin_kubeconfig()}",
                     f"--node-name={node}", f"--mount={mount}", f"--cdi-dir={cdi_dir}",
                     f"--plugin-dir={os.path.join(kubelet_dir, 'plugins', 'accelfs.io')}",
                     f"--registrar-dir={os.path.join(kubelet_dir, 'plugins_registry')}", *flags]
        for d in ("plugins/accelfs.io", "plugins_registry"):
            os.makedirs(os.path.join(kubelet_dir, d), exist_ok=True)
        self.proc = Proc("accelfs-dra", self.argv, log)

    def start(self):
        self.proc.start()
        return self
