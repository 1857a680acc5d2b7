# SPDX-License-Identifier: MIT
"""Every row of docs/tree.md's mkdir/rmdir table, run against a T-Head PPU and
an NVIDIA GPU of the simulated node: one suite, parametrized by family."""
import errno
import os
import select
import threading
import unittest

from harness import MIG_FILES, NVIDIA, THEAD, Node, NodeTestCase, topology_path, wait_until
from invariants import driver_view, format_problems, settled


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
                         ["cdi.json", "containers", "dev", "devices", "health", "holders", "processes", "reclaim", "status", "utilization"])
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
        for name in ("info", "available", "last_error", "placements"):
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
        # (mig/mode, layout and cordon are written: test_layouts.py)
        for f in (n.path(F["device"], "info"), n.path(F["device"], "mig", "instances"),
                  n.path(F["device"], "mig", "layout_status"), self.prof("available"), self.prof("job1", "status")):
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


def race(paths):
    """mkdir every path at once, one thread each: {path: errno or 0}."""
    results = {}
    go = threading.Barrier(len(paths))

    def carve(path):
        go.wait()
        try:
            os.mkdir(path)
            results[path] = 0
        except OSError as e:
            results[path] = e.errno

    threads = [threading.Thread(target=carve, args=(p,)) for p in paths]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results


