# SPDX-License-Identifier: MIT
"""What test_service.py holds the service's files to: node.json against the
individual files field by field, mig/map against mig/instances, and the
metrics parsed (and passed through promtool)."""
import errno
import json
import os
import re
import subprocess

DEVICE_RE = re.compile(r"^(ppu|gpu)\d+$")
PROMTOOL = os.environ.get("PROMTOOL", "promtool")


def promtool_check(text):
    """'' when `promtool check metrics` accepts the text; else what it said."""
    res = subprocess.run([PROMTOOL, "check", "metrics"], input=text, capture_output=True, text=True, timeout=60)
    said = (res.stdout + res.stderr).strip()
    return said if res.returncode or said else ""


def parse_metrics(text):
    """{(name, ((label, value), ...)): number}, labels sorted by name."""
    out = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = re.match(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$', line)
        if not m:
            raise AssertionError(f"not a sample line: {line!r}")
        labels = tuple(sorted(re.findall(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"', m.group(2) or "")))
        value = float(m.group(3))
        out[(m.group(1), labels)] = int(value) if value.is_integer() else value
    return out


def metrics_of(node):
    return parse_metrics(node.read("metrics"))


def info_of(node, *parts):
    """A key: value file as a dict, and its repeated 'node' lines as a list."""
    keys, nodes = {}, []
    for line in node.read(*parts).splitlines():
        key, _, value = line.partition(": ")
        if key == "node":
            nodes.append(value)
        else:
            keys[key] = value
    return keys, nodes


def parse_placements(text):
    """'{0,4}:4' or '{0}:8,{2}:2' -> [(0, 4), (4, 4)] sorted."""
    out = []
    for starts, size in re.findall(r"\{([\d,]+)\}:(\d+)", text):
        out += [(int(s), int(size)) for s in starts.split(",")]
    return sorted(out)


def node_line(n):
    return f"{n['path']} c {n['major']}:{n['minor']}"


def instance_line(i):
    ci = ",".join(str(c) for c in i["ci"]) or "-"
    p = i["placement"]
    line = (f"gi={i['gi']} ci={ci} profile={i['profile']} profile_id={i['profile_id']} "
            f"placement={p['start']}:{p['size']} uuid={i['uuid'] or '-'} job={i['job'] or '-'}")
    return line + (f' note="{i["note"]}"' if i["note"] else "")


def same(problems, where, json_value, file_value):
    if json_value != file_value:
        problems.append(f"{where}: node.json says {json_value!r}, the file {file_value!r}")


def check_device(node, d, problems):
    dev = d["name"]
    info, nodes = info_of(node, dev, "info")
    for key in ("name", "vendor", "product", "uuid", "bus_id", "mig_mode", "driver_library", "pci_driver"):
        same(problems, f"{dev} info {key}", d[key], info.get(key))
    same(problems, f"{dev} info memory_mib", d["memory_mib"], int(info["memory_mib"]) if "memory_mib" in info else None)
    same(problems, f"{dev} info syspath", d["syspath"], info.get("syspath"))
    number = "ordinal" if "ordinal" in info else "index"
    same(problems, f"{dev} info {number}", d.get(number), int(info[number].split()[0]))
    same(problems, f"{dev} info minor", d["minor"], int(info["minor"]))
    state = "ok" if d["state"] == "ok" else f"refused: {d['refusal']}"
    same(problems, f"{dev} info state", state, info["state"])
    same(problems, f"{dev} info node", [node_line(n) for n in d["nodes"]], nodes)
    mode = d["mig_mode"] + ("" if d["mig_pending"] == d["mig_mode"] else f" (pending: {d['mig_pending']})")
    same(problems, f"{dev}/mig/mode", mode, node.read(dev, "mig", "mode").rstrip("\n"))
    same(problems, f"{dev}/mig/instances", [instance_line(i) for i in d["instances"]],
         node.read(dev, "mig", "instances").splitlines())
    profs = sorted(p for p in os.listdir(node.path(dev, "mig")) if os.path.isdir(node.path(dev, "mig", p)))
    same(problems, f"{dev}/mig profiles", sorted(p["name"] for p in d["profiles"]), profs)
    jobs_in_tree = set()
    for p in d["profiles"]:
        where = f"{dev}/mig/{p['name']}"
        pinfo, _ = info_of(node, dev, "mig", p["name"], "info")
        for key in ("name", "driver_name", "driver_display_name", "profile_id", "memory_slices", "memory_mib",
                    "compute_slices", "multiprocessors", "copy_engines", "decoders", "encoders", "jpeg", "ofa",
                    "capacity"):
            same(problems, f"{where}/info {key}", str(p[key]), pinfo.get(key))
        same(problems, f"{where}/info placements", sorted((x["start"], x["size"]) for x in p["placements"]),
             parse_placements(pinfo["placements"]))
        same(problems, f"{where}/available", p["available"], node.available(dev, p["name"]))
        jobs_in_tree |= {j for j in os.listdir(node.path(dev, "mig", p["name"]))
                         if j != "placements" and os.path.isdir(node.path(dev, "mig", p["name"], j))}
    same(problems, f"{dev} jobs", sorted(j["name"] for j in d["jobs"]), sorted(jobs_in_tree))
    for j in d["jobs"]:
        check_job(node, d, j, problems)


def check_job(node, d, j, problems):
    parts = (d["name"], "mig", j["profile"], j["name"])
    where = "/".join(parts)
    status, _ = info_of(node, *parts, "status")
    p = j["placement"]
    for key, value in (("state", j["state"]), ("device", j["device"]), ("profile", j["profile"]),
                       ("profile_id", str(j["profile_id"])), ("gi", str(j["gi"])), ("ci", str(j["ci"])),
                       ("placement", f"{p['start']}:{p['size']}"), ("uuid", j["uuid"]),
                       ("owner", f"{j['owner']['uid']}:{j['owner']['gid']}"), ("created", j["created"]),
                       ("reason", j["reason"]), ("reclaim", j["reclaim"])):
        same(problems, f"{where}/status {key}", value, status.get(key))
    same(problems, f"{where}/reclaim", j["reclaim"], node.read(*parts, "reclaim").strip())
    same(problems, f"{where}/containers", [f"id={c['id']} pid={c['pid']} since={c['since']}" for c in j["containers"]],
         node.read(*parts, "containers").splitlines())
    if j["state"] == "ready":
        same(problems, f"{where}/devices", [node_line(n) for n in j["devices"]],
             node.read(*parts, "devices").splitlines())
    else:
        same(problems, f"{where}/devices (not ready)", j["devices"], None)
        same(problems, f"{where}/devices errno", errno.ENODEV, node.errno_of(node.read, *parts, "devices"))


def check_node_level(node, doc, problems):
    names = sorted(p for p in os.listdir(node.path("mig")) if os.path.isdir(node.path("mig", p)))
    same(problems, "mig/ profiles", sorted(p["name"] for p in doc["mig"]["profiles"]), names)
    for p in doc["mig"]["profiles"]:
        info, _ = info_of(node, "mig", p["name"], "info")
        same(problems, f"mig/{p['name']}/info devices", " ".join(p["devices"]), info["devices"])
        same(problems, f"mig/{p['name']}/available", p["available"], int(node.read("mig", p["name"], "available")))


def check_dies(node, doc, problems):
    if not os.path.isdir(node.path("dies")):
        same(problems, "dies", doc["dies"], None)
        return
    slot, _ = info_of(node, "dies", "slot")
    for key, value in doc["dies"]["slot"].items():
        if isinstance(value, list):  # the holder, waiter and slot_waiter lines
            same(problems, f"dies/slot {key} lines", len(value),
                 sum(1 for line in node.read("dies", "slot").splitlines()
                     if line.startswith(f"{key}: ") and line != f"{key}: none"))
            continue
        want = "none" if value is None else str(value)
        same(problems, f"dies/slot {key}", want, slot.get(key))
    dies = sorted(int(e) for e in os.listdir(node.path("dies")) if e.isdigit())
    same(problems, "dies/ entries", [x["die"] for x in doc["dies"]["dies"]], dies)
    for x in doc["dies"]["dies"]:
        info, _ = info_of(node, "dies", str(x["die"]), "info")
        for key in ("die", "bus_id", "vram_bytes", "acquires", "state", "driver", "policy"):
            same(problems, f"dies/{x['die']}/info {key}", str(x[key]), info.get(key))
        same(problems, f"dies/{x['die']}/info held_by", x["held_by"], info.get("held_by"))
        for key in ("enabled", "present", "active"):
            same(problems, f"dies/{x['die']}/info {key}", str(int(x[key])), info.get(key))
        same(problems, f"dies/{x['die']}/info pci_id", x["pci_id"] or "none (simulated)", info.get("pci_id"))
        same(problems, f"dies/{x['die']}/info bar_phys", x["bar_phys"],
             int(info["bar_phys"], 16) if "bar_phys" in info else None)


def quota_of(node):
    """The quota file as {principal: (by_default, {limit: (used, limit)})} and the default's {limit: n}."""
    rows, default = {}, None
    for line in node.read("quota").splitlines():
        if line.startswith("#"):
            continue
        words = line.split()
        if words[0] == "default":
            default = {k: int(v) for k, v in (w.split("=") for w in words[1:])}
            continue
        by_default = words[-1] == "(default)"
        limits = {}
        for w in words[1:len(words) - by_default]:
            k, v = w.split("=")
            used, lim = v.split("/")
            limits[k] = (int(used), int(lim))
        rows[words[0]] = (by_default, limits)
    return rows, default


def check_quota(node, doc, problems):
    rows, default = quota_of(node)
    same(problems, "quota default", doc["quota"]["default"], default)
    got = {p["principal"]: (p["default"], {k: (v["used"], v["limit"]) for k, v in p["limits"].items()})
           for p in doc["quota"]["principals"]}
    same(problems, "quota principals", got, rows)


def check_node_json(node, attempts=5):
    """Every field of node.json against its file; [] when they agree.  Read again when node.json's
    generation moved while the files were read (they were not of the same moment)."""
    for _ in range(attempts):
        doc = json.loads(node.read("node.json"))
        problems = []
        if doc["format"] != 1:
            problems.append(f"node.json format {doc['format']}")
        names = sorted(e for e in os.listdir(node.mnt) if DEVICE_RE.match(e))
        same(problems, "devices", sorted(d["name"] for d in doc["devices"]), names)
        for d in doc["devices"]:
            check_device(node, d, problems)
        check_node_level(node, doc, problems)
        check_dies(node, doc, problems)
        check_quota(node, doc, problems)
        if json.loads(node.read("node.json"))["generation"] == doc["generation"]:
            return problems
    return [f"the node changed during each of {attempts} comparisons"]


def check_map(node, dev):
    """mig/map against mig/instances and the jobs' status: [] when the drawing is right."""
    problems = []
    text = node.read(dev, "mig", "map").splitlines()
    if node.read(dev, "mig", "mode").startswith("disabled"):
        return [] if "MIG mode is disabled: no slices to draw" in text else [f"{dev}: {text}"]
    slices = len(text[0].split()) - 1
    row = text[1].split()
    if text[0].split()[1:] != [str(s) for s in range(slices)] or len(row) != slices:
        return [f"{dev}: the header and the row do not match: {text[:2]}"]
    legend = {}
    for line in text[2:]:
        m = re.match(r"^([A-Za-z]) job=(\S+) profile=(\S+) gi=(\d+) placement=(\d+):(\d+)", line)
        if m:
            legend[int(m.group(4))] = (m.group(1), m.group(2), m.group(3), int(m.group(5)), int(m.group(6)), line)
    used = set()
    instances = node.read(dev, "mig", "instances").splitlines()
    same(problems, f"{dev} map legend lines", len(legend), len(instances))
    for line in instances:
        f = dict(kv.split("=", 1) for kv in re.findall(r'(\w+=(?:"[^"]*"|\S+))', line))
        gi, (start, size) = int(f["gi"]), map(int, f["placement"].split(":"))
        if gi not in legend:
            problems.append(f"{dev}: GPU instance {gi} is not in the map")
            continue
        letter, job, profile, lstart, lsize, lline = legend[gi]
        same(problems, f"{dev} map gi {gi}", (job, profile, lstart, lsize), (f["job"], f["profile"], start, size))
        if (f["job"] == "-") != (" foreign" in lline):
            problems.append(f"{dev}: gi {gi} foreign in one, not the other: {lline!r} / {line!r}")
        for s in range(start, start + size):
            used.add(s)
            if row[s] != letter:
                problems.append(f"{dev}: slice {s} shows {row[s]!r}, gi {gi} is {letter!r}")
    free = [s for s in range(slices) if s not in used]
    same(problems, f"{dev} map free slices", free, [s for s in range(slices) if row[s] == "."])
    free_line = [line for line in text if line.startswith(". free=")]
    same(problems, f"{dev} map free count", [f"slices={len(free)}/{slices}"], [fl.split()[-1] for fl in free_line])
    return problems


def sanitizer_env(state, env_extra=None):
    """The environment with the sanitizers reporting into files under state (a daemon may have no stderr)."""
    env = dict(os.environ, **(env_extra or {}))
    env["ASAN_OPTIONS"] = f"log_path={state}/sanitizer:" + env.get("ASAN_OPTIONS", "")
    env["TSAN_OPTIONS"] = f"log_path={state}/sanitizer:" + env.get("TSAN_OPTIONS", "")
    env["UBSAN_OPTIONS"] = f"log_path={state}/sanitizer:print_stacktrace=1:" + env.get("UBSAN_OPTIONS", "")
    return env
