# SPDX-License-Identifier: MIT
"""Into containers: device nodes bound into a mount namespace, CDI specs that
validate and list exactly the live jobs, delegation to other users, and
node-level device selection."""
import errno
import json
import os
import stat
import subprocess
import unittest
import warnings

from harness import ACCELFS, Node, NodeTestCase, cdi_tag, start_daemon, wait_until

# The CDI project's JSON schema, as Debian ships it with the CDI library podman 4.3 is built with
# (scripts/packages.txt installs the package); ACCELFS_CDI_SCHEMA_DIR points elsewhere.
CDI_SCHEMA_PACKAGE = "golang-github-container-orchestrated-devices-container-device-interface-dev"
SCHEMA_DIRS = [os.environ.get("ACCELFS_CDI_SCHEMA_DIR", ""),
               "/usr/share/gocode/src/github.com/container-orchestrated-devices/container-device-interface/schema"]


def cdi_validator():
    """A jsonschema validator for CDI specs, from the CDI project's schema, or None."""
    try:
        import jsonschema
    except ImportError:
        return None
    for d in SCHEMA_DIRS:
        schema_path = os.path.join(d, "schema.json")
        if d and os.path.exists(schema_path):
            with open(schema_path) as f:
                schema = json.load(f)
            with open(os.path.join(d, "defs.json")) as f:
                defs = json.load(f)
            warnings.simplefilter("ignore", DeprecationWarning)  # RefResolver, in newer jsonschema
            resolver = jsonschema.RefResolver(base_uri="file://" + os.path.abspath(d) + "/", referrer=schema,
                                              store={"defs.json": defs,
                                                     "file://" + os.path.abspath(d) + "/defs.json": defs})
            return jsonschema.Draft7Validator(schema, resolver=resolver)
    return None


def as_user(uid, gids, *cmd):
    """Run cmd as another user (no passwd entry needed)."""
    groups = ",".join(str(g) for g in gids) if gids else ""
    args = ["setpriv", f"--reuid={uid}", f"--regid={gids[0] if gids else uid}"]
    args += [f"--groups={groups}"] if groups else ["--clear-groups"]
    return subprocess.run([*args, *cmd], capture_output=True, text=True)


class DeviceNodes(NodeTestCase):
    def test_job_dev_binds_into_a_mount_namespace(self):
        n = self.node
        os.mkdir(n.path("ppu3", "mig", "4g.48gb", "ctr"))
        devices = {}
        for line in n.read("ppu3", "mig", "4g.48gb", "ctr", "devices").splitlines():
            path, kind, numbers = line.split()
            devices[path[len("/dev/"):]] = tuple(int(x) for x in numbers.split(":"))
        script = ("set -e; mkdir -p /tmp/accel-ctr-dev; mount --bind \"$1\" /tmp/accel-ctr-dev; "
                  "cd /tmp/accel-ctr-dev; find . ! -type d | sort | while read f; do "
                  "stat -c '%n %F %t %T' \"$f\"; done")
        res = subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-c", script, "sh",
                              n.path("ppu3", "mig", "4g.48gb", "ctr", "dev")],
                             capture_output=True, text=True, check=True)
        seen = {}
        for line in res.stdout.splitlines():
            name, rest = line.split(" ", 1)
            kind, maj, mnr = rest.rsplit(" ", 2)
            self.assertEqual(kind, "character special file", line)
            seen[name[2:]] = (int(maj, 16), int(mnr, 16))
        # exactly the job's nodes, with the numbers devices lists; nothing of another job
        self.assertEqual(seen, devices)

    def test_nodes_belong_to_the_job_owner(self):
        n = self.node
        os.mkdir(n.path("ppu3", "mig", "4g.48gb", "mine"))
        st = os.stat(n.path("ppu3", "mig", "4g.48gb", "mine", "dev", "alixpu_ppu3"))
        self.assertTrue(stat.S_ISCHR(st.st_mode))
        self.assertEqual(stat.S_IMODE(st.st_mode), 0o660)
        self.assertEqual(st.st_uid, 0)


