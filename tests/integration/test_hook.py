# SPDX-License-Identifier: MIT
"""What a container's state can make accelfs-hook and the containers file do: nothing but the one
command for the one container it names.  The hook is fed hostile OCI states (newlines, NULs, huge ids,
bad JSON, missing or impossible pids) and the daemon's parser hostile writes; after each, a container
that holds the job still holds it."""
import errno
import json
import os
import subprocess
import unittest

from test_attachments import CID, HOOK, PROF, JobTestCase

VICTIM = "victim"


class HostileInput(JobTestCase):
    def setUp(self):
        super().setUp()
        os.mkdir(self.job())
        self.uuid = self.node.keyvals(*PROF, "job1", "status")["uuid"]
        self.victim = self.process()
        self.attach(self.victim.pid, cid=VICTIM)

    def raw_hook(self, verb, stdin, uuid=None):
        """The hook with stdin as given (bytes), as the runtime would run it."""
        return subprocess.run([HOOK, verb, self.job(), uuid or self.uuid], input=stdin, capture_output=True,
                              timeout=30)

    def assertVictimHolds(self, context):
        self.assertEqual([c["id"] for c in self.containers()], [VICTIM], context)
        self.assertErrno(errno.EBUSY, os.rmdir, self.job())

    def assertRefused(self, res, words, context):
        self.assertNotEqual(res.returncode, 0, f"{context}: the hook succeeded")
        err = res.stderr.decode(errors="replace")
        self.assertIn("accelfs-hook: ", err, context)
        self.assertIn(words, err, context)
        self.assertVictimHolds(context)

    def test_a_newline_in_the_id_does_not_reach_another_container(self):
        for verb in ("detach", "attach"):
            state = {"id": f"evil\ndetach {VICTIM}", "pid": self.victim.pid}
            res = self.raw_hook(verb, json.dumps(state).encode())
            self.assertRefused(res, "is not a container id", f"{verb} with a newline in the id")
        self.assertNotIn("evil", self.node.read(*PROF, "job1", "containers"))

    def test_the_containers_file_takes_one_command_per_write(self):
        for text, why in ((f"detach evil\ndetach {VICTIM}\n", "one command per write"),
                          (f"detach {VICTIM}\n\n", "one command per write"),
                          (f"detach evil\0detach {VICTIM}\n", "one command per write"),
                          (f"detach evil\rdetach {VICTIM}\n", "not a container id"),
                          (f"detach vic/tim\n", "not a container id"),
                          ("detach " + "a" * 129 + "\n", "not a container id"),
                          (f"attach  {self.victim.pid} {self.uuid}\n", "the container id is empty"),
                          (f"detach  {self.uuid}\n", "the container id is empty")):
            with self.subTest(text=text):
                self.assertErrno(errno.EINVAL, self.write, self.job("containers"), text)
                self.assertIn(why, self.last_error())
                self.assertVictimHolds(repr(text))
        # a command without its newline, as one write, is one command
        self.write(self.job("containers"), f"detach {VICTIM}")
        self.assertEqual(self.containers(), [])

    def test_nuls_huge_ids_and_what_is_not_an_oci_state(self):
        for verb in ("attach", "detach"):
            for stdin, words in ((b'{"id": "a\\u0000b", "pid": %d}' % self.victim.pid, "not JSON"),
                                 (b'{"id": "ok", "pid": 5}\0{"id": "x"}', "not JSON"),
                                 (b"", "not JSON"),
                                 (b"[1, 2]", "not a JSON object"),
                                 (b'"victim"', "not a JSON object"),
                                 (json.dumps({"id": "a" * 129, "pid": 5}).encode(), "longer than 128"),
                                 (json.dumps({"id": "a" * 100000, "pid": 5}).encode(), "longer than 128"),
                                 (json.dumps({"id": "", "pid": self.victim.pid}).encode(), "the container id is empty"),
                                 (json.dumps({"id": 42, "pid": 5}).encode(), "lacks the container's id"),
                                 (json.dumps({"pid": 5}).encode(), "lacks the container's id")):
                with self.subTest(verb=verb, stdin=stdin[:60]):
                    self.assertRefused(self.raw_hook(verb, stdin), words, f"{verb} {stdin[:60]!r}")

    def test_attach_needs_the_pid_of_a_process_that_may_be_a_container(self):
        for pid, words in ((None, "lacks the container's pid"), (0, "pid 0 is not a process id"),
                           (-4, "pid -4 is not a process id"), ("123", "lacks the container's pid"),
                           (1.5, "lacks the container's pid"), (2 ** 40, f"pid {2 ** 40} is not a process id"),
                           (1, "pid 1 is init")):
            state = {"id": "newcomer"} if pid is None else {"id": "newcomer", "pid": pid}
            with self.subTest(pid=pid):
                self.assertRefused(self.raw_hook("attach", json.dumps(state).encode()), words, f"pid {pid!r}")
        # a poststop state has no pid to speak of: detach never needs one
        res = self.raw_hook("detach", json.dumps({"id": VICTIM, "pid": 0}).encode())
        self.assertEqual(res.returncode, 0, res.stderr)
        self.assertEqual(self.containers(), [])

    def test_the_uuid_argument_is_checked_too(self):
        for uuid in ("MIG-x\ndetach victim", "MIG-x detach", "-"):
            with self.subTest(uuid=uuid):
                res = self.raw_hook("detach", json.dumps({"id": VICTIM}).encode(), uuid=uuid)
                self.assertRefused(res, "is not a MIG UUID", repr(uuid))


class WhyTheJobCannotBeGiven(JobTestCase):
    """The runtime shows the hook's message: a job removed and a daemon stopped are different advice."""

    def attach_hook(self, job, uuid):
        state = json.dumps({"id": CID, "pid": os.getpid()})
        return subprocess.run([HOOK, "attach", job, uuid], input=state, capture_output=True, text=True, timeout=30)

    def test_a_removed_job_and_a_stopped_daemon_are_told_apart(self):
        os.mkdir(self.job())
        uuid = self.node.keyvals(*PROF, "job1", "status")["uuid"]
        os.rmdir(self.job())
        res = self.attach_hook(self.job(), uuid)
        self.assertEqual(res.returncode, 1, res.stderr)
        self.assertIn("(the job was removed: a container cannot be given it)", res.stderr)
        os.mkdir(self.job())
        uuid = self.node.keyvals(*PROF, "job1", "status")["uuid"]
        self.node.stop()
        for job in (self.job(), self.job() + "/"):
            res = self.attach_hook(job, uuid)
            self.assertEqual(res.returncode, 1, res.stderr)
            self.assertNotIn("was removed", res.stderr, "the job exists: only its daemon is stopped")
            self.assertIn("no accelfs serves that directory: is the daemon running?", res.stderr)
        self.node.start()
        self.assertEqual(self.node.keyvals(*PROF, "job1", "status")["uuid"], uuid, "the job outlived its daemon")


if __name__ == "__main__":
    unittest.main(verbosity=2)
