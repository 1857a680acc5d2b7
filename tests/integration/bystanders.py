# SPDX-License-Identifier: MIT
"""Bystanders of the crash storm (test_trust.py): what else users do in the workload's directories
while the daemon dies, and what their answers promise after the restart."""
import errno
import os
import random
import select
import subprocess
import threading

from trust_harness import SEED, name


DEAD = (errno.ENOTCONN, errno.ECONNABORTED)


class Bystanders:
    """Threads that list and read the workload's directories, poll() its files as accel-wait does, and
    attach and detach a container on jobs of their own (a-<n>), all while the daemon is killed.
    Every attach and detach answer is booked, so that a restart can be held to them."""

    def __init__(self, node, targets, attach_on=("gpu0", "1g.18gb"), seed=SEED):
        self.node = node
        self.targets = [t for t in targets if t[0]]
        self.attach_on = attach_on
        self.rng = random.Random(seed)
        self.sleeper = subprocess.Popen(["sleep", "100000"])
        self.book = {}       # (job, container) -> last answered verb ("attach" or "detach"), uuid
        self.inflight = {}   # (job, container) -> verb, while asked and not answered
        self.dead = False

    def close(self):
        self.sleeper.kill()
        self.sleeper.wait()

    def call(self, fn, *args):
        try:
            return fn(*args), 0
        except OSError as e:
            if e.errno in DEAD:
                self.dead = True
            return None, e.errno

    def reader(self, stop):
        n = self.node
        while not stop.is_set() and not self.dead:
            dev, prof = self.rng.choice(self.targets)
            names, _ = self.call(os.listdir, n.path(dev, "mig", prof))
            for job in names or ():
                if job.startswith(("t", "a-")):
                    self.call(n.read, dev, "mig", prof, job, "status")
            self.call(n.read, dev, "mig", "instances")

    def poller(self, stop):
        n = self.node
        while not stop.is_set() and not self.dead:
            dev, prof = self.rng.choice(self.targets)
            fd, _ = self.call(os.open, n.path(dev, "mig", prof, "available"), os.O_RDONLY)
            if fd is None:
                continue
            try:
                self.call(os.read, fd, 64)
                p = select.poll()
                p.register(fd, select.POLLPRI | select.POLLERR)
                p.poll(100)
                self.call(os.pread, fd, 64, 0)
            finally:
                os.close(fd)

    def attacher(self, stop):
        n = self.node
        dev, prof = self.attach_on
        while not stop.is_set() and not self.dead:
            k = self.k = getattr(self, "k", -1) + 1  # container ids are never reused, across rounds too
            job, cid = f"a-{k % 3}", f"c{k}"
            path = n.path(dev, "mig", prof, job)
            _, err = self.call(os.mkdir, path)
            if err not in (0, errno.EEXIST):
                continue
            status, err = self.call(n.keyvals, dev, "mig", prof, job, "status")
            if err or not status:
                continue
            for verb in ("attach", "detach"):
                key = (job, cid)
                line = f"attach {cid} {self.sleeper.pid} {status['uuid']}\n" if verb == "attach" else f"detach {cid}\n"
                self.inflight[key] = verb
                _, err = self.call(self.write, os.path.join(path, "containers"), line)
                del self.inflight[key]
                # refused, or cut by the daemon's death: it may or may not have happened
                self.book[key] = (verb if not err else "unknown", status["uuid"])
                if err:
                    break
                if self.dead or (verb == "attach" and self.rng.random() < 0.3):
                    break  # left attached: a restart must keep it
            if self.rng.random() < 0.3:
                self.call(os.rmdir, path)  # EBUSY while a container is left attached

    @staticmethod
    def write(path, text):
        with open(path, "w") as f:
            f.write(text)

    def threads(self, stop):
        return [threading.Thread(target=f, args=(stop,)) for f in (self.reader, self.poller, self.attacher)]

    def held_to(self):
        """After a restart: every attach and detach that was answered holds (the ones in flight when
        the daemon died may go either way).  Returns the problems."""
        n = self.node
        dev, prof = self.attach_on
        problems = []
        for (job, cid), (verb, uuid) in sorted(self.book.items()):
            if (job, cid) in self.inflight or verb == "unknown":
                continue
            try:
                status = n.keyvals(dev, "mig", prof, job, "status")
                lines = n.read(dev, "mig", prof, job, "containers").splitlines()
            except OSError as e:
                if verb == "attach":
                    problems.append(f"{job}: attached to {cid} (answered 0), gone after the restart: {name(e.errno)}")
                continue
            if status.get("uuid") != uuid:
                continue  # removed and made again since: another job
            listed = any(f"id={cid} " in line + " " for line in lines)
            if verb == "attach" and not listed:
                problems.append(f"{job}: attach {cid} answered 0, yet after the restart it lists {lines}")
            if verb == "detach" and listed:
                problems.append(f"{job}: detach {cid} answered 0, yet after the restart it lists {lines}")
        return problems

    def clear(self):
        """Detach everything and remove the a-<n> jobs (the test's end)."""
        n = self.node
        dev, prof = self.attach_on
        for job in sorted(os.listdir(n.path(dev, "mig", prof))):
            if not job.startswith("a-"):
                continue
            for line in n.read(dev, "mig", prof, job, "containers").splitlines():
                cid = dict(f.split("=", 1) for f in line.split())["id"]
                self.write(n.path(dev, "mig", prof, job, "containers"), f"detach {cid}\n")
            os.rmdir(n.path(dev, "mig", prof, job))