class Cdi(NodeTestCase):
    def names(self):
        return sorted(self.node.cdi_specs())

    def files(self):
        """{job: (inode, mtime)} of this daemon's spec files: a file written again is a new inode."""
        return {job: (os.stat(p).st_ino, os.stat(p).st_mtime_ns) for job, p in self.node.cdi_files().items()}

    def validate(self, spec, kind="accelfs.io/mig"):
        self.assertIn(spec["cdiVersion"], ("0.3.0", "0.5.0"))
        self.assertEqual(spec["kind"], kind)
        shared = spec.get("containerEdits", {}).get("deviceNodes", [])
        for dev in spec["devices"]:
            for node in dev["containerEdits"]["deviceNodes"] + shared:
                self.assertTrue(node["path"].startswith("/dev/"))
                self.assertEqual(node["type"], "c")
                if kind == "accelfs.io/mig":
                    self.assertIsInstance(node["major"], int)
                    self.assertIsInstance(node["minor"], int)
                else:  # a job's own spec: the runtime stats the node in the job's dev/
                    self.assertNotIn("major", node)
                self.assertEqual(node["permissions"], "rw")
                self.assertEqual(node["fileMode"], 0o660)
        validator = cdi_validator()
        if validator is None:
            self.fail(f"the CDI JSON schema ({CDI_SCHEMA_PACKAGE}) or python3-jsonschema is missing: "
                      "scripts/install-deps installs both")
        errors = sorted(validator.iter_errors(spec), key=str)
        self.assertEqual(errors, [], "\n".join(str(e) for e in errors))

    def test_node_spec_lists_exactly_the_live_jobs(self):
        n = self.node
        self.assertEqual(self.names(), [], "no job, no spec file (a spec must list a device)")
        os.mkdir(n.path("ppu3", "mig", "4g.48gb", "a"))
        os.mkdir(n.path("gpu0", "mig", "1g.18gb", "b"))
        os.mkdir(n.path("ppu5", "mig", "8g.96gb", "9lives"))
        self.assertEqual(self.names(), ["9lives", "a", "b"])
        for job, spec in self.node.cdi_specs().items():
            self.validate(spec)
            self.assertEqual([d["name"] for d in spec["devices"]], [job], "one file, one job")
        # a job's nodes in its spec equal its devices file
        dev_a = self.node.cdi_specs()["a"]["devices"][0]
        listed = sorted(f"{x['path']} c {x['major']}:{x['minor']}" for x in dev_a["containerEdits"]["deviceNodes"])
        self.assertEqual(listed, sorted(n.read("ppu3", "mig", "4g.48gb", "a", "devices").splitlines()))
        os.rmdir(n.path("gpu0", "mig", "1g.18gb", "b"))
        self.assertEqual(self.names(), ["9lives", "a"])
        n.kill9()
        for path in n.cdi_files().values():
            os.unlink(path)
        n.start()
        self.assertEqual(self.names(), ["9lives", "a"])
        # a clean stop withdraws them (no daemon records the containers meanwhile); the start brings them back
        n.stop()
        self.assertEqual(self.names(), [])
        self.assertIn("withdrew the CDI spec files of 2 job(s)", n.log())
        n.start()
        self.assertEqual(self.names(), ["9lives", "a"])
        # an instance destroyed behind our back leaves the specs at once (the job is lost)
        st = n.keyvals("ppu5", "mig", "8g.96gb", "9lives", "status")
        n.smi("ppu", "mig", "-i", 5, "-gi", st["gi"], "-ci", st["ci"], "-dci")
        n.smi("ppu", "mig", "-i", 5, "-gi", st["gi"], "-dgi")
        wait_until(lambda: self.names() == ["a"], what="the lost job to leave the CDI specs")
        self.validate(self.node.cdi_specs()["a"])

    def test_a_carve_writes_one_file_and_a_reclaim_removes_one(self):
        n = self.node
        for dev, job in (("ppu3", "j1"), ("ppu3", "j2"), ("ppu5", "j3")):
            os.mkdir(n.path(dev, "mig", "4g.48gb", job))
        before = self.files()
        self.assertEqual(sorted(before), ["j1", "j2", "j3"])
        # a carve on another card, and one on the card of j3: no other job's file is written again
        os.mkdir(n.path("ppu4", "mig", "4g.48gb", "j4"))
        os.mkdir(n.path("ppu5", "mig", "4g.48gb", "j5"))
        now = self.files()
        self.assertEqual(sorted(now), ["j1", "j2", "j3", "j4", "j5"])
        self.assertEqual({j: now[j] for j in before}, before)
        os.rmdir(n.path("ppu5", "mig", "4g.48gb", "j5"))
        os.rmdir(n.path("mig", "4g.48gb", "j4"))
        self.assertEqual(self.files(), before)
        # the daemon's tag alone: nothing else of accelfs in the directory but its lock
        tag = f"accelfs-{cdi_tag(n.state)}-"
        self.assertEqual(sorted(x for x in os.listdir(n.cdi_dir()) if not x.startswith(tag)), ["accelfs.lock"])

    def test_a_restart_sweeps_its_own_stale_files_and_no_one_elses(self):
        n = self.node
        os.mkdir(n.path("ppu3", "mig", "4g.48gb", "a"))
        os.mkdir(n.path("ppu4", "mig", "4g.48gb", "b"))
        os.mkdir(n.path("ppu4", "mig", "4g.48gb", "c"))
        b = n.keyvals("ppu4", "mig", "4g.48gb", "b", "status")
        n.kill9()
        # what a crash leaves, and what happens while the daemon is down
        d = n.cdi_dir()
        tag = cdi_tag(n.state)
        with open(os.path.join(d, f"accelfs-{tag}-ghost.json"), "w") as f:  # a job gone before a crash
            f.write("{}")
        with open(os.path.join(d, f"accelfs-{tag}-a.json.tmp.99999"), "w") as f:  # a write cut short
            f.write("{")
        foreign = os.path.join(d, "accelfs-0badf00d-a.json")  # another daemon's job of the same name
        with open(foreign, "w") as f:
            f.write("{}")
        with open(os.path.join(d, "accelfs.json"), "w") as f:  # the single node spec of an older accelfs
            f.write('{"cdiVersion": "0.5.0", "kind": "accelfs.io/mig", "devices": []}')
        n.smi("ppu", "mig", "-i", 4, "-gi", b["gi"], "-ci", b["ci"], "-dci")  # b's instance destroyed by hand
        n.smi("ppu", "mig", "-i", 4, "-gi", b["gi"], "-dgi")
        n.start()
        self.assertEqual(n.keyvals("ppu4", "mig", "4g.48gb", "b", "status")["state"], "lost")
        self.assertEqual(self.names(), ["a", "c"], "b is lost: not resolvable; ghost and the temporary file gone")
        self.assertEqual(sorted(x for x in os.listdir(d) if x.startswith(f"accelfs-{tag}-")),
                         [f"accelfs-{tag}-a.json", f"accelfs-{tag}-c.json"])
        self.assertTrue(os.path.exists(foreign), "another daemon's file is not ours to remove")
        self.assertFalse(os.path.exists(os.path.join(d, "accelfs.json")))
        log = n.log()
        self.assertIn("removed 3 CDI spec file(s) of this daemon's whose jobs are gone", log)
        self.assertIn("the node spec of an older accelfs", log)
        self.assertIn("CDI spec file(s) of another accelfs (accelfs-0badf00d-*.json", log)
        self.validate(n.cdi_specs()["a"])

    def test_one_daemon_per_cdi_directory(self):
        n = self.node
        os.mkdir(n.path("ppu3", "mig", "4g.48gb", "job1"))
        mine = self.files()
        shared = [f"--cdi-dir={n.cdi_dir()}"]
        other = Node()
        try:
            # the other daemon, on a CDI directory of its own, has a job1 too
            other.extra = [f"--cdi-dir={os.path.join(other.state, 'own-cdi')}"]
            other.start()
            os.mkdir(other.path("ppu3", "mig", "4g.48gb", "job1"))
            other.stop()
            # on this daemon's CDI directory it is refused, naming this one, and changes nothing
            other.extra = shared
            res = subprocess.run([ACCELFS, "--sim", f"--state-dir={other.state}", *shared, other.mnt],
                                 capture_output=True, text=True, timeout=60)
            self.assertEqual(res.returncode, 1, res.stderr)
            self.assertIn(f"accelfs: the CDI directory {n.cdi_dir()} is in use by accelfs pid {n.pid()} "
                          f"(state directory {os.path.realpath(n.state)}, mounted on {n.mnt}): one daemon per CDI "
                          f"directory", res.stderr)
            self.assertIn(f"Stop that one first (umount {n.mnt}), or give this one its own --cdi-dir", res.stderr)
            self.assertFalse(os.path.ismount(other.mnt))
            self.assertEqual(self.files(), mine)
            # a daemon that only looks writes no spec and claims nothing
            res = start_daemon([ACCELFS, "--sim", f"--state-dir={other.state}", *shared, "--read-only", other.mnt],
                               other.mnt, capture_output=True, text=True, timeout=60)
            self.assertEqual(res.returncode, 0, res.stderr)
            other.mounted = True
            self.assertTrue(os.path.isdir(other.path("ppu3", "mig", "4g.48gb", "job1")))
            self.assertEqual(sorted(os.listdir(n.cdi_dir())), sorted(["accelfs.lock", *map(os.path.basename,
                                                                                        n.cdi_files().values())]))
            self.assertEqual(self.files(), mine)
            other.stop()
            # once this one is gone (killed: its files stay) the other takes the directory, and leaves them alone
            n.kill9()
            other.start()
            self.assertEqual(sorted(other.cdi_files()), ["job1"])
            self.assertEqual(self.files(), mine)
            self.assertIn("CDI spec file(s) of another accelfs", other.log())
        finally:
            other.cleanup()
        n.start()
        self.assertEqual(self.files().keys(), mine.keys())

    def test_job_spec_validates(self):
        n = self.node
        os.mkdir(n.path("ppu3", "mig", "4g.48gb", "j"))
        spec = json.loads(n.read("ppu3", "mig", "4g.48gb", "j", "cdi.json"))
        self.assertEqual([d["name"] for d in spec["devices"]], ["j"])
        shared = sorted(x["path"] for x in spec["containerEdits"]["deviceNodes"])
        self.assertEqual(shared, ["/dev/alixpu", "/dev/alixpu_ctl"])
        own = sorted(x["path"] for x in spec["devices"][0]["containerEdits"]["deviceNodes"])
        self.assertEqual(own[0], "/dev/alixpu-caps/" + own[0].split("/")[-1])
        self.assertIn("/dev/alixpu_ppu3", own)
        self.validate(spec, kind="accelfs.io/job")