class PlacementRows:
    """docs/tree.md "Carving at a chosen placement": mkdir <profile>/placements/<start>/<job>."""
    F = None

    def prof(self, *more):
        return self.node.path(self.F["device"], "mig", self.F["profile"], *more)

    def at(self, start, *more):
        return self.prof("placements", str(start), *more)

    def text(self, path):
        with open(path) as f:
            return f.read()

    def driver_gis(self):
        """{gi: (start, size, profile_id)} of the card, as the driver has them."""
        drv = driver_view(self.node, [self.F["family"]]).get(self.F["device"], {})
        return {gi: g["placement"] + (g["profile_id"],) for gi, g in drv.items()}

    def test_placements_lists_every_legal_start_free(self):
        self.assertEqual(sorted(os.listdir(self.prof("placements")), key=int), ["0", "4"])
        for start in (0, 4):
            self.assertEqual(os.listdir(self.at(start)), ["status"])
            self.assertEqual(self.text(self.at(start, "status")), f"state: free\nplacement: {start}:4\n")
        wide = self.node.path(self.F["device"], "mig", self.F["wide"], "placements")
        self.assertEqual(os.listdir(wide), ["0"])

    def test_mkdir_at_a_placement_carves_exactly_there(self):
        F, n = self.F, self.node
        os.mkdir(self.at(4, "j"))  # not the lowest free start: only a placement mkdir goes there
        st = n.keyvals(F["device"], "mig", F["profile"], "j", "status")
        self.assertEqual(st["placement"], "4:4")
        self.assertEqual(self.driver_gis(), {int(st["gi"]): (4, 4, F["profile_id"])})
        # the same job in every view: the profile, its placement, the node-level view
        self.assertEqual(sorted(os.listdir(self.at(4))), ["j", "status"])
        self.assertEqual(sorted(os.listdir(self.at(4, "j"))),
                         ["cdi.json", "containers", "dev", "device", "devices", "health", "holders", "processes", "reclaim", "status", "utilization"])
        self.assertEqual(os.readlink(self.at(4, "j", "device")), "../../../j")
        self.assertTrue(os.path.samefile(os.path.realpath(self.at(4, "j", "device")), self.prof("j")))
        self.assertEqual(self.text(self.at(4, "j", "status")), self.text(self.prof("j", "status")))
        self.assertTrue(os.path.isdir(n.path("mig", F["profile"], "j")))
        self.assertEqual(self.text(self.at(4, "status")),
                         f"state: taken\nplacement: 4:4\nholder: gi={st['gi']} profile={F['profile']} "
                         f"placement=4:4 job=j\n")
        self.assertEqual(self.text(self.at(0, "status")), "state: free\nplacement: 0:4\n")
        self.assertEqual(n.available(F["device"], F["profile"]), F["capacity"] - 1)
        self.assertEqual(n.read(F["device"], "mig", F["profile"], "last_error"), "")
        # an ordinary mkdir takes what is left, and the taken start is refused naming its holder
        os.mkdir(self.prof("k"))
        gk = n.keyvals(F["device"], "mig", F["profile"], "k", "status")["gi"]
        self.assertEqual(n.keyvals(F["device"], "mig", F["profile"], "k", "status")["placement"], "0:4")
        for start, holder, gi in ((0, "k", gk), (4, "j", st["gi"])):
            self.assertErrno(errno.ENOSPC, os.mkdir, self.at(start, "late"))
            why = n.read(F["device"], "mig", F["profile"], "last_error")
            self.assertIn(f"placement {start}:4 of {F['profile']} on {F['device']} is taken: job {holder} holds "
                          f"{start}:4 (GPU instance {gi})", why)
        self.assertFalse(os.path.exists(self.prof("late")))
        self.assertEqual(len(self.driver_gis()), 2)
        # the wide profile's one placement is held by both
        wide = self.text(n.path(F["device"], "mig", F["wide"], "placements", "0", "status")).splitlines()
        self.assertEqual(wide[:2], ["state: taken", "placement: 0:8"])
        self.assertEqual(sorted(l.split()[-1] for l in wide[2:]), ["job=j", "job=k"])
        # rmdir through the placement: gone everywhere, capacity back before it returns
        os.rmdir(self.at(4, "j"))
        for path in (self.prof("j"), self.at(4, "j"), n.path("mig", F["profile"], "j")):
            self.assertFalse(os.path.exists(path), path)
        self.assertEqual(self.text(self.at(4, "status")), "state: free\nplacement: 4:4\n")
        self.assertEqual(list(self.driver_gis().values()), [(0, 4, F["profile_id"])])
        os.rmdir(self.at(0, "k"))
        self.assertEqual(self.driver_gis(), {})
        self.assertEqual(n.available(F["device"], F["profile"]), F["capacity"])

    def test_an_existing_name_or_a_tree_file_is_eexist(self):
        F, n = self.F, self.node
        os.mkdir(self.at(4, "j"))
        before = self.driver_gis()
        for path in (self.at(4, "j"), self.at(0, "j"), self.prof("j"), self.at(0, "status"), self.prof("status"),
                     n.path("mig", F["profile"], "status"), n.path("mig", F["profile"], "placements")):
            self.assertErrno(errno.EEXIST, os.mkdir, path)
        self.assertIn("'status' is a file of placements/<start>/",
                      n.read(F["device"], "mig", F["profile"], "last_error"))
        self.assertEqual(self.driver_gis(), before)
        self.assertEqual(n.keyvals(F["device"], "mig", F["profile"], "j", "status")["placement"], "4:4")

    def test_a_start_that_is_not_legal(self):
        F, n = self.F, self.node
        for name in ("9", "04", "1"):
            self.assertErrno(errno.EINVAL, os.mkdir, self.at(name))
            why = n.read(F["device"], "mig", F["profile"], "last_error")
            self.assertIn(f"starts at '{name}': the legal placements are {F['placements']}", why)
            self.assertIn("placements/0/, placements/4/", why)
        self.assertErrno(errno.ENOENT, os.mkdir, self.at(9, "j"))
        self.assertErrno(errno.EEXIST, os.mkdir, self.at(4))
        for name in ("x", "-1", "4a"):
            self.assertErrno(errno.EPERM, os.mkdir, self.at(name))
        self.assertErrno(errno.EPERM, os.rmdir, self.at(0))
        self.assertErrno(errno.EPERM, os.rmdir, self.prof("placements"))
        self.assertErrno(errno.ENOTDIR, os.rmdir, self.at(0, "status"))
        self.assertErrno(errno.EINVAL, os.mkdir, self.at(0, "bad-"))
        self.assertEqual(self.driver_gis(), {})

    def test_status_wakes_a_poller_when_the_placement_is_taken(self):
        fd = os.open(self.at(0, "status"), os.O_RDONLY)
        try:
            self.assertEqual(os.pread(fd, 4096, 0), b"state: free\nplacement: 0:4\n")
            p = select.poll()
            p.register(fd, select.POLLPRI)
            os.mkdir(self.prof("j"))  # an ordinary carve at the lowest start takes it
            events = p.poll(10000)
            self.assertTrue(events and events[0][1] & select.POLLPRI, events)
            self.assertTrue(os.pread(fd, 4096, 0).startswith(b"state: taken\n"))
        finally:
            os.close(fd)

    def test_many_mkdirs_at_one_start_one_wins(self):
        F, n = self.F, self.node
        results = race([self.at(4, f"r{i}") for i in range(8)])
        won = [p for p, e in results.items() if e == 0]
        self.assertEqual(len(won), 1, results)
        self.assertEqual(sorted(set(results.values())), [0, errno.ENOSPC], results)
        self.assertEqual([g[:2] for g in self.driver_gis().values()], [(4, 4)])
        self.assertEqual(n.available(F["device"], F["profile"]), F["capacity"] - 1)
        problems = settled(n, families=[F["family"]])
        self.assertEqual(problems, [], format_problems(problems))


class ForeignHolder(NodeTestCase):
    """An instance carved by hand is named as such; the grace keeps it from being reclaimed meanwhile."""
    grace = 3600

    def check(self, F):
        n = self.node
        n.smi(F["family"], "mig", "-i", F["index"], "-cgi", F["profile_id"], "-C")
        ((gi, g),) = driver_view(n, [F["family"]])[F["device"]].items()
        start = g["placement"][0]
        here = n.path(F["device"], "mig", F["profile"], "placements", str(start))
        # at once, before any poller pass saw it: the driver refuses, the card is read again, the answer names it
        self.assertErrno(errno.ENOSPC, os.mkdir, os.path.join(here, "j"))
        self.assertIn(f"GPU instance {gi} ({F['profile']} at {start}:4), which accelfs did not make, holds it",
                      n.read(F["device"], "mig", F["profile"], "last_error"))
        line = f"holder: gi={gi} profile={F['profile']} placement={start}:4 job=-\n"
        wait_until(lambda: line in n.read(F["device"], "mig", F["profile"], "placements", str(start), "status"),
                   what="the hand-made instance in the placement's status")
        os.mkdir(n.path(F["device"], "mig", F["profile"], "placements", str(4 - start), "j"))
        self.assertEqual(n.keyvals(F["device"], "mig", F["profile"], "j", "status")["placement"], f"{4 - start}:4")

    def test_thead(self):
        self.check(THEAD)

    def test_nvidia(self):
        self.check(NVIDIA)


