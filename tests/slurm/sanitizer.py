# SPDX-License-Identifier: MIT
"""The SPANK plugin of a sanitized build (scripts/test --sanitize) inside Slurm's own programs.

An ASan/UBSan-built plugin cannot be dlopen()ed by an uninstrumented program unless the sanitizer
runtime was loaded first, before any other library: the programs that load it (slurmd, every
slurmstepd, and the clients sbatch, srun and salloc) get the runtime in LD_PRELOAD.  The libraries
are the ones the compiler that built the plugin names (tests/slurm/meson.build sets
ACCELFS_SANITIZE from meson's b_sanitize and ACCELFS_SANITIZER_RUNTIME from `-print-file-name`).

Those are daemons whose stderr nobody reads, so every process writes its reports to a file of its
own in one directory (log_path: <dir>/asan.<pid>, <dir>/ubsan.<pid>), which the tests read after
each test.  Leak detection is off in them: a leak report covers the whole process, and Slurm's
daemons are not ours to make leak-free; the plugin's own code is checked for leaks by its C unit
tests under valgrind (scripts/test --valgrind).  What is ours and a program of its own
(accelfs-slurm-sync, the accelfs daemon) keeps leak detection on; lsan.supp forgives the sync only
what libslurm leaks inside its own calls.
"""
import os
import shutil

HERE = os.path.dirname(os.path.abspath(__file__))

# Slurm programs that load the plugin (plugstack.conf): these get the runtime preloaded.
PLUGIN_CLIENTS = ("sbatch", "srun", "salloc")


def from_build():
    """The runtime libraries to preload when meson built the plugin with sanitizers, else None."""
    sanitize = os.environ.get("ACCELFS_SANITIZE", "none")
    if sanitize in ("", "none"):
        return None
    runtime = [os.path.realpath(p) for p in os.environ.get("ACCELFS_SANITIZER_RUNTIME", "").split(":") if p]
    if len(runtime) != len(sanitize.split(",")) or not all(os.path.isabs(p) and os.path.exists(p) for p in runtime):
        # gcc echoes a name it does not know back unchanged: not a path.
        raise AssertionError(f"b_sanitize={sanitize}, but no runtime library to preload for each sanitizer "
                             f"(ACCELFS_SANITIZER_RUNTIME={os.environ.get('ACCELFS_SANITIZER_RUNTIME', '')!r}): "
                             "tests/slurm/meson.build names gcc's libasan and libubsan only")
    return runtime


class Sanitizer:
    """The preload, the options and the report directory of one test cluster."""

    def __init__(self, runtime, directory):
        self.runtime = runtime
        self.dir = directory
        # Sticky and writable by all: a slurmstepd drops to the job's user, and a user's sbatch
        # loads the plugin too; each must be able to write its own report.
        os.makedirs(self.dir, exist_ok=True)
        os.chmod(self.dir, 0o1777)
        self.seen = set()

    def options(self, leaks):
        """ASAN_OPTIONS and UBSAN_OPTIONS: a report to this directory, the process stopped at the first
        (exit, not abort: a daemon's core is no use here), and leaks looked for only in our programs."""
        return {
            "ASAN_OPTIONS": ":".join([f"log_path={self.dir}/asan", f"detect_leaks={int(leaks)}",
                                      "halt_on_error=1", "abort_on_error=0", "disable_coredump=1"]),
            "UBSAN_OPTIONS": ":".join([f"log_path={self.dir}/ubsan", "print_stacktrace=1", "halt_on_error=1",
                                       "abort_on_error=0"]),
        }

    def host_env(self, base):
        """The environment of a Slurm program that loads the plugin: the runtime preloaded first."""
        preload = " ".join(self.runtime + ([base["LD_PRELOAD"]] if base.get("LD_PRELOAD") else []))
        return dict(base, LD_PRELOAD=preload, **self.options(leaks=False))

    def own_env(self, base):
        """The environment of a sanitized program of ours: reports here, leaks looked for, but for
        those libslurm makes itself (lsan.supp says which and why)."""
        return dict(base, **self.options(leaks=True),
                    LSAN_OPTIONS=f"suppressions={os.path.join(HERE, 'lsan.supp')}:print_suppressions=0")

    def stepd_wrapper(self, path):
        """A slurmstepd for slurmd's -d: the real one with the runtime preloaded.  slurmd runs a job's
        SPANK prolog and epilog as `slurmstepd spank prolog` with an environment it builds itself,
        not its own, so what slurmd inherits would not reach them."""
        real = shutil.which("slurmstepd", path="/usr/sbin:/usr/bin:/sbin:/bin:" + os.environ.get("PATH", ""))
        if not real:
            raise AssertionError("slurmstepd not found")
        env = self.host_env({})
        with open(path, "w") as f:
            f.write("#!/bin/sh\n" + "".join(f"export {k}='{v}'\n" for k, v in sorted(env.items())) +
                    f'exec {real} "$@"\n')
        os.chmod(path, 0o755)
        return path

    def new_reports(self):
        """The reports written since the last call."""
        return new_reports(self.dir, self.seen)


def new_reports(directory, seen, prefix=""):
    """The reports in directory (files named prefix*, one process's each) not in seen, which it adds to."""
    out = []
    for name in sorted(os.listdir(directory)):
        if name in seen or not name.startswith(prefix):
            continue
        with open(os.path.join(directory, name), errors="replace") as f:
            text = f.read()
        if text:
            seen.add(name)
            out.append(f"--- {name} ---\n{text}")
    return "".join(out)