class Delegation(NodeTestCase):
    USER, OTHER, GROUP = 4321, 4322, 5000

    def test_carving_is_roots_until_delegated(self):
        n = self.node
        prof = n.path("ppu3", "mig", "4g.48gb")
        res = as_user(self.USER, [self.GROUP], "mkdir", os.path.join(prof, "u1"))
        self.assertNotEqual(res.returncode, 0)
        self.assertIn("Permission denied", res.stderr)
        os.chown(prof, 0, self.GROUP)
        os.chmod(prof, 0o1775)
        res = as_user(self.USER, [self.GROUP], "mkdir", os.path.join(prof, "u1"))
        self.assertEqual(res.returncode, 0, res.stderr)
        st = os.stat(os.path.join(prof, "u1"))
        self.assertEqual((st.st_uid, st.st_gid), (self.USER, self.GROUP))
        self.assertEqual(n.keyvals("ppu3", "mig", "4g.48gb", "u1", "status")["owner"], f"{self.USER}:{self.GROUP}")
        # another member of the group cannot remove it; its owner can
        res = as_user(self.OTHER, [self.GROUP], "rmdir", os.path.join(prof, "u1"))
        self.assertNotEqual(res.returncode, 0)
        self.assertTrue(os.path.isdir(os.path.join(prof, "u1")))
        # the delegation is kept across a restart
        n.restart()
        st = os.stat(prof)
        self.assertEqual(st.st_gid, self.GROUP)
        self.assertEqual(stat.S_IMODE(st.st_mode), 0o1775)
        res = as_user(self.USER, [self.GROUP], "rmdir", os.path.join(prof, "u1"))
        self.assertEqual(res.returncode, 0, res.stderr)
        # outside the delegated profile, still root's
        res = as_user(self.USER, [self.GROUP], "mkdir", n.path("ppu3", "mig", "8g.96gb", "u2"))
        self.assertNotEqual(res.returncode, 0)

    def test_a_device_is_delegated_by_its_directory(self):
        n = self.node
        os.chown(n.path("ppu4"), 0, self.GROUP)
        os.chmod(n.path("ppu4"), 0o775)
        wait_until(lambda: os.stat(n.path("ppu4", "mig", "8g.96gb")).st_gid == self.GROUP,
                   what="profiles of ppu4 to inherit the group")
        self.assertTrue(os.stat(n.path("ppu4", "mig", "8g.96gb")).st_mode & stat.S_ISVTX)
        res = as_user(self.USER, [self.GROUP], "mkdir", n.path("ppu4", "mig", "8g.96gb", "dev1"))
        self.assertEqual(res.returncode, 0, res.stderr)
        res = as_user(self.USER, [self.GROUP], "mkdir", n.path("ppu5", "mig", "8g.96gb", "dev2"))
        self.assertNotEqual(res.returncode, 0)
        # mkdir where no object can be made is still refused for the delegate
        res = as_user(self.USER, [self.GROUP], "mkdir", n.path("ppu4", "x"))
        self.assertIn("Operation not permitted", res.stderr)

    def test_only_chown_and_chmod_of_directories(self):
        n = self.node
        self.assertErrno(errno.EPERM, os.chmod, n.path("ppu3", "info"), 0o644)
        os.mkdir(n.path("ppu3", "mig", "4g.48gb", "j"))
        self.assertErrno(errno.EPERM, os.chmod, n.path("ppu3", "mig", "4g.48gb", "j"), 0o777)


