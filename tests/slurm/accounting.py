# SPDX-License-Identifier: MIT
"""Slurm accounting for the test cluster (cluster.py): a private MariaDB and a slurmdbd in front of it,
so that `sacct` answers from the records slurmctld sends at a job's end (docs/slurm.md).

Nothing here touches the machine's own database: MariaDB gets a fresh data directory and a unix socket
in the cluster's directory, no TCP (--skip-networking), and runs as the test's own user; a system
MariaDB the package may have started is neither used nor disturbed.  slurmdbd reaches it through that
socket (its mysql client takes MYSQL_UNIX_PORT when StorageHost is localhost) and listens on a free
loopback port of its own.
"""
import os
import pwd
import shutil
import subprocess

from cluster import START_TIMEOUT, free_port, wait_until

# What the Debian packages mariadb-server, slurmdbd and slurm-wlm-mysql-plugin bring (install-deps).
PROGRAMS = ("mariadb-install-db", "mariadbd", "slurmdbd", "sacctmgr", "sacct")
ACCOUNT = "accelfs-test"


def _plugin_dir():
    """Slurm's plugin directory: where libslurmfull.so is, as slurmdbd is linked (tests/slurm/meson.build)."""
    try:
        out = subprocess.run(["ldd", shutil.which("slurmdbd")], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    for word in out.split():
        if word.startswith("/") and os.path.basename(word).startswith("libslurmfull.so"):
            return os.path.dirname(word)
    return None


def missing():
    """Why accounting cannot run on this machine (a sentence), or None when it can."""
    absent = [p for p in PROGRAMS if not shutil.which(p)]
    if absent:
        return (f"Slurm accounting is not installed ({', '.join(absent)} missing): "
                "scripts/install-deps installs mariadb-server, slurmdbd and slurm-wlm-mysql-plugin")
    plugins = _plugin_dir()
    if plugins and not os.path.exists(os.path.join(plugins, "accounting_storage_mysql.so")):
        return (f"slurmdbd has no MySQL storage plugin ({plugins}/accounting_storage_mysql.so): "
                "scripts/install-deps installs slurm-wlm-mysql-plugin")
    return None


class Accounting:
    """The database and slurmdbd of one Cluster: their daemons run in its procs, their files in its dir."""

    def __init__(self, cluster):
        self.c = cluster
        self.user = pwd.getpwuid(os.getuid()).pw_name
        self.socket = cluster.path("db", "mariadb.sock")
        self.port = None

    def slurm_conf_lines(self):
        """slurm.conf's side: slurmctld sends every job's records to our slurmdbd."""
        self.port = free_port()
        while self.port in (self.c.ctld_port, self.c.slurmd_port):
            self.port = free_port()
        return ["AccountingStorageType=accounting_storage/slurmdbd",
                "AccountingStorageHost=127.0.0.1",
                f"AccountingStoragePort={self.port}",
                # With auth/munge this is the munged socket to use, not a password (slurm.conf(5)).
                f"AccountingStoragePass={self.c.path('munge-run', 'munge.socket')}"]

    def start(self):
        """The database, then slurmdbd, then the cluster and an account in it: before slurmctld starts,
        so that it registers with slurmdbd at once and its first job has a home."""
        self._start_database()
        self._start_slurmdbd()
        # One sacctmgr for all three: each call is a connection and a commit.
        self.c.run(["sacctmgr", "-i"], input=(f"add cluster {self.c.cluster_name}\n"
                                              f"add account {ACCOUNT} cluster={self.c.cluster_name} "
                                              "description=tests organization=accelfs\n"
                                              f"add user {self.user} account={ACCOUNT} "
                                              f"cluster={self.c.cluster_name}\n"))

    def _start_database(self):
        data = self.c.path("db", "data")
        os.makedirs(data, 0o700)
        os.chmod(self.c.path("db"), 0o700)
        # Small and unsynced: it lives as long as the test, and a crash of it loses nothing we keep.
        # The same InnoDB sizes for the install as for the server, or the server resizes its log.
        innodb = ["--innodb-buffer-pool-size=32M", "--innodb-log-file-size=8M", "--innodb-file-per-table=OFF",
                  "--innodb-flush-log-at-trx-commit=0", "--skip-innodb-doublewrite", "--innodb-flush-method=nosync"]
        # --no-defaults: none of /etc/mysql's settings (its socket, its port) apply to this one.
        res = subprocess.run(["mariadb-install-db", "--no-defaults", f"--datadir={data}", f"--user={self.user}",
                              "--auth-root-authentication-method=socket", "--skip-test-db", *innodb],
                             capture_output=True, text=True, timeout=120)
        if res.returncode != 0:
            raise AssertionError(f"mariadb-install-db failed ({res.returncode}): {res.stdout}{res.stderr}")
        self.c._spawn("mariadbd", ["mariadbd", "--no-defaults", f"--datadir={data}", f"--socket={self.socket}",
                                   "--skip-networking", f"--user={self.user}", "--skip-log-bin",
                                   f"--pid-file={self.c.path('db', 'mariadbd.pid')}",
                                   f"--log-error={self.c.path('mariadbd.log')}", "--performance-schema=OFF",
                                   *innodb])
        wait_until(lambda: os.path.exists(self.socket) or self.c._dead("mariadbd"), START_TIMEOUT,
                   "mariadbd's socket")
        self.c._check_alive("mariadbd")

    def _start_slurmdbd(self):
        conf = self.c.path("slurmdbd.conf")
        slurm_user = pwd.getpwnam(self.c.slurm_user)
        # slurmdbd refuses a file others may read (it holds the database's password where there is one).
        fd = os.open(conf, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write("\n".join([
                "DbdHost=localhost", "DbdAddr=127.0.0.1", f"DbdPort={self.port}",
                f"SlurmUser={self.c.slurm_user}",
                "AuthType=auth/munge", f"AuthInfo=socket={self.c.path('munge-run', 'munge.socket')}",
                f"PidFile={self.c.path('slurmdbd.pid')}", f"LogFile={self.c.path('slurmdbd.log')}",
                "DebugLevel=info",
                "StorageType=accounting_storage/mysql", "StorageHost=localhost", f"StorageUser={self.user}",
                "StorageLoc=slurm_acct_db",
            ]) + "\n")
        os.chown(conf, slurm_user.pw_uid, slurm_user.pw_gid)
        # slurmdbd reads the slurmdbd.conf beside SLURM_CONF's file.
        self.c._spawn("slurmdbd", ["slurmdbd", "-D"], env=dict(self.c.env, MYSQL_UNIX_PORT=self.socket))
        # It answers once its tables exist: the first start creates them.
        wait_until(lambda: self.c.run(["sacctmgr", "-n", "-P", "show", "cluster"], check=False).returncode == 0
                   or self.c._dead("slurmdbd"), START_TIMEOUT, "slurmdbd to answer sacctmgr")
        self.c._check_alive("slurmdbd")

    def record(self, jobid):
        """What slurmdbd holds of the job's allocation: {"State": ..., "AdminComment": ...}, {} while it
        has no record of the job (slurmctld sends the start and the end as they happen, not at once).
        jobid is the job's own id (JobIDRaw: an array's task too, whose JobID is <array>_<index>)."""
        res = self.c.run(["sacct", "-j", str(jobid), "-X", "-n", "-P", "-o", "JobIDRaw,State,AdminComment"],
                         check=False)
        for line in res.stdout.splitlines():
            job, state, comment = (line.split("|", 2) + ["", ""])[:3]
            if job == str(jobid):
                return {"State": state, "AdminComment": comment}
        return {}
