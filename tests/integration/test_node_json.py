# SPDX-License-Identifier: MIT
"""node.json says what the individual files say: every key docs/tree.md lists for a job, the slot
and a die is there, and each value is the one the file gives (a job's status, containers, reclaim
and processes; dies/slot; dies/<n>/info), read while nothing moves."""
import datetime
import errno
import json
import os
import re
import subprocess
import sys
import threading
import time
import unittest

from harness import NodeTestCase, wait_until

DOCS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "docs")


def documented_keys(row):
    """The keys docs/tree.md's node.json table lists in the row whose first cell is `row`."""
    with open(os.path.join(DOCS, "tree.md")) as f:
        text = f.read()
    section = text[text.index("## The whole node: `node.json`"):]
    for line in section.splitlines():
        cells = line.split("|")
        if len(cells) > 2 and cells[1].strip() == f"`{row}`":
            return set(re.findall(r"`([a-z_]+)`", cells[2]))
    raise AssertionError(f"docs/tree.md's node.json table has no row {row}")


def documented_slot_keys():
    """The keys of docs/dies.md's table of dies/slot."""
    with open(os.path.join(DOCS, "dies.md")) as f:
        text = f.read()
    table = text[text.index("`slot` (read-only, `key: value`)"):text.index("`<n>/info` (read-only)")]
    return set(re.findall(r"^\| `([a-z_]+)` \|", table, re.M))


def as_json_value(text):
    """How node.json writes a file's value: numbers as numbers, none as null."""
    if text == "none":
        return None
    if re.fullmatch(r"-?[0-9]+", text):
        return int(text)
    return text


HOLD = "import sys; f = open(sys.argv[1], 'rb'); print('held', flush=True); sys.stdin.read()"