class NodeLevel(NodeTestCase):
    def test_fills_devices_in_the_documented_order(self):
        n = self.node
        mig = n.path("mig", "4g.48gb")
        for job in ("a", "b", "c"):
            os.mkdir(os.path.join(mig, job))
        where = {j: os.readlink(os.path.join(mig, j, "device")) for j in ("a", "b", "c")}
        # least capacity lost: the second fills ppu0 rather than breaking a new PPU
        self.assertEqual(where["a"], "../../../ppu0/mig/4g.48gb/a")
        self.assertEqual(where["b"], "../../../ppu0/mig/4g.48gb/b")
        self.assertEqual(where["c"], "../../../ppu1/mig/4g.48gb/c")
        # the same job in both places, same files
        self.assertEqual(n.read("mig", "4g.48gb", "c", "status"), n.read("ppu1", "mig", "4g.48gb", "c", "status"))
        self.assertEqual(sorted(os.listdir(os.path.join(mig, "c"))),
                         ["cdi.json", "containers", "dev", "device", "devices", "health", "holders", "processes", "reclaim", "status", "utilization"])
        # rmdir works from either place, and the other place forgets the job at once
        self.assertTrue(os.path.isdir(n.path("ppu0", "mig", "4g.48gb", "a")))  # now cached by the kernel
        self.assertTrue(os.path.isdir(os.path.join(mig, "c")))
        os.rmdir(os.path.join(mig, "a"))
        self.assertFalse(os.path.exists(n.path("ppu0", "mig", "4g.48gb", "a")))
        os.rmdir(n.path("ppu1", "mig", "4g.48gb", "c"))
        self.assertFalse(os.path.exists(os.path.join(mig, "c")))

    def test_never_picks_a_device_that_cannot_fit(self):
        n = self.node
        # fill ppu0 whole and make ppu1 refuse: the next 4g.48gb goes to ppu2
        os.mkdir(n.path("ppu0", "mig", "8g.96gb", "full"))
        n.smi("ppu", "-i", 1, "-mig", 0)
        wait_until(lambda: not os.path.exists(n.path("ppu1", "mig", "4g.48gb")), what="ppu1 mode off")
        os.mkdir(n.path("mig", "4g.48gb", "x"))
        self.assertEqual(os.readlink(n.path("mig", "4g.48gb", "x", "device")), "../../../ppu2/mig/4g.48gb/x")
        # a profile only the GPU offers: once the GPU is full, ENOSPC with a reason
        os.mkdir(n.path("mig", "7g.141gb", "whole"))
        self.assertEqual(os.readlink(n.path("mig", "7g.141gb", "whole", "device")),
                         "../../../gpu0/mig/7g.141gb/whole")
        self.assertErrno(errno.ENOSPC, os.mkdir, n.path("mig", "1g.18gb", "y"))
        self.assertIn("no device has a free placement", n.read("mig", "1g.18gb", "last_error"))
        self.assertEqual(n.read("mig", "1g.18gb", "available").strip(), "0")


if __name__ == "__main__":
    unittest.main(verbosity=2)
