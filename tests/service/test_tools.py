# SPDX-License-Identifier: MIT
"""What nvidia-smi users look for in the tools, against the mounted tree of the same node: accel-smi with no
command prints a status table, accel-smi --json and barswap --json say what node.json says (the keys each
tool knows, with the same values), barswap info has the keys of dies/<n>/info in its order, and barswap's
command line takes options anywhere, refuses extra words and names the dies there are."""
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
from harness import ACCEL_SMI, NodeTestCase  # noqa: E402

BARSWAP = os.environ.get("BARSWAP", "barswap")


class AccelSmi(NodeTestCase):
    def smi(self, *args, family="ppu"):
        return subprocess.run([ACCEL_SMI, f"--sim={self.node.state}", "-f", family, *args], capture_output=True,
                              text=True, timeout=60)

    def test_no_command_is_a_status_table(self):
        self.node.mkdir("ppu3", "mig", "4g.48gb", "job1")
        uuid = self.node.keyvals("ppu3", "mig", "4g.48gb", "job1", "status")["uuid"]
        res = self.smi()
        self.assertEqual(res.returncode, 0, res.stderr)
        rows = {line.split()[1]: line.split() for line in res.stdout.splitlines()
                if len(line.split()) > 1 and line.split()[1].startswith("ppu")}
        devices = sorted(d for d in os.listdir(self.node.mnt) if d.startswith("ppu"))
        self.assertEqual(sorted(rows), devices, "one row per card of the tree")
        self.assertEqual(rows["ppu3"][-1], "1", "ppu3 has one MIG device")
        self.assertRegex(res.stdout, rf"(?m)^3 +\d+ +\d+ +4g\.48gb +0:4 +{uuid}$")
        one = self.smi("-i", "5")
        self.assertEqual([line.split()[1] for line in one.stdout.splitlines()
                          if len(line.split()) > 1 and line.split()[1].startswith("ppu")], ["ppu5"])

    def test_json_says_what_node_json_says(self):
        n = self.node
        n.mkdir("ppu3", "mig", "4g.48gb", "job1")
        n.mkdir("gpu0", "mig", "3g.71gb", "jobg")
        tree = {d["name"]: d for d in json.loads(n.read("node.json"))["devices"]}
        for family in ("ppu", "gpu"):
            res = self.smi("--json", family=family)
            self.assertEqual(res.returncode, 0, res.stderr)
            listed = json.loads(res.stdout)["devices"]
            self.assertEqual(sorted(d["name"] for d in listed),
                             sorted(name for name in tree if name.startswith(family)))
            for d in listed:
                want = tree[d["name"]]
                with self.subTest(device=d["name"]):
                    self.assertEqual(set(d) - set(want), set(), "every key is one of node.json's")
                    for key in set(d) - {"instances"}:
                        self.assertEqual(d[key], want[key], key)
                    self.assertEqual(d["instances"], [{k: v for k, v in i.items() if k not in ("job", "note", "owner")}
                                                      for i in want["instances"]])
        self.assertEqual(len(tree["ppu3"]["instances"]), 1, "the instance is compared, not an empty list")


class Barswap(NodeTestCase):
    def cli(self, *args):
        return subprocess.run([BARSWAP, f"--sim={self.node.state}", *[str(a) for a in args]], capture_output=True,
                              text=True, timeout=60)

    def test_info_has_the_keys_and_values_of_the_tree(self):
        for die in (0, 3, 15):
            res = self.cli("info", die)
            self.assertEqual(res.returncode, 0, res.stderr)
            self.assertEqual(res.stdout, self.node.read("dies", str(die), "info"))
        holder = subprocess.Popen([BARSWAP, f"--sim={self.node.state}", "acquire", "4", "-"], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, text=True)
        try:
            self.assertTrue(holder.stdout.readline().startswith("acquired 4"))
            res = self.cli("info", 4)
            self.assertEqual(res.stdout, self.node.read("dies", "4", "info"))
            self.assertIn(f"held_by: pid {holder.pid}\n", res.stdout)
        finally:
            holder.stdin.close()
            holder.wait(timeout=60)
            holder.stdout.close()

    def test_json_says_what_node_json_says(self):
        res = self.cli("--json", "query")
        self.assertEqual(res.returncode, 0, res.stderr)
        mine = json.loads(res.stdout)
        tree = json.loads(self.node.read("node.json"))["dies"]
        self.assertEqual(set(mine), {"slot", "dies"})
        for key, value in mine["slot"].items():
            if key in tree["slot"] and key != "slot_open_files":  # barswap's own open is one of its files
                self.assertEqual(value, tree["slot"][key], key)
        self.assertLessEqual({"active", "swaps", "owner_pid", "slot_size", "dies", "backend"}, set(mine["slot"]))
        self.assertEqual(len(mine["dies"]), len(tree["dies"]))
        for got, want in zip(mine["dies"], tree["dies"]):
            self.assertLessEqual(set(want), set(got), "every key of node.json's die")
            for key in want:
                self.assertEqual(got[key], want[key], key)
        one = json.loads(self.cli("info", "--json", 7).stdout)
        self.assertEqual(one, mine["dies"][7])

    def test_options_anywhere_and_no_word_ignored(self):
        holder = subprocess.Popen([BARSWAP, f"--sim={self.node.state}", "acquire", "2", "-"], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, text=True)
        try:
            self.assertTrue(holder.stdout.readline().startswith("acquired 2"))
            for args in (("acquire", "--nonblock", 2, 1), ("acquire", 2, 1, "--nonblock"), ("--nonblock", "acquire", 2)):
                with self.subTest(args=args):
                    res = self.cli(*args)  # the slot is held: --nonblock answers at once, wherever it stands
                    self.assertEqual(res.returncode, 1, res.stdout + res.stderr)
                    self.assertIn("Resource temporarily unavailable", res.stderr)
        finally:
            holder.stdin.close()
            holder.wait(timeout=60)
            holder.stdout.close()
        res = self.cli("acquire", 2, 0, "extra")
        self.assertEqual(res.returncode, 2)
        self.assertIn("acquire takes at most 2 arguments: 'extra'", res.stderr)

    def test_a_die_that_does_not_exist_is_named_with_those_that_do(self):
        for args in (("info", 16), ("acquire", 99, 0), ("--json", "info", 16)):
            with self.subTest(args=args):
                res = self.cli(*args)
                self.assertEqual(res.returncode, 1)
                self.assertIn(f"there is no die {args[-2] if args[0] == 'acquire' else args[-1]}: "
                              "this slot has dies 0 to 15 (barswap query lists them)", res.stderr)


if __name__ == "__main__":
    import unittest
    unittest.main(verbosity=2)
