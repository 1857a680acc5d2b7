# SPDX-License-Identifier: MIT
"""Every row of docs/tree.md's mkdir/rmdir table, run against a T-Head PPU and
an NVIDIA GPU of the simulated node: one suite, parametrized by family."""
import errno
import os
import threading
import unittest

from harness import NVIDIA, THEAD, NodeTestCase, topology_path, wait_until


class ContractRows:
    F = None  # the family under test (harness.THEAD / harness.NVIDIA)

    def prof(self, *more):
        return self.node.path(self.F["device"], "mig", self.F["profile"], *more)

    def test_mkdir_with_room_carves_and_shows_the_job(self):
        F, n = self.F, self.node
        self.assertEqual(n.available(F["device"], F["profile"]), F["capacity"])
        wide_before = n.available(F["device"], F["wide"])
        self.assertEqual(wide_before, 1)
        os.mkdir(self.prof("job1"))
        self.assertEqual(sorted(os.listdir(self.prof("job1"))),
                         ["cdi.json", "containers", "dev", "devices", "holders", "reclaim", "status"])
        st = n.keyvals(F["device"], "mig", F["profile"], "job1", "status")
        self.assertEqual(st["state"], "ready")
        self.assertEqual(st["profile"], F["profile"])
        self.assertEqual(st["profile_id"], str(F["profile_id"]))
        self.assertEqual(st["placement"], "0:4")
        self.assertTrue(st["uuid"].startswith("MIG-"), st["uuid"])
        self.assertTrue(st["gi"].isdigit() and st["ci"].isdigit())
        # available drops for this profile and for every profile sharing the slices
        self.assertEqual(n.available(F["device"], F["profile"]), F["capacity"] - 1)
        self.assertEqual(n.available(F["device"], F["wide"]), 0)
        # the driver agrees: the instance exists with that placement
        lgi = n.smi(F["family"], "mig", "-i", F["index"], "-lgi").stdout
        self.assertIn(F["driver_name"] if F["family"] == "gpu" else F["driver_name"], lgi.replace("MIG ", ""))
        # the devices file lists the card nodes and both capability nodes
        devices = n.read(F["device"], "mig", F["profile"], "job1", "devices").splitlines()
        paths = [d.split()[0] for d in devices]
        for node in F["nodes"]:
            self.assertIn(node, paths)
        caps = [p for p in paths if p.startswith(F["cap_prefix"])]
        self.assertEqual(len(caps), 2, devices)
        for line in devices:
            path, kind, numbers = line.split()
            self.assertEqual(kind, "c")
            major, minor = numbers.split(":")
            self.assertTrue(major.isdigit() and minor.isdigit())

    def test_second_instance_takes_the_next_placement_then_enospc(self):
        F, n = self.F, self.node
        os.mkdir(self.prof("a"))
        os.mkdir(self.prof("b"))
        self.assertEqual(n.keyvals(F["device"], "mig", F["profile"], "b", "status")["placement"], "4:4")
        self.assertEqual(n.available(F["device"], F["profile"]), 0)
        self.assertErrno(errno.ENOSPC, os.mkdir, self.prof("c"))
        why = n.read(F["device"], "mig", F["profile"], "last_error")
        self.assertIn("no free placement", why)
        self.assertFalse(os.path.exists(self.prof("c")))
        # a success in the same directory clears it
        os.rmdir(self.prof("b"))
        os.mkdir(self.prof("c"))
        self.assertEqual(n.read(F["device"], "mig", F["profile"], "last_error"), "")

    def test_wide_profile_only_on_an_empty_device(self):
        F, n = self.F, self.node
        os.mkdir(self.prof("small"))
        self.assertErrno(errno.ENOSPC, os.mkdir, n.path(F["device"], "mig", F["wide"], "big"))
        os.rmdir(self.prof("small"))
        os.mkdir(n.path(F["device"], "mig", F["wide"], "big"))
        self.assertEqual(n.available(F["device"], F["profile"]), 0)

    def test_existing_job_or_profile_file_is_eexist(self):
        os.mkdir(self.prof("job1"))
        self.assertErrno(errno.EEXIST, os.mkdir, self.prof("job1"))
        for name in ("info", "available", "last_error"):
            self.assertErrno(errno.EEXIST, os.mkdir, self.prof(name))
        # job names are unique on the node: the node-level view lists them together
        self.assertErrno(errno.EEXIST, os.mkdir, self.node.path(self.F["device"], "mig", self.F["wide"], "job1"))

    def test_bad_names(self):
        # names CDI would refuse too (a job's name is its CDI device name): see test_attachments.Names
        for bad in ("-job", ".job", "_job", "job-", "job.", "job_", "a b", "job\n", "jöb", "a:b", "a@b"):
            self.assertErrno(errno.EINVAL, os.mkdir, self.prof(bad))
        self.assertErrno(errno.ENAMETOOLONG, os.mkdir, self.prof("j" * 64))
        self.assertErrno(errno.ENAMETOOLONG, os.mkdir, self.prof("j" * 256))
        os.mkdir(self.prof("j" * 63))
        os.mkdir(self.prof("A-z_0.9"))
        self.assertEqual(self.node.available(self.F["device"], self.F["profile"]), 0)

    def test_mkdir_anywhere_else_is_eperm(self):
        F, n = self.F, self.node
        os.mkdir(self.prof("job1"))
        for where in (n.path("x"), n.path(F["device"], "x"), n.path(F["device"], "mig", "x"),
                      self.prof("job1", "x"), self.prof("job1", "dev", "x")):
            self.assertErrno(errno.EPERM, os.mkdir, where)

    def test_profile_not_offered_is_enoent(self):
        F, n = self.F, self.node
        self.assertErrno(errno.ENOENT, os.mkdir, n.path(F["device"], "mig", "9g.99gb", "job1"))
        # the +me variant is never offered
        self.assertFalse(os.path.exists(n.path(F["device"], "mig", "1g.18gb+me")))

    def test_rmdir_gives_capacity_back_before_returning(self):
        F, n = self.F, self.node
        os.mkdir(self.prof("a"))
        os.mkdir(self.prof("b"))
        os.rmdir(self.prof("a"))
        self.assertFalse(os.path.exists(self.prof("a")))
        # a same-profile replacement right away never races the reclaim
        os.mkdir(self.prof("a2"))
        self.assertEqual(n.keyvals(F["device"], "mig", F["profile"], "a2", "status")["placement"], "0:4")
        os.rmdir(self.prof("a2"))
        os.rmdir(self.prof("b"))
        self.assertEqual(n.available(F["device"], F["profile"]), F["capacity"])
        lgi = n.smi(F["family"], "mig", "-i", F["index"], "-lgi", check=False).stdout
        self.assertNotIn(F["driver_name"], lgi.replace("MIG ", "").replace(" ", ""))

    def test_rmdir_while_busy_is_ebusy_and_keeps_the_instance(self):
        F, n = self.F, self.node
        os.mkdir(self.prof("job1"))
        st = n.keyvals(F["device"], "mig", F["profile"], "job1", "status")
        n.smi(F["family"], "sim", "busy", "-i", F["index"], "-gi", st["gi"], "-ci", st["ci"], "1")
        self.assertErrno(errno.EBUSY, os.rmdir, self.prof("job1"))
        self.assertTrue(os.path.isdir(self.prof("job1")))
        self.assertEqual(n.keyvals(F["device"], "mig", F["profile"], "job1", "status")["state"], "ready")
        self.assertIn("IN_USE", n.read(F["device"], "mig", F["profile"], "last_error"))
        n.smi(F["family"], "sim", "busy", "-i", F["index"], "-gi", st["gi"], "-ci", st["ci"], "0")
        os.rmdir(self.prof("job1"))

    def test_rmdir_of_anything_else_is_eperm(self):
        F, n = self.F, self.node
        os.mkdir(self.prof("job1"))
        for where in (n.path(F["device"]), n.path(F["device"], "mig"), self.prof(), self.prof("job1", "dev")):
            self.assertErrno(errno.EPERM, os.rmdir, where)
        self.assertErrno(errno.ENOTDIR, os.rmdir, self.prof("info"))

    def test_files_are_not_a_general_filesystem(self):
        F, n = self.F, self.node
        os.mkdir(self.prof("job1"))
        info = self.prof("info")
        self.assertErrno(errno.EPERM, os.unlink, info)
        self.assertErrno(errno.EPERM, os.rename, info, self.prof("info2"))
        self.assertErrno(errno.EPERM, os.rename, self.prof("job1"), self.prof("job2"))
        self.assertErrno(errno.EPERM, os.truncate, info, 0)
        self.assertErrno(errno.EPERM, os.open, self.prof("new"), os.O_CREAT | os.O_WRONLY, 0o644)
        self.assertErrno(errno.EPERM, os.symlink, "x", self.prof("link"))
        self.assertErrno(errno.EPERM, os.unlink, self.prof("job1", "status"))

    def test_open_for_writing_is_eacces_even_for_root(self):
        F, n = self.F, self.node
        os.mkdir(self.prof("job1"))
        for f in (n.path(F["device"], "info"), n.path(F["device"], "mig", "mode"), self.prof("available"),
                  self.prof("job1", "status")):
            self.assertErrno(errno.EACCES, os.open, f, os.O_WRONLY)
            self.assertErrno(errno.EACCES, os.open, f, os.O_RDWR)

    def test_profile_info(self):
        F, n = self.F, self.node
        info = n.keyvals(F["device"], "mig", F["profile"], "info")
        self.assertEqual(info["driver_name"], F["driver_name"])
        self.assertEqual(info["profile_id"], str(F["profile_id"]))
        self.assertEqual(info["placements"], F["placements"])
        self.assertEqual(info["capacity"], str(F["capacity"]))
        self.assertEqual(info["memory_slices"], "4")

    def test_driver_failure_mid_carve_rolls_back(self):
        F, n = self.F, self.node
        steps = ["GpuInstanceGetInfo", "GpuInstanceGetComputeInstanceProfileInfoV",
                 "GpuInstanceCreateComputeInstance", "ComputeInstanceGetInfo_v2", "DeviceGetMigDeviceHandleByIndex"]
        for step in steps:
            # let the refresh before the carve through, fail the carve's own call
            n.smi(F["family"], "sim", "clear-faults")
            before = n.smi(F["family"], "mig", "-i", F["index"], "-lgi", check=False).stdout
            n.smi(F["family"], "sim", "fault", step, "--ret", "UNKNOWN", "--times", "1",
                  "--skip", str(self.skip_for(step)))
            got = n.errno_of(os.mkdir, self.prof("job1"))
            self.assertNotEqual(got, 0, f"mkdir succeeded although {step} failed")
            self.assertFalse(os.path.exists(self.prof("job1")), step)
            self.assertIn("UNKNOWN", n.read(F["device"], "mig", F["profile"], "last_error"), step)
            after = n.smi(F["family"], "mig", "-i", F["index"], "-lgi", check=False).stdout
            self.assertEqual(before, after, f"a half instance was left behind after {step} failed")
            self.assertEqual(n.available(F["device"], F["profile"]), F["capacity"], step)
        n.smi(F["family"], "sim", "clear-faults")
        os.mkdir(self.prof("job1"))
        self.assertIn(F["device"], n.log())

    def skip_for(self, step):
        """How many calls of `step` the refresh before a carve makes, on an empty device."""
        return 0

    def test_parallel_mkdirs_get_exactly_the_free_placements(self):
        F, n = self.F, self.node
        results = {}

        def carve(i):
            try:
                os.mkdir(self.prof(f"p{i}"))
                results[i] = 0
            except OSError as e:
                results[i] = e.errno

        threads = [threading.Thread(target=carve, args=(i,)) for i in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        ok = [i for i, e in results.items() if e == 0]
        self.assertEqual(len(ok), F["capacity"], results)
        self.assertTrue(all(e in (0, errno.ENOSPC) for e in results.values()), results)
        placements = {n.keyvals(F["device"], "mig", F["profile"], f"p{i}", "status")["placement"] for i in ok}
        self.assertEqual(len(placements), len(ok), "two jobs share a placement")


class NvidiaSpecific(NodeTestCase):
    """What only an H200 can show: its profile table as the driver reports it."""

    def gi(self, *more):
        return self.node.path("gpu0", "mig", *more)

    def test_seven_small_instances_then_enospc(self):
        for i in range(7):
            os.mkdir(self.gi("1g.18gb", f"s{i}"))
        self.assertErrno(errno.ENOSPC, os.mkdir, self.gi("1g.18gb", "s7"))
        starts = sorted(int(self.node.keyvals("gpu0", "mig", "1g.18gb", f"s{i}", "status")["placement"].split(":")[0])
                        for i in range(7))
        self.assertEqual(starts, list(range(7)))
        for other in ("1g.35gb", "2g.35gb", "3g.71gb", "4g.71gb", "7g.141gb"):
            self.assertEqual(self.node.available("gpu0", other), 0, other)

    def test_4g_then_3g_fit_a_second_3g_does_not(self):
        os.mkdir(self.gi("4g.71gb", "big"))
        os.mkdir(self.gi("3g.71gb", "mid"))
        self.assertEqual(self.node.keyvals("gpu0", "mig", "3g.71gb", "mid", "status")["placement"], "4:4")
        self.assertErrno(errno.ENOSPC, os.mkdir, self.gi("3g.71gb", "mid2"))
        self.assertIn("no free placement", self.node.read("gpu0", "mig", "3g.71gb", "last_error"))

    def test_full_gpu_only_on_an_empty_gpu(self):
        os.mkdir(self.gi("1g.18gb", "tiny"))
        self.assertEqual(self.node.available("gpu0", "7g.141gb"), 0)
        self.assertErrno(errno.ENOSPC, os.mkdir, self.gi("7g.141gb", "all"))
        os.rmdir(self.gi("1g.18gb", "tiny"))
        os.mkdir(self.gi("7g.141gb", "all"))
        self.assertEqual(self.node.keyvals("gpu0", "mig", "7g.141gb", "all", "status")["placement"], "0:8")

    def test_me_variant_never_offered(self):
        self.assertEqual(sorted(p for p in os.listdir(self.gi()) if p not in ("mode", "instances", "map")),
                         ["1g.18gb", "1g.35gb", "2g.35gb", "3g.71gb", "4g.71gb", "7g.141gb"])
        self.assertNotIn("1g.18gb+me", os.listdir(self.node.path("mig")))

    def test_identity_and_device_set(self):
        info = self.node.keyvals("gpu0", "info")
        self.assertTrue(info["index"].startswith("0 "), info["index"])
        self.assertTrue(info["minor"].startswith("0 "), info["minor"])
        self.assertEqual(info["bus_id"], "00000000:00:06.0")
        os.mkdir(self.gi("2g.35gb", "j"))
        st = self.node.keyvals("gpu0", "mig", "2g.35gb", "j", "status")
        self.assertTrue(st["uuid"].startswith("MIG-"))
        devices = dict((l.split()[0], l.split()[2]) for l in
                       self.node.read("gpu0", "mig", "2g.35gb", "j", "devices").splitlines())
        self.assertEqual(devices["/dev/nvidia0"], "195:0")
        self.assertEqual(devices["/dev/nvidiactl"], "195:255")
        self.assertIn("/dev/nvidia-uvm", devices)
        caps = sorted(int(v.split(":")[1]) for k, v in devices.items() if k.startswith("/dev/nvidia-caps/"))
        # the GI and CI capability minors, as the driver's procfs records say (gi, then ci = gi + 1 + ci id)
        self.assertEqual(len(caps), 2)
        self.assertEqual(caps[1], caps[0] + 1 + int(st["ci"]))
        major = {v.split(":")[0] for k, v in devices.items() if k.startswith("/dev/nvidia-caps/")}
        self.assertEqual(major, {"241"})


class NvidiaUnnamedProfiles(NodeTestCase):
    """NVML may return profile records without names: they are named from their geometry."""
    topology = topology_path("nvidia-unnamed.json")

    def test_profiles_named_from_geometry(self):
        names = sorted(p for p in os.listdir(self.node.path("gpu0", "mig")) if p not in ("mode", "instances", "map"))
        self.assertEqual(names, ["1g.18gb", "1g.35gb", "2g.35gb", "3g.71gb", "4g.71gb", "7g.141gb"])
        info = self.node.keyvals("gpu0", "mig", "1g.35gb", "info")
        self.assertEqual(info["profile_id"], "15")
        self.assertEqual(info["driver_display_name"], "MIG 1g.35gb")
        os.mkdir(self.node.path("gpu0", "mig", "3g.71gb", "j"))
        self.assertNotIn("reported no name", self.node.log())


class TheadContract(ContractRows, NodeTestCase):
    F = THEAD


class NvidiaContract(ContractRows, NodeTestCase):
    F = NVIDIA


if __name__ == "__main__":
    unittest.main(verbosity=2)
