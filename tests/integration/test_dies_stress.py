# SPDX-License-Identifier: MIT
"""dies/<n>/vram under many openers at once: processes each opening, reading,
writing and closing the vram files of several dies in a tight loop, the way
two processes doing open, pread, close on dies/0/vram once killed the daemon
(a read touched its handle after the reply, when the reader's close had
already freed it: nothing may touch a request's state after its reply).

Afterwards the daemon still serves, every block a worker wrote last holds
what it wrote, and dies/slot and dies/<n>/info say nobody holds or waits.
Plain, and with the daemon under valgrind (fewer rounds, still thousands).
ACCELFS_DIES_STRESS_ROUNDS sets the rounds per worker of the plain run
(default 4000, 32000 in all); the valgrind run takes a twelfth of it.
"""
import os
import shutil
import subprocess
import sys
import unittest

from harness import NodeTestCase, daemon_under_valgrind

BLOCK = 4096
WORKERS = 8
DIES = (0, 1, 2, 3)
ROUNDS = int(os.environ.get("ACCELFS_DIES_STRESS_ROUNDS", "4000"))
LIVENESS_S = 240

# One worker: WORKER dies rounds id.  Even workers share die 0 (open, pread,
# close: the crash as it was seen), odd ones go round every die, so the slot
# is shared and swapped at once.  Every worker owns the block at id * BLOCK
# of every die: it writes a block naming itself, the round and the die, and
# reads back what it wrote last there.  The first failure ends it (exit 1,
# a line saying what); at the end it prints the round it last wrote to each die.
WORKER = r"""
import os, sys
dies = [int(d) for d in sys.argv[1].split(",")]
root, wid, rounds = sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
BLOCK = 4096
off = wid * BLOCK

def block(die, rnd):
    head = f"worker {wid} round {rnd} die {die};".encode()
    return (head * (BLOCK // len(head) + 1))[:BLOCK]

last = {}
for i in range(rounds):
    die = dies[0] if wid % 2 == 0 else dies[(i + wid) % len(dies)]
    path = os.path.join(root, str(die), "vram")
    try:
        fd = os.open(path, os.O_RDWR)
    except OSError as e:
        sys.exit(f"FAIL worker {wid} round {i}: open {path}: {e}")
    try:
        if die not in last or i % 3 == 0:
            n = os.pwrite(fd, block(die, i), off)
            if n != BLOCK:
                sys.exit(f"FAIL worker {wid} round {i}: pwrite of die {die} wrote {n} bytes")
            last[die] = i
        got = os.pread(fd, BLOCK, off)
        if got != block(die, last[die]):
            sys.exit(f"FAIL worker {wid} round {i}: die {die} holds {got[:48]!r}, not round {last[die]}'s block")
    except OSError as e:
        sys.exit(f"FAIL worker {wid} round {i}: I/O on die {die}: {e}")
    finally:
        os.close(fd)
print(" ".join(f"{d}={r}" for d, r in sorted(last.items())), flush=True)
"""


def block(wid, die, rnd):
    head = f"worker {wid} round {rnd} die {die};".encode()
    return (head * (BLOCK // len(head) + 1))[:BLOCK]


def keyvals(path):
    with open(path) as f:
        return dict(line.split(": ", 1) for line in f.read().splitlines() if ": " in line)


class Stress:
    """The workers and what is checked after them; test cases give the dies/ directory."""

    def run_workers(self, dies_dir, rounds):
        before = {d: int(keyvals(os.path.join(dies_dir, str(d), "info"))["acquires"]) for d in DIES}
        procs = [subprocess.Popen([sys.executable, "-c", WORKER, ",".join(map(str, DIES)), dies_dir, str(w),
                                   str(rounds)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                 for w in range(WORKERS)]
        try:
            # A liveness bound, not a timing: the plain run takes seconds, valgrind's a minute or two.
            outs = [p.communicate(timeout=LIVENESS_S) for p in procs]
        except subprocess.TimeoutExpired:
            for p in procs:
                p.kill()
                p.communicate()
            self.fail(f"the workers were still running after {LIVENESS_S} s: the daemon hangs")
        for w, (p, (out, err)) in enumerate(zip(procs, outs)):
            self.assertEqual(p.returncode, 0, f"worker {w}: {out}{err}")
        # The daemon serves still, and every block holds what its worker wrote last.
        for w, (out, _) in enumerate(outs):
            last = dict(item.split("=") for item in out.split())
            self.assertTrue(last, f"worker {w} wrote nothing")
            for die, rnd in last.items():
                fd = os.open(os.path.join(dies_dir, die, "vram"), os.O_RDONLY)
                try:
                    self.assertEqual(os.pread(fd, BLOCK, w * BLOCK), block(w, die, rnd), f"worker {w}, die {die}")
                finally:
                    os.close(fd)
        # Every close let go before it returned: nobody holds or waits, and every die was taken.
        slot = keyvals(os.path.join(dies_dir, "slot"))
        for key, want in (("active", "none"), ("holders", "0"), ("waiters", "0"), ("slot_waiters", "0"),
                          ("owner", "none"), ("holder", "none"), ("waiter", None)):
            self.assertEqual(slot.get(key), want, f"dies/slot {key}: {slot}")
        for d in DIES:
            info = keyvals(os.path.join(dies_dir, str(d), "info"))
            self.assertEqual(info["state"], "parked", f"die {d}: {info}")
            self.assertEqual(info["enabled"], "1", f"die {d}: {info}")
            self.assertGreater(int(info["acquires"]), before[d], f"die {d} was never taken: {info}")


class ManyOpeners(NodeTestCase, Stress):
    def test_many_processes_open_read_write_and_close_at_once(self):
        pid = self.node.pid()
        self.run_workers(self.node.path("dies"), ROUNDS)
        self.assertEqual(self.node.pid(), pid)
        os.kill(pid, 0)  # the same daemon, alive
        self.assertIn("slot", os.listdir(self.node.path("dies")))


@unittest.skipIf(os.environ.get("ACCELFS_NO_VALGRIND") or not shutil.which("valgrind"),
                 "valgrind is not available here, or the build is sanitized (ASan and valgrind exclude each other)")
class ManyOpenersUnderValgrind(unittest.TestCase, Stress):
    def test_many_openers_with_the_daemon_under_valgrind(self):
        # No invalid read or write, no definite leak (daemon_under_valgrind fails the test on either).
        with daemon_under_valgrind(self, os.path.join("dies", "slot")) as mnt:
            self.run_workers(os.path.join(mnt, "dies"), max(ROUNDS // 12, 50))


if __name__ == "__main__":
    unittest.main(verbosity=2)
