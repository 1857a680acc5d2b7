# SPDX-License-Identifier: MIT
"""The manual cannot drift from the code.  accelfs(5)'s SYNOPSIS draws the tree: its names are compared,
both ways, with the names a mounted simulated node lists in every kind of directory (the tree's rows,
however fs/ lays them out), and each name has an entry of its own in the page.  Each tool's OPTIONS are
compared with its parser: every option a page documents is accepted by the program, every option --help
prints is in the page, and the options accelfs takes as --opt=VALUE take --opt VALUE too.  accelfs-dra(8),
a Go program meson does not build, is compared with its source: main.go's flags and their defaults,
metrics.go's metrics and the taints publish/ and driver/ set.  No .TP tag of any page runs onto the next
line.  The README's tour is held to the tree too: each `ls /accel...` it shows is what a node lists."""
import os
import re
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
from harness import ACCELFS, ACCEL_SMI, ACCEL_WAIT, NodeTestCase  # noqa: E402

MAN_SRC = os.environ.get("MAN_SRC", os.path.join(HERE, "..", "..", "man"))
BARSWAP = os.environ.get("BARSWAP", "barswap")
HOOK = os.environ.get("ACCELFS_HOOK", "accelfs-hook")
SYNC = os.environ.get("ACCELFS_SLURM_SYNC")
OPTION = re.compile(r"(?<![\w/-])--?[A-Za-z][A-Za-z-]*")


def source(page):
    with open(os.path.join(MAN_SRC, page)) as f:
        return f.read()


def plain(text):
    """A roff line as words: fonts, escapes and quotes gone."""
    text = re.sub(r"\\f[BIRP]|\\\*\(\w\w|\\&|\\\(\w\w", "", text)
    return text.replace("\\-", "-").replace('"', "")


def rendered(page, section=None):
    out = subprocess.run(["man", "-E", "UTF-8", "-l", os.path.join(MAN_SRC, page)], capture_output=True, text=True,
                         env=dict(os.environ, LC_ALL="C.UTF-8", MANWIDTH="200"), check=True).stdout
    if section is None:
        return out
    m = re.search(rf"(?ms)^{section}\n(.*?)(?=^[A-Z][A-Z .]+\n)", out)
    return m.group(1) if m else ""


def tags(page, section):
    """The tag lines of the .TP entries of one section of a page's source."""
    m = re.search(rf"(?ms)^\.SH {section}\n(.*?)(?=^\.SH )", source(page))
    lines = m.group(1).splitlines() if m else []
    return [plain(lines[i + 1]) for i, line in enumerate(lines[:-1]) if line == ".TP"]


# ---- accelfs(5) against the mounted tree -----------------------------------------------------------

def synopsis_names():
    """The names of accelfs(5)'s drawing of the tree: the words of its .nf block that are names (a
    description has single spaces between its words; a placeholder is in italics)."""
    block = re.search(r"(?ms)^\.SH SYNOPSIS\n\.nf\n(.*?)^\.fi", source("accelfs.5")).group(1)
    names = set()
    for line in block.splitlines():
        for token in re.split(r"\s{2,}", line.strip()):
            token = token.split(" \\->")[0]  # "device -> ../../../job": the link's name
            if "\\fI" in token or " " in token or token in ("...", "") or token.startswith("/"):
                continue
            names.add(plain(token).rstrip("/"))
    return names


def variable(name):
    """Names chosen by the hardware or the user: devices, profiles, jobs, starts, dies."""
    return re.fullmatch(r"(ppu|gpu)\d+|\d+|\d+g\.\d+gb|job\d*|nodejob|placed", name) is not None