class NodeJson(NodeTestCase):
    def doc(self):
        return json.loads(self.node.read("node.json"))

    def metric(self, name):
        for line in self.node.read("metrics").splitlines():
            if line.startswith(name + " "):
                return line.split()[1]
        raise AssertionError(f"no {name} in metrics")

    def test_snapshot_time_is_when_the_state_shown_was_published(self):
        """node.json's `published` and metrics' accelfs_snapshot_timestamp_seconds name one time, that
        of the snapshot read: it moves with a change (a mkdir) and only then."""
        n = self.node
        def both():
            doc = self.doc()
            return doc["generation"], doc["published"], float(self.metric("accelfs_snapshot_timestamp_seconds"))
        gen, published, stamp = both()
        self.assertRegex(published, r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
        self.assertLessEqual(stamp, time.time())
        when = datetime.datetime.strptime(published, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=datetime.timezone.utc)
        self.assertAlmostEqual(when.timestamp(), stamp, places=3)
        time.sleep(4 * n.poll)  # passes that find nothing new publish nothing
        if self.doc()["generation"] == gen:
            self.assertEqual(both(), (gen, published, stamp))
        os.mkdir(n.path("ppu3", "mig", "4g.48gb", "t"))
        gen2, published2, stamp2 = both()
        self.assertGreater(gen2, gen)
        self.assertGreater(stamp2, stamp)
        self.assertGreater(published2, published)
        os.rmdir(n.path("ppu3", "mig", "4g.48gb", "t"))

    def test_job_keys_and_values_are_status_containers_reclaim(self):
        n = self.node
        job_dir = ("ppu3", "mig", "4g.48gb", "job1")
        n.mkdir(*job_dir)
        sleeper = subprocess.Popen(["sleep", "600"])
        try:
            with open(n.path(*job_dir, "containers"), "w") as f:
                f.write(f"attach c0ffee {sleeper.pid}\n")
            with open(n.path(*job_dir, "reclaim"), "w") as f:
                f.write("when-detached\n")
            dev = [d for d in self.doc()["devices"] if d["name"] == "ppu3"][0]
            job = [j for j in dev["jobs"] if j["name"] == "job1"][0]
            want = documented_keys("devices[].jobs[]")
            self.assertIn("reclaim", want, "tree.md lists a job's reclaim")
            self.assertIn("containers", want, "tree.md lists a job's containers")
            self.assertEqual(want - set(job), set(), "keys tree.md lists that node.json's job lacks")
            self.assertEqual(set(job) - want, set(), "keys of node.json's job that tree.md does not list")
            status = n.read(*job_dir, "status").splitlines()
            containers = []
            for line in status:
                key, _, value = line.partition(": ")
                if key == "container":
                    cid, pid, since = value.split(" ")
                    containers.append({"id": cid, "pid": int(pid[len("pid="):]), "since": since[len("since="):]})
                elif key == "placement":
                    start, size = value.split(":")
                    self.assertEqual(job[key], {"start": int(start), "size": int(size)})
                elif key == "owner":
                    uid, gid = value.split(":")
                    self.assertEqual(job[key], {"uid": int(uid), "gid": int(gid)})
                else:
                    self.assertEqual(job[key], as_json_value(value), f"status's {key}")
            self.assertEqual(job["reclaim"], "when-detached")
            self.assertEqual(job["reclaim"], n.read(*job_dir, "reclaim").strip())
            self.assertEqual(job["containers"], containers)
            self.assertEqual([c["id"] for c in job["containers"]], ["c0ffee"])
            self.assertEqual(job["containers"][0]["pid"], sleeper.pid)
            self.assertNotIn("processes", job, "what runs is the live processes file, not the snapshot")
            # A lost job keeps its keys: the containers and policy are still recorded.
        finally:
            sleeper.kill()
            sleeper.wait()
        wait_until(lambda: not [j for d in self.doc()["devices"] for j in d["jobs"] if j["name"] == "job1"],
                   what="the when-detached job to be reclaimed once its container is gone")

    def test_slot_and_die_keys_and_values_are_the_files(self):
        n = self.node
        holder = subprocess.Popen([sys.executable, "-c", HOLD, n.path("dies", "2", "vram")], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, text=True)
        try:
            self.assertEqual(holder.stdout.readline().strip(), "held")
            dies = self.doc()["dies"]
            slot_file = n.read("dies", "slot")
            slot = dies["slot"]
            # Every key dies.md lists for dies/slot is in the file and in node.json, and node.json has no other.
            want = documented_slot_keys()
            for key in ("lease_ms", "lease_left_ms", "lent", "waiting_on", "holder"):
                self.assertIn(key, want)
            file_keys = {line.partition(":")[0] for line in slot_file.splitlines()}
            self.assertEqual(want - {"waiter", "slot_waiter"} - file_keys, set(),
                             "keys dies.md lists that dies/slot lacks (no one waits: no waiter lines)")
            self.assertEqual(want ^ set(slot), set(), "dies/slot's keys against node.json's slot")
            self.assertEqual(documented_keys("dies.slot") ^ want, set(), "tree.md and dies.md list one slot")
            for line in slot_file.splitlines():
                key, _, value = line.partition(": ")
                if key == "holder":
                    self.assertEqual(value, f"pid={holder.pid} die=2 lease_left_ms=none")
                    self.assertEqual(slot["holder"], [{"pid": holder.pid, "die": 2, "lease_left_ms": None}])
                elif key == "active":
                    self.assertEqual(slot[key], 2)
                else:
                    self.assertEqual(slot[key], as_json_value(value), f"dies/slot's {key}")
            self.assertIsNone(slot["lent"])
            self.assertIsNone(slot["waiting_on"])
            self.assertIsNone(slot["lease_left_ms"])
            # Each die: its info's keys and values.
            want = documented_keys("dies.dies[]")
            for key in ("state", "driver", "policy", "held_by"):
                self.assertIn(key, want)
            self.assertEqual(len(dies["dies"]), int(n.keyvals("dies", "slot")["dies"]))
            for d in dies["dies"]:
                info = n.read("dies", str(d["die"]), "info")
                self.assertEqual(want ^ set(d), set(), f"die {d['die']}: node.json's keys against tree.md's")
                for line in info.splitlines():
                    key, _, value = line.partition(": ")
                    if key in ("enabled", "present", "active"):
                        self.assertIs(d[key], value == "1", f"die {d['die']}'s {key}")
                    elif key == "pci_id":
                        self.assertIsNone(d[key])  # "none (simulated)"
                    else:
                        self.assertEqual(d[key], as_json_value(value), f"die {d['die']}'s {key}")
                self.assertEqual(d["state"], "held" if d["die"] == 2 else "parked")
                self.assertEqual(d["held_by"], f"pid {holder.pid} (through accelfs)" if d["die"] == 2 else None)
                self.assertEqual(d["driver"], n.read("dies", str(d["die"]), "driver").strip())
                self.assertEqual(d["policy"], n.read("dies", str(d["die"]), "policy").strip())
        finally:
            holder.stdin.close()
            holder.wait(timeout=30)
        self.assertIn("holder: none", n.read("dies", "slot").splitlines(), "dies.md shows a free slot's holder")
        self.assertEqual(self.doc()["dies"]["slot"]["holder"], [])


def without_utilization(doc):
    """node.json's devices, without the utilization readings (the last sampled, which move on their own)."""
    devices = json.loads(doc)["devices"]
    for d in devices:
        d.pop("utilization", None)
        for j in d["jobs"]:
            j.pop("utilization", None)
    return devices


class Processes(NodeTestCase):
    """A job's processes: the driver's running-process query on the instance's MIG device, the
    command from /proc where this host can see the pid.  A live row: asked at open and read only,
    never at stat or poll; status and node.json are snapshot rows and leave it out."""

    def calls(self, name):
        calls = dict(line.split() for line in self.node.smi("ppu", "sim", "calls").stdout.splitlines())
        return int(calls.get(name, 0))

    def test_processes_of_a_busy_job_in_the_file_alone(self):
        n = self.node
        job_dir = ("ppu3", "mig", "4g.48gb", "job1")
        n.mkdir(*job_dir)
        n.mkdir("ppu3", "mig", "4g.48gb", "job2")  # another instance: its processes are not job1's
        st = n.keyvals(*job_dir, "status")
        other = n.keyvals("ppu3", "mig", "4g.48gb", "job2", "status")
        self.assertEqual(n.read(*job_dir, "processes"), "", "nothing runs on a new job")
        status_before = n.read(*job_dir, "status")
        doc_before = n.read("node.json")
        sleeper = subprocess.Popen(["sleep", "600"])
        try:
            n.smi("ppu", "sim", "busy", "-i", 3, "-gi", st["gi"], "-ci", st["ci"], 2, f"{sleeper.pid}:256")
            n.smi("ppu", "sim", "busy", "-i", 3, "-gi", other["gi"], "-ci", other["ci"], 1)
            # The simulator's pid for a process it does not name, above the kernel's limit: no such pid here.
            unseen = 4194304 + 1
            want = [f"pid={sleeper.pid} used_memory_bytes={256 << 20} command=sleep",
                    f"pid={unseen + 1} used_memory_bytes=0 command=-"]
            # Read through: the change shows at the next read, with no snapshot in between.
            self.assertEqual(n.read(*job_dir, "processes").splitlines(), want)
            self.assertEqual(n.read("ppu3", "mig", "4g.48gb", "job2", "processes").splitlines(),
                             [f"pid={unseen} used_memory_bytes=0 command=-"])
            self.assertEqual(n.read("mig", "4g.48gb", "job1", "processes").splitlines(), want, "the node-level view")
            # status and node.json are the snapshot's: what runs is not in them, and they did not move.
            self.assertEqual(n.read(*job_dir, "status"), status_before)
            self.assertNotIn("process", n.read(*job_dir, "status"))
            job = [j for d in json.loads(n.read("node.json"))["devices"] for j in d["jobs"] if j["name"] == "job1"][0]
            self.assertNotIn("processes", job)
            self.assertEqual(without_utilization(n.read("node.json")), without_utilization(doc_before))
            # The driver refusing the query: the file says so; the rest reads.
            n.smi("ppu", "sim", "fault", "DeviceGetComputeRunningProcesses_v3", "--ret", "UNKNOWN", "--times", 100000)
            text = n.read(*job_dir, "processes")
            self.assertRegex(text, r"^unknown: ppu3: asking which processes run on the instance failed: .*\(UNKNOWN\)\n$")
            self.assertEqual(n.read(*job_dir, "status"), status_before)
            n.smi("ppu", "sim", "clear-faults")
            self.assertEqual(n.read(*job_dir, "processes").splitlines(), want, "the driver answers again")
            n.smi("ppu", "sim", "busy", "-i", 3, "-gi", st["gi"], "-ci", st["ci"], 0)
            self.assertEqual(n.read(*job_dir, "processes"), "")
        finally:
            sleeper.kill()
            sleeper.wait()

    def test_status_and_node_json_ask_the_driver_nothing_and_stat_of_processes_neither(self):
        n = self.node
        job_dir = ("ppu3", "mig", "4g.48gb", "job1")
        n.mkdir(*job_dir)
        before = self.calls("DeviceGetComputeRunningProcesses_v3")
        for _ in range(3):
            n.read(*job_dir, "status")
            n.read("mig", "4g.48gb", "job1", "status")
            n.read("node.json")
            os.stat(n.path(*job_dir, "processes"))
            os.stat(n.path(*job_dir, "holders"))
        self.assertEqual(self.calls("DeviceGetComputeRunningProcesses_v3"), before,
                         "status, node.json and a stat of processes asked the driver")
        self.assertEqual(os.stat(n.path(*job_dir, "processes")).st_size, 0, "a live row's size at stat")
        n.read(*job_dir, "processes")
        self.assertGreater(self.calls("DeviceGetComputeRunningProcesses_v3"), before, "a read asks")


class BesideABusyRmdir(NodeTestCase):
    """An rmdir of a busy job holds its card through its retries (100 ms, 200 ms, ... each): a read of
    another job on that card waits for none of it (docs/tree.md, "Snapshot files and live files")."""

    busy_retries = 8  # the card held for 3.6 s: the reads below fall inside it

    def test_status_reads_and_processes_says_busy_while_the_card_is_held(self):
        n = self.node
        prof = ("ppu3", "mig", "4g.48gb")
        n.mkdir(*prof, "reader")
        n.mkdir(*prof, "busy")
        st = n.keyvals(*prof, "busy", "status")
        n.smi("ppu", "sim", "busy", "-i", 3, "-gi", st["gi"], "-ci", st["ci"], 1)
        status = n.read(*prof, "reader", "status")
        result = {}

        def remove():
            result["errno"] = n.errno_of(os.rmdir, n.path(*prof, "busy"))

        t = threading.Thread(target=remove)
        t.start()
        said_busy = 0
        try:
            while t.is_alive():
                self.assertEqual(n.read(*prof, "reader", "status"), status, "status is the snapshot's")
                text = n.read(*prof, "reader", "processes")
                if "busy" in text:
                    self.assertRegex(text, r"^unknown: ppu3 is busy \(a carve, a removal or a reading holds it\): "
                                           r"read again\n$")
                    said_busy += 1
        finally:
            t.join()
        self.assertEqual(result["errno"], errno.EBUSY, "the driver's own answer, after the retries")
        self.assertGreater(said_busy, 0, "processes answered while the rmdir held the card, saying so")
        self.assertEqual(n.read(*prof, "reader", "processes"), "", "the card free again: the driver answers")
        n.smi("ppu", "sim", "busy", "-i", 3, "-gi", st["gi"], "-ci", st["ci"], 0)
        os.rmdir(n.path(*prof, "busy"))


if __name__ == "__main__":
    unittest.main()
