# SPDX-License-Identifier: MIT
"""A driver fault at every call of a carve and of a reclaim, through the mounted daemon, in both
families; after each, the tree is held against the driver (invariants.py).  The shared machinery
and the sizes from the environment: trust_harness.py and test_trust.py."""

import errno
import os
import sys
import unittest

from harness import NVIDIA, THEAD, Node, NodeTestCase, topology_path, wait_until
from invariants import driver_view, format_problems, invariants, keyvals, settled, unowned
from trust_harness import IN_USE_WORDS, MAX_REPORTED, STRIDE, TrustCase, name, report


class FaultAtEveryCall(TrustCase):
    """The k-th driver call of a carve or a reclaim fails, for every k, with nothing else calling the
    driver (the poller waits an hour): the answer must say what happened, and the node stays whole."""

    poll = 3600
    sweeps = 0

    def sweep(self):
        """Let a poller pass with the grace period over reclaim what is left, then go quiet again."""
        n = self.node
        n.stop()
        n.poll = 0.2
        n.start()
        try:
            wait_until(lambda: not unowned(n), timeout=3 * self.grace + 5, what="the sweep")
        finally:
            n.stop()
            n.poll = self.poll
            n.start()

    def check_failed_mkdir(self, F, dev, prof, job, err, ctx, problems, baseline, drv):
        n = self.node
        if err == errno.ENOENT:
            problems.append(f"{ctx}: mkdir answered ENOENT")
        elif err in (errno.EEXIST, errno.EPERM, errno.EINVAL, errno.ENOTCONN):
            problems.append(f"{ctx}: mkdir answered {name(err)}")
        for where in ((dev, "mig", prof, job), ("mig", prof, job)):
            if where[0] and os.path.exists(n.path(*where)):
                problems.append(f"{ctx}: mkdir answered {name(err)} but {'/'.join(where)} exists")
        le_where = (dev, "mig", prof, "last_error") if dev else ("mig", prof, "last_error")
        if not n.read(*le_where).strip():
            problems.append(f"{ctx}: mkdir answered {name(err)} with an empty {'/'.join(le_where)}")
        left = {d: gis for d, gis in unowned(n, [F["family"]], drv=drv).items() if gis != baseline.get(d)}
        if left and self.sweeps >= 3:
            problems.append(f"{ctx}: mkdir answered {name(err)} and left GPU instances {left} (not swept: "
                            f"this is the {self.sweeps + 1}th time)")
            return False
        if left:
            self.sweeps += 1
            print(f"\nNOTE {ctx}: mkdir answered {name(err)} and left GPU instances {left}; "
                  f"waiting for the sweep", file=sys.stderr)
            try:
                self.sweep()
            except AssertionError:
                problems.append(f"{ctx}: mkdir answered {name(err)}, left GPU instances {left} and the sweep "
                                f"did not reclaim them: {unowned(n, [F['family']])}")
        return bool(left)

    def next_call(self, fam, k, fired, err, quiet_ctx, problems):
        """The driver call to fail next, or None when the sweep is over: the operation completed
        without reaching call k (and must then have answered 0), there is enough evidence, or the
        fault still fires far beyond any operation's length."""
        if not fired:
            if err:
                problems.append(f"{quiet_ctx} {name(err)}")
            return None
        if len(problems) >= MAX_REPORTED:
            problems.append(f"{fam}: stopped at call #{k}: enough evidence")
            return None
        if k + STRIDE > 400:
            problems.append(f"{fam}: the fault still fires at call #{k + STRIDE}: the sweep never ends")
            return None
        return k + STRIDE

    def sweep_over(self, fam, op, calls, problems):
        """A sweep's verdict: no problem found, the fault reached the operation, the node is whole."""
        print(f"\n{self.id()}: {fam} {op} took {calls} driver calls", file=sys.stderr)
        self.assertEqual(problems, [], report(problems))
        self.assertGreater(calls, 3, f"the {op} made almost no driver call: the fault never reached it")
        self.assertInvariants(context="after the sweep", families=[fam])

    def carve_sweep(self, F, dev, prof, code, setup=(), start=None):
        """mkdir on dev/prof (dev None: the node-level view; start: at placements/<start>/) with the k-th
        driver call failing `code`."""
        n, fam = self.node, F["family"]
        for d, p, j in setup:
            n.mkdir(d, "mig", p, j)
        baseline = unowned(n, [fam])
        problems = []
        k = 0
        here = (dev, "mig", prof) if dev else ("mig", prof)
        at = ("placements", str(start)) if start is not None else ()
        while True:
            job = f"c{k}"
            where = here + at + (job,)
            ctx = f"{fam}: mkdir {'/'.join(where)} with driver call #{k} failing {code}"
            before_avail = int(n.read(*here, "available"))
            self.fault(fam, "*", code, skip=k, times=1)
            err = n.errno_of(os.mkdir, n.path(*where))
            fired = self.fired(fam)
            self.clear(fam)
            drv = driver_view(n, [fam])
            if err == 0:
                try:
                    st = n.keyvals(*where, "status")
                except OSError as e:
                    problems.append(f"{ctx}: mkdir answered 0 but its status is {name(e.errno)}")
                    st = {}
                if st and st.get("state") != "ready":
                    problems.append(f"{ctx}: mkdir answered 0 but the job is {st.get('state')}")
                if st and start is not None and st.get("placement", "").split(":")[0] != str(start):
                    problems.append(f"{ctx}: mkdir answered 0 but the job is at {st.get('placement')}")
                if int(n.read(*here, "available")) >= before_avail:
                    problems.append(f"{ctx}: mkdir answered 0 but available did not drop from {before_avail}")
            else:
                if self.check_failed_mkdir(F, dev, prof, job, err, ctx, problems, baseline, drv):
                    drv = None  # swept meanwhile: read it again
            problems += [f"{ctx}: {p}" for p in invariants(n, [fam], drv=drv)]
            if err == 0 or os.path.isdir(n.path(*where)):
                e2 = n.errno_of(os.rmdir, n.path(*where))
                if e2:
                    problems.append(f"{ctx}: cleaning up, rmdir answered {name(e2)}")
            nxt = self.next_call(fam, k, fired, err, f"{ctx}: no fault fired, yet mkdir answered", problems)
            if nxt is None:
                break
            k = nxt
        self.sweep_over(fam, "carve", k, problems)

    def reclaim_sweep(self, F, dev, prof, code, setup=()):
        """rmdir of a job on dev/prof with the k-th driver call failing `code`."""
        n, fam = self.node, F["family"]
        for d, p, j in setup:
            n.mkdir(d, "mig", p, j)
        problems = []
        k = 0
        while True:
            job = f"r{k}"
            ctx = f"{fam}: rmdir {dev}/mig/{prof}/{job} with driver call #{k} failing {code}"
            free = n.available(dev, prof)
            e0 = n.errno_of(os.mkdir, n.path(dev, "mig", prof, job))
            if e0:
                problems.append(f"{ctx}: carving the job to remove (no fault) answered {name(e0)}; the driver has "
                                f"{ {g: v['placement'] for g, v in driver_view(n, [fam]).get(dev, {}).items()} }, "
                                f"unowned {unowned(n, [fam])}")
                break
            st = n.keyvals(dev, "mig", prof, job, "status")
            self.fault(fam, "*", code, skip=k, times=1)
            err = n.errno_of(os.rmdir, n.path(dev, "mig", prof, job))
            fired = self.fired(fam)
            self.clear(fam)
            drv = None
            if err == 0:
                if os.path.exists(n.path(dev, "mig", prof, job)) or os.path.exists(n.path("mig", prof, job)):
                    problems.append(f"{ctx}: rmdir answered 0 but the job is still listed")
                drv = driver_view(n, [fam])
                g = drv.get(dev, {}).get(int(st["gi"]))
                if g and st["uuid"] in g["uuids"].values():
                    problems.append(f"{ctx}: rmdir answered 0 but the driver still has GPU instance {st['gi']}")
                if n.available(dev, prof) != free:
                    problems.append(f"{ctx}: rmdir answered 0 but available is {n.available(dev, prof)}, not {free}")
            else:
                if err in (errno.ENOENT, errno.EPERM, errno.ENOTCONN):
                    problems.append(f"{ctx}: rmdir answered {name(err)}")
                try:
                    st2 = n.keyvals(dev, "mig", prof, job, "status")
                    if st2.get("state") not in ("ready", "removing"):
                        problems.append(f"{ctx}: rmdir answered {name(err)}; the job is {st2.get('state')}")
                    if st2.get("state") == "removing" and not st2.get("reason"):
                        problems.append(f"{ctx}: rmdir answered {name(err)}; removing without a reason")
                except OSError as e:
                    problems.append(f"{ctx}: rmdir answered {name(err)} but the job's status is {name(e.errno)}")
                if not n.read(dev, "mig", prof, "last_error").strip():
                    problems.append(f"{ctx}: rmdir answered {name(err)} with an empty last_error")
                problems += [f"{ctx}: {p}" for p in invariants(n, [fam])]
                e2 = n.errno_of(os.rmdir, n.path(dev, "mig", prof, job))
                if e2:
                    problems.append(f"{ctx}: rmdir again (no fault) answered {name(e2)}")
                elif n.available(dev, prof) != free:
                    problems.append(f"{ctx}: rmdir again answered 0 but available is {n.available(dev, prof)}, "
                                    f"not {free}")
            problems += [f"{ctx}: {p}" for p in invariants(n, [fam], drv=drv)]
            if os.path.isdir(n.path(dev, "mig", prof, job)):
                n.errno_of(os.rmdir, n.path(dev, "mig", prof, job))
            nxt = self.next_call(fam, k, fired, err, f"{ctx}: no fault fired, yet rmdir answered", problems)
            if nxt is None:
                break
            k = nxt
        self.sweep_over(fam, "reclaim", k, problems)

    # carve: a card with another instance on it, so that placement and available matter
    def test_carve_fault_at_every_call_ppu(self):
        self.carve_sweep(THEAD, "ppu1", THEAD["profile"], "UNKNOWN", setup=[("ppu1", THEAD["profile"], "keep")])

    def test_carve_fault_at_every_call_gpu(self):
        self.carve_sweep(NVIDIA, "gpu0", NVIDIA["profile"], "UNKNOWN", setup=[("gpu0", "1g.18gb", "keep")])

    # the same at a chosen placement that is not the lowest free one (only placements/<start>/ goes there):
    # the second of 4g.48gb's two on an empty PPU, a 1g.18gb at 5 beside one at 0 on the GPU
    def test_carve_fault_at_every_call_at_a_placement_ppu(self):
        self.carve_sweep(THEAD, "ppu1", THEAD["profile"], "UNKNOWN", start=4)

    def test_carve_fault_at_every_call_at_a_placement_gpu(self):
        self.carve_sweep(NVIDIA, "gpu0", "1g.18gb", "UNKNOWN", setup=[("gpu0", "1g.18gb", "keep")], start=5)

    def test_carve_gpu_is_lost_at_every_call_node_level_ppu(self):
        self.carve_sweep(THEAD, None, THEAD["profile"], "GPU_IS_LOST",
                         setup=[("ppu0", THEAD["profile"], "keep0"), ("ppu2", THEAD["wide"], "keep2")])

    def test_reclaim_fault_at_every_call_ppu(self):
        self.reclaim_sweep(THEAD, "ppu1", THEAD["profile"], "UNKNOWN", setup=[("ppu1", THEAD["profile"], "keep")])

    def test_reclaim_fault_at_every_call_gpu(self):
        self.reclaim_sweep(NVIDIA, "gpu0", NVIDIA["profile"], "UNKNOWN", setup=[("gpu0", "1g.18gb", "keep")])

    def test_reclaim_in_use_at_every_call_gpu(self):
        self.reclaim_sweep(NVIDIA, "gpu0", "1g.18gb", "IN_USE", setup=[("gpu0", NVIDIA["profile"], "keep")])

    # -- (2) a fault listing the compute instances while the carve looks at its work ------------------
    def ci_listing_fault(self, F, dev, prof):
        n, fam = self.node, F["family"]
        problems = []
        for code in ("UNKNOWN", "GPU_IS_LOST"):
            for skip in (0, 1, 2):
                job = f"ci-{code.lower()}-{skip}"
                ctx = f"{fam}: mkdir {dev}/mig/{prof}/{job} with GpuInstanceGetComputeInstances {code} --skip {skip}"
                free = n.available(dev, prof)
                self.fault(fam, "GpuInstanceGetComputeInstances", code, skip=skip, times=1)
                err = n.errno_of(os.mkdir, n.path(dev, "mig", prof, job))
                self.clear(fam)
                present = os.path.isdir(n.path(dev, "mig", prof, job))
                if err == 0:
                    if not present:
                        problems.append(f"{ctx}: mkdir answered 0 but the job does not exist (carved-but-ENOENT)")
                    else:
                        st = n.keyvals(dev, "mig", prof, job, "status")
                        if st.get("state") != "ready":
                            problems.append(f"{ctx}: mkdir answered 0, the job is {st.get('state')}")
                    if n.available(dev, prof) != free - 1:
                        problems.append(f"{ctx}: mkdir answered 0, available {n.available(dev, prof)} (was {free})")
                else:
                    if err == errno.ENOENT:
                        problems.append(f"{ctx}: mkdir answered ENOENT")
                    if present:
                        problems.append(f"{ctx}: mkdir answered {name(err)} but the job exists")
                    if unowned(n, [fam]).get(dev):
                        problems.append(f"{ctx}: mkdir answered {name(err)} and left GPU instances "
                                        f"{unowned(n, [fam])[dev]} on {dev} (carved, not recorded)")
                    if not n.read(dev, "mig", prof, "last_error").strip():
                        problems.append(f"{ctx}: mkdir answered {name(err)} with an empty last_error")
                problems += [f"{ctx}: {p}" for p in invariants(n, [fam])]
                if present:
                    n.errno_of(os.rmdir, n.path(dev, "mig", prof, job))
        self.assertEqual(problems, [], report(problems))

    def test_bug2_compute_instance_listing_fault_during_carve_ppu(self):
        self.ci_listing_fault(THEAD, "ppu2", THEAD["profile"])

    def test_bug2_compute_instance_listing_fault_during_carve_gpu(self):
        self.ci_listing_fault(NVIDIA, "gpu0", NVIDIA["profile"])

    # -- (4) the GPU instance stays busy after its compute instance went ------------------------------
    def gi_destroy_in_use(self, F, dev, prof):
        n, fam = self.node, F["family"]
        job = "stuck"
        free = n.available(dev, prof)
        n.mkdir(dev, "mig", prof, job)
        st = n.keyvals(dev, "mig", prof, job, "status")
        gi = int(st["gi"])
        self.fault(fam, "GpuInstanceDestroy", "IN_USE", skip=0, times=1000)
        err = n.errno_of(os.rmdir, n.path(dev, "mig", prof, job))
        self.clear(fam)
        self.assertEqual(err, errno.EBUSY, f"rmdir with GpuInstanceDestroy IN_USE answered {name(err)}")
        self.assertTrue(os.path.isdir(n.path(dev, "mig", prof, job)), "the job went away although rmdir failed")
        st2 = n.keyvals(dev, "mig", prof, job, "status")
        self.assertEqual(st2.get("state"), "removing", st2)
        self.assertIn(IN_USE_WORDS[fam], st2.get("reason", ""), f"status does not carry the driver's words: {st2}")
        self.assertIn(IN_USE_WORDS[fam], n.read(dev, "mig", prof, "last_error"))
        g = driver_view(n, [fam]).get(dev, {}).get(gi)
        self.assertIsNotNone(g, "the GPU instance is gone although its destroy was refused")
        self.assertEqual(g["cis"], {}, "the compute instance was expected to be destroyed first")
        line = [l for l in n.read(dev, "mig", "instances").splitlines() if l.startswith(f"gi={gi} ")]
        self.assertEqual(len(line), 1, n.read(dev, "mig", "instances"))
        self.assertIn(f"job={job}", line[0], "the removing job's GPU instance is not listed as its own")
        self.assertNotIn("orphan", line[0])
        self.assertEqual(unowned(n, [fam]), {}, "the removing job's GPU instance is taken for nobody's")
        self.assertInvariants(context="while the job is removing", families=[fam])
        err = n.errno_of(os.rmdir, n.path(dev, "mig", prof, job))
        self.assertEqual(err, 0, f"rmdir again, with the fault cleared, answered {name(err)}")
        self.assertFalse(os.path.exists(n.path(dev, "mig", prof, job)))
        self.assertEqual(n.available(dev, prof), free)
        self.assertEqual(driver_view(n, [fam]).get(dev, {}), {})
        self.assertInvariants(context="after the second rmdir", families=[fam])

    def test_bug4_gpu_instance_destroy_in_use_leaves_job_removing_ppu(self):
        self.gi_destroy_in_use(THEAD, "ppu1", THEAD["profile"])

    def test_bug4_gpu_instance_destroy_in_use_leaves_job_removing_gpu(self):
        self.gi_destroy_in_use(NVIDIA, "gpu0", NVIDIA["profile"])


if __name__ == "__main__":
    unittest.main(verbosity=2)