class ReadOnlyPlacements(NodeTestCase):
    """--read-only carves nothing, at a chosen placement neither."""

    def setUp(self):
        self.node = Node(self.topology, self.poll, self.grace, extra=["--read-only"]).start()

    def test_mkdir_at_a_placement_is_erofs(self):
        n = self.node
        for F in (THEAD, NVIDIA):
            here = n.path(F["device"], "mig", F["profile"], "placements", "4", "j")
            # the mount is ro: the kernel answers before the daemon is asked (test_read_only.py covers
            # the daemon's own refusal, remounted read-write)
            self.assertErrno(errno.EROFS, os.mkdir, here)
            self.assertEqual(driver_view(n, [F["family"]]).get(F["device"], {}), {})


class PlacementRaces(NodeTestCase):
    """Placement mkdirs against ordinary and node-level ones on the same card (the only one with MIG on of its
    family, so the node-level choice lands there too): no placement is given twice, the invariants hold."""
    topology = topology_path("one-mig-card-each.json")

    def mixed(self, F, profile, starts, per_start, ordinary, node_level):
        """`ordinary` is more than the card's capacity: one of them fails only once the card is full."""
        n = self.node
        base = n.path(F["device"], "mig", profile)
        ordinary_paths = [os.path.join(base, f"o{i}") for i in range(ordinary)]
        paths = [os.path.join(base, "placements", str(s), f"p{s}-{i}") for s in starts for i in range(per_start)]
        paths += ordinary_paths + [n.path("mig", profile, f"n{i}") for i in range(node_level)]
        results = race(paths)
        self.assertTrue(all(e in (0, errno.ENOSPC) for e in results.values()), results)
        self.assertTrue(any(results[p] for p in ordinary_paths), f"more ordinary mkdirs than room all won: {results}")
        won = sorted(os.path.basename(p) for p, e in results.items() if e == 0)
        placed = {}
        for job in won:
            st = n.keyvals(F["device"], "mig", profile, job, "status")
            placed.setdefault(st["placement"], []).append(job)
            if job.startswith("p"):
                self.assertEqual(st["placement"].split(":")[0], job[1:].split("-")[0], f"{job} landed elsewhere")
        self.assertTrue(all(len(j) == 1 for j in placed.values()), f"a placement given twice: {placed}")
        self.assertEqual(sorted(self.driver_gis(F).values()), sorted(tuple(map(int, p.split(":"))) for p in placed))
        self.assertEqual(n.available(F["device"], profile), 0, "an ordinary mkdir failed with a placement free")
        for start in starts:  # at most one placement mkdir won each start
            self.assertLessEqual(sum(1 for j in won if j.startswith(f"p{start}-")), 1, won)
        problems = settled(n)
        self.assertEqual(problems, [], format_problems(problems))

    def driver_gis(self, F):
        return {gi: g["placement"] for gi, g in driver_view(self.node, [F["family"]]).get(F["device"], {}).items()}

    def test_thead_4g(self):
        self.mixed(THEAD, THEAD["profile"], [0, 4], per_start=3, ordinary=3, node_level=3)

    def test_nvidia_3g(self):
        self.mixed(NVIDIA, NVIDIA["profile"], [0, 4], per_start=3, ordinary=3, node_level=3)

    def test_nvidia_1g_seven_starts(self):
        self.mixed(NVIDIA, "1g.18gb", [0, 3, 6], per_start=3, ordinary=8, node_level=3)


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
        self.assertEqual(sorted(p for p in os.listdir(self.gi()) if p not in MIG_FILES),
                         ["1g.18gb", "1g.35gb", "2g.35gb", "3g.71gb", "4g.71gb", "7g.141gb"])
        self.assertNotIn("1g.18gb+me", os.listdir(self.node.path("mig")))

    def test_identity_and_device_set(self):
        info = self.node.keyvals("gpu0", "info")
        self.assertEqual(info["index"], "0", "the value alone: what it means is docs/tree.md's")
        self.assertEqual(info["minor"], "0")
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
        names = sorted(p for p in os.listdir(self.node.path("gpu0", "mig")) if p not in MIG_FILES)
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


class TheadPlacements(PlacementRows, NodeTestCase):
    F = THEAD


class NvidiaPlacements(PlacementRows, NodeTestCase):
    F = NVIDIA


if __name__ == "__main__":
    unittest.main(verbosity=2)