class TreeAgainstSynopsis(NodeTestCase):
    def setUp(self):
        super().setUp()
        n = self.node
        n.mkdir("ppu3", "mig", "4g.48gb", "job1")
        n.mkdir("mig", "1g.18gb", "nodejob")
        n.mkdir("ppu4", "mig", "4g.48gb", "placements", "4", "placed")

    def tree_names(self):
        """Every fixed name the mounted tree lists, in every kind of directory down to a die and a job."""
        seen = set()
        for top, dirs, files in os.walk(self.node.mnt):
            rel = os.path.relpath(top, self.node.mnt)
            if os.path.basename(top) == "dev" or "/dev/" in rel + "/":
                dirs[:] = []  # a job's device nodes are the driver's names
                continue
            seen.update(name for name in dirs + files if not variable(name))
            dirs[:] = [d for d in dirs if not re.fullmatch(r"(ppu|gpu)([0-9]|1[0-5])", d) or d in ("ppu3", "ppu4",
                                                                                                   "gpu0")]
        return seen

    def test_the_synopsis_draws_every_name_the_tree_has_and_no_other(self):
        tree, page = self.tree_names(), synopsis_names()
        self.assertIn("containers", tree, "the walk reached a job directory")
        self.assertIn("vram", tree, "the walk reached a die")
        self.assertEqual(sorted(tree - page), [], "files of the tree accelfs(5)'s SYNOPSIS does not draw")
        self.assertEqual(sorted(page - tree), [], "names accelfs(5)'s SYNOPSIS draws that the tree does not have")

    def test_every_name_has_an_entry_of_its_own(self):
        text = source("accelfs.5").splitlines()
        entries = " ".join(plain(line) for i, line in enumerate(text)
                           if line.startswith((".SS", ".B ", ".BR ", ".BI ")) or (i and text[i - 1] == ".TP"))
        for name in sorted(self.tree_names()):
            self.assertRegex(entries, rf"(^|[\s/(]){re.escape(name)}($|[\s/),])",
                             f"accelfs(5) has no entry (.SS, .TP or bold) for {name}")


# ---- the README's tour against the mounted tree ----------------------------------------------------

def readme_listings():
    """Each `$ ls /accel...` of the README's tour with the line it shows: [(path under /accel, names)]."""
    with open(os.path.join(HERE, "..", "..", "README.md")) as f:
        lines = f.read().splitlines()
    return [((m.group(1) or "").lstrip("/"), lines[i + 1].split())
            for i, line in enumerate(lines[:-1])
            if (m := re.fullmatch(r"\$ ls /accel(/\S*)?\s*(#.*)?", line)) and not lines[i + 1].startswith("$")]


class ReadmeAgainstTree(NodeTestCase):
    def test_the_tours_listings_are_what_a_node_lists(self):
        """The tour's `ls` lines are a newcomer's first look: each names what the node lists, all of it
        ("..." stands for names left out)."""
        listings = readme_listings()
        self.assertTrue(listings, "the README's tour shows no `ls /accel` with its output")
        for rel, shown in listings:
            with self.subTest(path="/accel/" + rel):
                listed = sorted(os.listdir(os.path.join(self.node.mnt, rel)))
                named = sorted(name for name in shown if name != "...")
                if "..." in shown:
                    self.assertEqual(sorted(set(named) - set(listed)), [], "names the node does not list")
                else:
                    self.assertEqual(named, listed, "the README's listing against the node's")


# ---- each tool's OPTIONS against its parser --------------------------------------------------------

def help_options(*cmd):
    return set(OPTION.findall(subprocess.run([*cmd, "--help"], capture_output=True, text=True).stdout))


