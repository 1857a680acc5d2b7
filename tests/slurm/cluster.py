# SPDX-License-Identifier: MIT
"""A one-node Slurm cluster on loopback for the tests: its own munged, slurmctld and slurmd, every
file in one temporary directory, and a cleanup that leaves no process behind.

Nothing here touches /etc: munged gets its own key and socket, the Slurm daemons and clients read
SLURM_CONF, and the node's name is this machine's hostname as read now.
"""
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time

import sanitizer

# How long a daemon may take to answer after it starts: generous on a loaded 2-core machine.
START_TIMEOUT = 60


def wait_until(pred, timeout, what, step=0.1):
    deadline = time.monotonic() + timeout
    while True:
        value = pred()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(step)


def free_port():
    """A TCP port nothing listens on now (the kernel's choice, so two runs never pick the same)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Cluster:
    """munged + slurmctld + slurmd for the node `hostname`, with the given GRES types and counts."""

    def __init__(self, gres, plugstack_lines=(), extra_conf=(), accounting=False):
        self.host = socket.gethostname().split(".")[0]
        # 0755: munged runs as user munge and must reach its own subdirectory.
        self.dir = tempfile.mkdtemp(prefix="accelfs-slurm-")
        os.chmod(self.dir, 0o755)
        self.gres = dict(gres)
        self.plugstack_lines = list(plugstack_lines)
        self.extra_conf = list(extra_conf)
        self.gres_conf_count = None
        self.cluster_name = "accelfs"
        self.slurm_user = "root"
        # accounting.py's MariaDB and slurmdbd, where asked: sacct then answers.
        self.accounting = None
        if accounting:
            from accounting import Accounting  # it uses this file's helpers
            self.accounting = Accounting(self)
        self.procs = {}
        self.conf = os.path.join(self.dir, "slurm.conf")
        self.env = dict(os.environ, SLURM_CONF=self.conf)
        # A sanitized build (sanitizer.py): the programs that load the plugin get its runtime first,
        # and their reports land in the cluster's directory; plugin_env is theirs.
        runtime = sanitizer.from_build()
        self.sanitizer = sanitizer.Sanitizer(runtime, self.path("sanitizer")) if runtime else None
        self.plugin_env = self.sanitizer.host_env(self.env) if self.sanitizer else self.env
        self.last_reports = ""

    # -- files ----------------------------------------------------------------------------
    def path(self, *parts):
        return os.path.join(self.dir, *parts)

    def gres_string(self, counts=None):
        counts = self.gres if counts is None else counts
        return ",".join(f"mig:{p}:{n}" for p, n in sorted(counts.items()))

    def write_config(self):
        munge = pwd.getpwnam("munge")
        mdir = self.path("munge")
        os.mkdir(mdir, 0o700)
        with open(os.path.join(mdir, "munge.key"), "wb") as f:
            f.write(os.urandom(1024))
        os.chmod(os.path.join(mdir, "munge.key"), 0o400)
        # The socket's directory must be reachable by every client (munged checks).
        os.mkdir(self.path("munge-run"), 0o755)
        for p in (mdir, os.path.join(mdir, "munge.key"), self.path("munge-run")):
            os.chown(p, munge.pw_uid, munge.pw_gid)
        for d in ("state", "spool", "out"):
            os.mkdir(self.path(d), 0o755)
        self.ctld_port, self.slurmd_port = free_port(), free_port()
        while self.slurmd_port == self.ctld_port:
            self.slurmd_port = free_port()
        lines = [
            f"ClusterName={self.cluster_name}",
            f"SlurmctldHost={self.host}(127.0.0.1)",
            f"SlurmUser={self.slurm_user}",
            f"SlurmctldPort={self.ctld_port}",
            f"SlurmdPort={self.slurmd_port}",
            "AuthType=auth/munge",
            "CredType=cred/munge",
            f"AuthInfo=socket={self.path('munge-run', 'munge.socket')}",
            f"StateSaveLocation={self.path('state')}",
            f"SlurmdSpoolDir={self.path('spool')}",
            f"SlurmctldPidFile={self.path('slurmctld.pid')}",
            f"SlurmdPidFile={self.path('slurmd.pid')}",
            f"SlurmctldLogFile={self.path('slurmctld.log')}",
            f"SlurmdLogFile={self.path('slurmd.log')}",
            "SlurmctldDebug=debug", "SlurmdDebug=debug",
            "ProctrackType=proctrack/linuxproc",
            "TaskPlugin=task/cgroup",
            "SelectType=select/cons_tres",
            "SelectTypeParameters=CR_Core",
            "GresTypes=mig",
            f"PlugStackConfig={self.path('plugstack.conf')}",
            # The job prolog (and so the carve) runs when the job is allocated, before any step:
            # salloc without a step still gets its partitions, and a failed carve is seen once.
            "PrologFlags=Alloc",
            "JobRequeue=1",
            "MpiDefault=none",
            "ReturnToService=2",
            "SlurmdTimeout=30",
            "SchedulerType=sched/backfill",
            "SchedulerParameters=bf_interval=1,sched_min_interval=100000",
            "MinJobAge=3600",
            "InactiveLimit=0", "KillWait=2", "UnkillableStepTimeout=30",
            "SlurmdParameters=config_overrides",
            f"NodeName={self.host} NodeAddr=127.0.0.1 CPUs=16 RealMemory=1000 "
            f"Gres={self.gres_string()} State=UNKNOWN",
            *(self.accounting.slurm_conf_lines() if self.accounting else []),
            *(self.extra_conf or ["PartitionName=test Nodes=ALL Default=YES MaxTime=INFINITE State=UP"]),
        ]
        with open(self.conf, "w") as f:
            f.write("\n".join(lines) + "\n")
        with open(self.path("gres.conf"), "w") as f:
            for p, n in sorted(self.gres.items()):
                f.write(f"NodeName={self.host} Name=mig Type={p} Count={self.gres_conf_count or n} Flags=CountOnly\n")
        with open(self.path("cgroup.conf"), "w") as f:
            f.write("CgroupPlugin=cgroup/v1\nConstrainDevices=yes\n")
        with open(self.path("plugstack.conf"), "w") as f:
            f.write("".join(line + "\n" for line in self.plugstack_lines))

    # -- daemons ----------------------------------------------------------------------------
    def _spawn(self, name, cmd, user=None, env=None):
        log = open(self.path(f"{name}.stderr"), "w")
        pre = ["runuser", "-u", user, "--"] if user else []
        self.procs[name] = subprocess.Popen(pre + cmd, stdout=log, stderr=subprocess.STDOUT, env=env or self.env,
                                            start_new_session=True)
        log.close()

    def start_munged(self):
        m = self.path("munge")
        sock = self.path("munge-run", "munge.socket")
        self._spawn("munged", ["munged", "-F", f"--socket={sock}", f"--key-file={m}/munge.key",
                               f"--pid-file={m}/munged.pid", f"--log-file={m}/munged.log",
                               f"--seed-file={m}/munged.seed"], user="munge")
        wait_until(lambda: os.path.exists(sock) or self._dead("munged"), START_TIMEOUT,
                   "munged's socket")
        self._check_alive("munged")

    def start_slurmctld(self):
        self._spawn("slurmctld", ["slurmctld", "-D", "-f", self.conf])
        wait_until(lambda: self.run(["scontrol", "ping"], check=False).returncode == 0 or self._dead("slurmctld"),
                   START_TIMEOUT, "slurmctld to answer scontrol ping")
        self._check_alive("slurmctld")

    def start_slurmd(self):
        # slurmd loads the plugin itself (slurm_spank_slurmd_exit), and so does every slurmstepd.
        stepd = ["-d", self.sanitizer.stepd_wrapper(self.path("slurmstepd"))] if self.sanitizer else []
        self._spawn("slurmd", ["slurmd", "-D", "-f", self.conf, "-N", self.host, *stepd], env=self.plugin_env)
        wait_until(lambda: self.node_state().split("+")[0] in ("IDLE", "MIXED", "ALLOCATED") or self._dead("slurmd"),
                   START_TIMEOUT, "the node to come up (sinfo)")
        self._check_alive("slurmd")

    def start_accounting(self):
        """The database and slurmdbd (accounting.py), before slurmctld: it registers with slurmdbd at once."""
        if self.accounting:
            self.accounting.start()

    def start(self):
        self.write_config()
        self.start_munged()
        self.start_accounting()
        self.start_slurmctld()
        self.start_slurmd()
        return self

    def _dead(self, name):
        return self.procs[name].poll() is not None

    def _check_alive(self, name):
        if self._dead(name):
            raise AssertionError(f"{name} exited ({self.procs[name].returncode}): {self.tail(name + '.stderr')}"
                                 f"{self.tail(name + '.log')}")

    def kill9(self, name):
        """kill -9 one daemon (a crash), and wait until it is gone."""
        p = self.procs[name]
        p.send_signal(signal.SIGKILL)
        p.wait(timeout=30)

    def stop_daemon(self, name, timeout=30):
        p = self.procs.get(name)
        if p is None or p.poll() is not None:
            return
        p.send_signal(signal.SIGTERM)
        try:
            p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            p.send_signal(signal.SIGKILL)
            p.wait(timeout=30)

    def stepds(self):
        """The slurmstepd processes of this cluster: they inherit slurmd's environment, which names our
        SLURM_CONF, so another Slurm on the machine is never touched."""
        mark = f"SLURM_CONF={self.conf}".encode()
        found = []
        for pid in os.listdir("/proc"):
            if not pid.isdigit():
                continue
            try:
                if not os.path.basename(os.readlink(f"/proc/{pid}/exe")).startswith("slurmstepd"):
                    continue
                with open(f"/proc/{pid}/environ", "rb") as f:
                    if mark in f.read().split(b"\0"):
                        found.append(int(pid))
            except OSError:
                continue
        return found

    def cleanup(self):
        """Cancel every job, stop the daemons, end any step daemon left by a killed slurmd, and
        remove the directory. Runs after a failure too, so every step tolerates a dead daemon."""
        if "slurmctld" in self.procs and not self._dead("slurmctld"):
            self.run(["scancel", "--full", "--partition=test"], check=False)
            try:
                wait_until(lambda: not self.jobs(states="all-active"), 30, "every job to end")
            except Exception:
                pass
        # slurmctld hands slurmdbd what it still holds, slurmdbd the database; munged answers all.
        for name in ("slurmd", "slurmctld", "slurmdbd", "mariadbd", "munged"):
            self.stop_daemon(name)
        for pid in self.stepds():
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        try:
            wait_until(lambda: not self.stepds(), 30, "the step daemons to exit")
        finally:
            # What the sanitizers said last (slurmd's exit): the directory goes now.
            self.last_reports = self.sanitizer_reports()
            shutil.rmtree(self.dir, ignore_errors=True)

    def sanitizer_reports(self):
        """The sanitizer reports of the programs that load the plugin since the last call, "" when
        none (and always in a plain build)."""
        return self.sanitizer.new_reports() if self.sanitizer else ""

    # -- clients ------------------------------------------------------------------------------
    def run(self, cmd, check=True, timeout=60, **kw):
        # sbatch, srun and salloc load the plugin (its --accel-mig), after a setpriv too.
        loads = any(os.path.basename(word) in sanitizer.PLUGIN_CLIENTS for word in cmd)
        res = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                             env=self.plugin_env if loads else self.env, **kw)
        if check and res.returncode != 0:
            raise AssertionError(f"{' '.join(cmd)} failed ({res.returncode}): {res.stdout}{res.stderr}")
        return res

    def tail(self, name, n=60):
        try:
            with open(self.path(name), errors="replace") as f:
                return "".join(f.readlines()[-n:])
        except OSError:
            return ""

    def node_info(self):
        res = self.run(["scontrol", "-d", "-o", "show", "node", self.host], check=False)
        out = {}
        for tok in res.stdout.split():
            k, _, v = tok.partition("=")
            out[k] = v
        return out

    def node_state(self):
        return self.node_info().get("State", "")

    def jobs(self, states="all-active"):
        """{jobid: state} of the jobs squeue lists ('all-active': pending, running, completing)."""
        arg = ["--states=PENDING,RUNNING,CONFIGURING,COMPLETING,SUSPENDED,REQUEUED"] if states == "all-active" \
            else [f"--states={states}"]
        res = self.run(["squeue", "-h", "-o", "%i %T", *arg], check=False)
        if res.returncode != 0:
            return {}
        return dict(line.split() for line in res.stdout.splitlines() if line.strip())

    def job_field(self, jobid, key):
        """One field of `scontrol show job`; AdminComment and the like run to the end of their line."""
        res = self.run(["scontrol", "show", "job", str(jobid)], check=False)
        for line in res.stdout.splitlines():
            line = line.strip()
            if line.startswith(key + "=") and key in ("AdminComment", "Comment", "Reason"):
                return line[len(key) + 1:]
            for tok in line.split():
                k, _, v = tok.partition("=")
                if k == key:
                    return v
        return None

    def slurm_gres(self):
        """Slurm's configured count per profile on the node (Gres=) and what jobs use (GresUsed=)."""
        info = self.node_info()
        return parse_gres(info.get("Gres", "")), parse_gres(info.get("GresUsed", ""))

    def drain_reason(self):
        res = self.run(["sinfo", "-R", "-h", "-o", "%n %E"], check=False)
        return res.stdout.strip()


def parse_gres(text):
    """'mig:1g.18gb:7,mig:8g.96gb:0(IDX:N/A)' -> {'1g.18gb': 7, '8g.96gb': 0}."""
    out = {}
    if not text or text == "(null)":
        return out
    for item in text.split(","):
        item = item.split("(")[0]
        parts = item.split(":")
        if len(parts) == 3 and parts[0] == "mig":
            out[parts[1]] = int(parts[2])
    return out