class OptionsAgainstParsers(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="accelfs-manual-")

    def tearDown(self):
        subprocess.run(["rm", "-rf", self.tmp], check=True)

    def documented(self, page, sections=("OPTIONS",)):
        """Each option of the pages' tags, with how the tag gives it a value (=VALUE, a word, or none)."""
        found = {}
        for section in sections:
            for tag in tags(page, section):
                for m in OPTION.finditer(tag):
                    rest = tag[m.end():]
                    # "--opt=VALUE" takes "=1"; "-f, --family ppu|gpu" a word; "--sim[=DIR]" nothing
                    found[m.group(0)] = "=" if rest.startswith("=") else \
                        "word" if re.match(r"(\s*,\s*--?[A-Za-z-]+)*\s+[a-z]+\|", rest) else None
        self.assertTrue(found, f"{page} has no option in {sections}")
        return found

    def probe(self, cmd, opt, how, then=("--help",)):
        args = [f"{opt}=1"] if how == "=" else [opt, "gpu"] if how == "word" else [opt]
        return subprocess.run([*cmd, *args, *then], capture_output=True, text=True, timeout=60,
                              env=dict(os.environ, ACCELFS_LOG="info"))

    def check_tool(self, page, cmd, sections=("OPTIONS",), alone=False):
        documented = self.documented(page, sections)
        for opt, how in documented.items():
            with self.subTest(page=page, option=opt):
                res = self.probe(cmd, opt, how, then=() if alone else ("--help",))
                self.assertEqual(res.returncode, 0, f"{page} documents {opt}, which {cmd[-1]} refuses: {res.stderr}")
        missing = help_options(*cmd) - set(documented) - set(OPTION.findall(rendered(page)))
        self.assertEqual(missing, set(), f"{cmd[-1]} --help prints options {page} does not document")

    def test_barswap(self):
        self.check_tool("barswap.1", [BARSWAP])

    def test_accel_wait(self):
        self.check_tool("accel-wait.1", [ACCEL_WAIT])

    def test_accel_smi(self):
        self.check_tool("accel-smi.1", [ACCEL_SMI])

    def test_accelfs_hook(self):
        self.check_tool("accelfs-hook.8", [HOOK], alone=True)

    @unittest.skipUnless(SYNC, "built without the Slurm plugin")
    def test_accelfs_slurm_sync(self):
        self.check_tool("accelfs-slurm-sync.8", [SYNC])

    def test_accelfs(self):
        """accelfs reads --help only after the whole line: an unknown option is told by the usage error it
        gives on a mountpoint that does not exist (exit 2 either way, nothing made)."""
        nowhere = os.path.join(self.tmp, "no-mountpoint")
        state = os.path.join(self.tmp, "state")
        documented = self.documented("accelfs.8")
        for opt, how in documented.items():
            with self.subTest(option=opt):
                args = [f"{opt}={state if opt == '--state-dir' else self.tmp if opt == '--metrics-textfile' else 1}"] \
                    if how == "=" else [opt, "ro"] if opt == "-o" else [opt]
                res = subprocess.run([ACCELFS, *args, f"--state-dir={state}", nowhere], capture_output=True,
                                     text=True, timeout=60, cwd=self.tmp)
                self.assertNotIn("unknown option", res.stderr, f"accelfs(8) documents {opt}")
                self.assertIn(res.returncode, (0, 2), res.stderr)
                valued = how == "=" and opt != "--sim"
                if valued:  # the same value as the next argument, as getopt_long takes it
                    res = subprocess.run([ACCELFS, opt, args[0].split("=", 1)[1], f"--state-dir={state}", nowhere],
                                         capture_output=True, text=True, timeout=60, cwd=self.tmp)
                    self.assertNotIn("unknown option", res.stderr, f"{opt} VALUE")
                    self.assertNotIn("more than one mountpoint", res.stderr, f"{opt} VALUE")
        self.assertFalse(os.path.exists(state), "a usage error made nothing")
        missing = help_options(ACCELFS) - set(documented)
        self.assertEqual(missing, set(), "accelfs --help prints options accelfs(8)'s OPTIONS does not document")


# ---- accelfs-dra(8) against the Go source ----------------------------------------------------------

K8S = os.path.join(HERE, "..", "..", "k8s")
FLAG = re.compile(r'fs\.(?:String|Duration|Bool|Int|Uint)\("([a-z-]+)",\s*([^,]+),')


def go_source(*path):
    with open(os.path.join(K8S, *path)) as f:
        return f.read()


def go_func(text, name):
    """The body of one top-level Go function: from its line to the next top-level func."""
    m = re.search(rf"(?ms)^func {name}\(.*?(?=^func |\Z)", text)
    return m.group(0) if m else ""


def page_entries(page, section):
    """The .TP entries of one section of a page's source, as (tag, body) in plain words, each
    .SS of the section starting a group of its own: {subsection or "": [(tag, body)]}."""
    m = re.search(rf"(?ms)^\.SH {re.escape(section)}\n(.*?)(?=^\.SH )", source(page))
    groups, group, lines = {}, "", m.group(1).splitlines() if m else []
    i = 0
    while i < len(lines):
        if lines[i].startswith(".SS "):
            group = lines[i][4:].strip('"')
        elif lines[i] == ".TP" and i + 1 < len(lines):
            body = []
            j = i + 2
            while j < len(lines) and lines[j] not in (".TP", ".PP") and not lines[j].startswith((".SS", ".SH")):
                body.append(plain(re.sub(r"^\.\w+ ", "", lines[j])))
                j += 1
            groups.setdefault(group, []).append((plain(re.sub(r"^\.\w+ ", "", lines[i + 1])), " ".join(body)))
            i = j
            continue
        i += 1
    return groups


def go_default(expr):
    """What a flag's default reads as in the page, where the Go source says it plainly ("" where not)."""
    expr = expr.strip()
    if m := re.fullmatch(r'"(.+)"', expr):
        return m.group(1)
    if m := re.fullmatch(r'os\.Getenv\("(\w+)"\)', expr):
        return "$" + m.group(1)
    if m := re.fullmatch(r"(\d+)\s*\*\s*time\.(Second|Minute)", expr):
        return m.group(1) + ("s" if m.group(2) == "Second" else "m0s")  # as Go prints the default
    return ""


class DraAgainstSource(unittest.TestCase):
    """accelfs-dra is built outside meson (a Go module), so its page is held to the source itself:
    the flags main.go defines with their defaults, the metrics metrics.go writes, the taints
    publish/ sets."""

    def test_options_are_the_flags_main_go_defines(self):
        main = go_source("cmd", "accelfs-dra", "main.go")
        entries = page_entries("accelfs-dra.8", "OPTIONS")
        for func, group in (("run", ""), ("classes", "classes")):
            with self.subTest(command=func):
                flags = {name: go_default(expr) for name, expr in FLAG.findall(go_func(main, func))}
                self.assertTrue(flags, f"no flag found in main.go's {func}()")
                documented = {}
                for tag, body in entries.get(group, []):
                    for opt in OPTION.findall(tag):
                        documented[opt.lstrip("-")] = body
                klog = {"v", "help"} if func == "run" else set()
                self.assertEqual(sorted(set(documented) - klog), sorted(flags),
                                 f"accelfs-dra(8)'s OPTIONS ({group or 'the plugin'}) against main.go's {func}()")
                for name, default in flags.items():
                    if default:
                        self.assertIn(default, documented[name], f"--{name}'s default as main.go says")

    def test_metrics_are_those_metrics_go_writes(self):
        written = set(re.findall(r'write(?:Histogram|Counter)\(w, "(\w+)"', go_source("driver", "metrics.go")))
        self.assertTrue(written)
        documented = {tag for tag, _ in page_entries("accelfs-dra.8", "METRICS").get("", [])}
        self.assertEqual(sorted(documented), sorted(written), "accelfs-dra(8)'s METRICS against metrics.go")

    def test_every_taint_is_described(self):
        keys = re.findall(r'DriverName \+ "(/[a-z-]+)"', go_source("publish", "slices.go"))
        values = re.findall(r'evict\w+\s*=\s*"(\w+)"', go_source("driver", "heal.go"))
        self.assertTrue(keys and values)
        text = plain(re.search(r"(?ms)^\.SH \"?WHAT EACH CARD STATE.*?(?=^\.SH )", source("accelfs-dra.8")).group(0))
        for key in keys:
            self.assertIn("accelfs.io" + key, text, "a taint publish/slices.go sets")
        for value in values:
            self.assertIn(f"accelfs.io/unservable={value}", text, "a value of accelfs.io/unservable heal.go sets")


class Layout(unittest.TestCase):
    def test_no_tp_tag_runs_onto_the_next_line(self):
        """A .TP tag is one line: a tag left with an open bracket, or a body that starts by closing or
        continuing one, is a tag written over two lines (the second becomes the body)."""
        for page in sorted(p for p in os.listdir(MAN_SRC) if re.fullmatch(r".*\.[158]", p)):
            lines = source(page).splitlines()
            for i, line in enumerate(lines[:-2]):
                if line != ".TP":
                    continue
                tag, body = plain(lines[i + 1]), plain(lines[i + 2])
                with self.subTest(page=page, line=i + 2):
                    self.assertEqual(tag.count("["), tag.count("]"), f"{page}:{i + 2}: the tag {tag!r} is cut")
                    self.assertFalse(re.match(r"\.\w+ [\[\]]|\.IR \S+ \]", lines[i + 2]),
                                     f"{page}:{i + 3}: {body!r} continues the tag above it")


if __name__ == "__main__":
    unittest.main(verbosity=2)
