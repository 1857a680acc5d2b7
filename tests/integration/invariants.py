# SPDX-License-Identifier: MIT
"""What must hold between the driver and the tree, whatever happened before.

`invariants(node)` reads the hardware as the driver sees it (accel-smi's `mig -lgi`, `mig -lci`
and `-L`, per family) and the tree (every device's jobs, `mig/instances`, each profile's `info`
and `available`, the node-level view, the node-level CDI spec) and returns a list of violations,
each a sentence naming what disagrees.  An empty list is a consistent node:

- every GPU instance the driver has belongs to exactly one job whose status says so (same gi,
  profile id, placement, and MIG UUID when it has a compute instance), or is listed in
  `mig/instances` with `job=-` (unmanaged, orphan, subdivided);
- every `ready` job's GPU and compute instances exist in the driver with its identity; a `lost`
  job holds nothing; a `removing` job holds at most its own GPU instance;
- `mig/instances` lists exactly the driver's GPU instances, with the owning job's name;
- each profile's `available` is what the live instances leave free (the profile's legal
  placements from `info`, taken lowest start first while one overlaps no live instance and no
  placement already taken), 0 on a refused card; the node-level `available` is the sum;
- each profile's `placements/` lists exactly its legal starts; each `placements/<start>/status`
  says `taken` exactly when a live GPU instance overlaps it, with one `holder:` line per such
  instance (its gi and the job `mig/instances` names), and `placements/<start>/` lists exactly the
  profile's jobs at that placement, each with `device -> ../../../<job>`;
- job names are unique on the node, and the node-level `mig/<profile>/` lists exactly the jobs;
- the node-level CDI spec files (`STATE_DIR/cdi/accelfs-<tag>-<job>.json`) name exactly the `ready` jobs.

It runs accel-smi, whose driver calls count against armed faults: disarm before calling it.
It reads the tree without a lock, so it is meant for a node at rest; `settled()` waits for a
poller pass or two to bring a node to rest.
"""
import json
import os
import re
import time

FAMILIES = ("ppu", "gpu")
DEVICE_RE = re.compile(r"^(ppu|gpu)(\d+)$")

# | 3    MIG 4g48gb              5        0         0:4     |
GI_ROW = re.compile(r"^\|\s*(\d+)\s+(.*?)\s+(\d+)\s+(\d+)\s+(\d+):(\d+)\s*\|$")
# | 3       0      MIG 32u.4g48gb          2        0         0:4     |
CI_ROW = re.compile(r"^\|\s*(\d+)\s+(\d+)\s+(.*?)\s+(\d+)\s+(\d+)\s+(\d+):(\d+)\s*\|$")
CARD_ROW = re.compile(r"^(PPU|GPU) (\d+): ")
MIG_ROW = re.compile(r"^\s+MIG .*\(UUID: (MIG-[0-9a-fA-F-]+)\)\s*$")
THEAD_MIG_ROW = re.compile(r"^\s+MIG g(\d+)\.c(\d+)\.i\d+, Device \d+ \(UUID: (MIG-[0-9a-fA-F-]+)\)\s*$")
FIELD = re.compile(r'(\w+)=("(?:[^"\\]|\\.)*"|\S+)')


class DriverUnreadable(Exception):
    pass


# ---- the driver's view ---------------------------------------------------------

def _smi(node, family, *args):
    res = node.smi(family, *args, check=False)
    out = res.stdout + res.stderr
    if res.returncode == 6 or "No devices were found" in out:
        return None
    if res.returncode != 0:
        raise DriverUnreadable(f"accel-smi -f {family} {' '.join(map(str, args))} failed "
                               f"({res.returncode}): {out.strip()}")
    return res.stdout


def driver_view(node, families=FAMILIES, attempts=5):
    """{device name: {gi: {"gi", "profile_id", "name", "placement": (start, size),
    "cis": {ci: {"profile_id", "placement"}}, "uuids": {ci: uuid}}}} from accel-smi.  Three
    listings make one view: one that changed between them (the poller reclaiming an orphan) is
    read again, `attempts` times in all."""
    for attempt in range(attempts):
        try:
            return _driver_view_once(node, families)
        except DriverUnreadable:
            if attempt == attempts - 1:
                raise
            time.sleep(0.1)


def _driver_view_once(node, families):
    view = {}
    for fam in families:
        lgi = _smi(node, fam, "mig", "-lgi")
        if lgi is None:
            continue
        for line in lgi.splitlines():
            m = GI_ROW.match(line)
            if not m:
                continue
            dev = f"{fam}{m.group(1)}"
            gi = int(m.group(4))
            view.setdefault(dev, {})[gi] = {
                "gi": gi, "name": m.group(2), "profile_id": int(m.group(3)),
                "placement": (int(m.group(5)), int(m.group(6))), "cis": {}, "uuids": {}}
        lci = _smi(node, fam, "mig", "-lci") or ""
        for line in lci.splitlines():
            m = CI_ROW.match(line)
            if not m:
                continue
            dev, gi, ci = f"{fam}{m.group(1)}", int(m.group(2)), int(m.group(5))
            gis = view.setdefault(dev, {})
            if gi not in gis:
                raise DriverUnreadable(f"{dev}: accel-smi -lci lists compute instance {ci} of GPU instance {gi}, "
                                       f"which -lgi does not list (the driver changed between the two reads?)")
            gis[gi]["cis"][ci] = {"profile_id": int(m.group(4)), "placement": (int(m.group(6)), int(m.group(7)))}
        listing = _smi(node, fam, "-L") or ""
        dev, migs = None, {}
        for line in listing.splitlines():
            m = CARD_ROW.match(line)
            if m:
                dev = f"{fam}{m.group(2)}"
                migs[dev] = []
                continue
            m = THEAD_MIG_ROW.match(line)
            if m and dev:
                migs[dev].append((int(m.group(1)), int(m.group(2)), m.group(3)))
                continue
            m = MIG_ROW.match(line)
            if m and dev:
                migs[dev].append((None, None, m.group(1)))
        # MIG devices are enumerated densely in (GI id, CI id) order: the k-th is the k-th compute instance.
        for dev, devices in migs.items():
            cis = sorted((gi, ci) for gi, g in view.get(dev, {}).items() for ci in g["cis"])
            if len(cis) != len(devices):
                raise DriverUnreadable(f"{dev}: {len(devices)} MIG devices in -L but {len(cis)} compute instances "
                                       f"in -lci (the driver changed between the two reads?)")
            for (gi, ci), (mgi, mci, uuid) in zip(cis, devices):
                if mgi is not None and (mgi, mci) != (gi, ci):
                    raise DriverUnreadable(f"{dev}: -L names MIG device g{mgi}.c{mci} where -lci has g{gi}.c{ci}")
                view[dev][gi]["uuids"][ci] = uuid
    return view


# ---- the tree ------------------------------------------------------------------

def parse_placements(text):
    """'{0,4}:4' or '{0}:4,{4}:2' -> [(0, 4), (4, 4)]."""
    text = text.strip()
    out = []
    if not text:
        return out
    m = re.fullmatch(r"\{([\d,]*)\}:(\d+)", text)
    if m:
        return [(int(s), int(m.group(2))) for s in m.group(1).split(",") if s]
    for part in re.findall(r"\{(\d+)\}:(\d+)", text):
        out.append((int(part[0]), int(part[1])))
    return out


def parse_span(text):
    start, _, size = text.partition(":")
    return int(start), int(size)


def keyvals(text):
    out = {}
    for line in text.splitlines():
        key, _, value = line.partition(":")
        out.setdefault(key.strip(), value.strip())
    return out


def parse_instances(text):
    lines = []
    for line in text.splitlines():
        fields = {k: (v[1:-1] if v.startswith('"') else v) for k, v in FIELD.findall(line)}
        fields["_line"] = line
        lines.append(fields)
    return lines


def overlaps(a, b):
    return a[0] < b[0] + b[1] and b[0] < a[0] + a[1]


def greedy_available(placements, used):
    """How many of `placements` can be carved one after another against `used` (lowest start first)."""
    taken = list(used)
    count = 0
    while True:
        free = [p for p in placements if p[1] and not any(overlaps(p, u) for u in taken)]
        if not free:
            return count
        taken.append(min(free))
        count += 1


def _read(node, problems, *parts):
    try:
        return node.read(*parts)
    except OSError as e:
        problems.append(f"cannot read {'/'.join(parts)}: {os.strerror(e.errno)}")
        return None


def placement_view(node, problems, dev, prof):
    """{start: {"status": text or None, "jobs": {job: device link}}} of <dev>/mig/<prof>/placements/."""
    base = (dev, "mig", prof, "placements")
    out = {}
    try:
        starts = sorted(os.listdir(node.path(*base)))
    except OSError as e:
        problems.append(f"cannot list {'/'.join(base)}: {os.strerror(e.errno)}")
        return out
    for start in starts:
        entry = {"status": _read(node, problems, *base, start, "status"), "jobs": {}}
        try:
            names = sorted(e for e in os.listdir(node.path(*base, start))
                           if e != "status" and os.path.isdir(node.path(*base, start, e)))
        except OSError as e:
            problems.append(f"cannot list {'/'.join(base)}/{start}: {os.strerror(e.errno)}")
            names = []
        for job in names:
            try:
                entry["jobs"][job] = os.readlink(node.path(*base, start, job, "device"))
            except OSError as e:
                entry["jobs"][job] = f"<{os.strerror(e.errno)}>"
        out[start] = entry
    return out


def placement_problems(dev, prof, p, live, lines, refused):
    """The placement view of one profile against its legal placements, the driver and its jobs."""
    problems = []
    where = f"{dev}/mig/{prof}/placements"
    legal = {str(start): (start, size) for start, size in p["placements"]}
    if set(p["places"]) != set(legal):
        problems.append(f"{where}/ lists {sorted(p['places'])}, the legal starts are {sorted(legal)}")
    for start, entry in sorted(p["places"].items()):
        span = legal.get(start)
        if span is None or entry["status"] is None:
            continue
        status = [line.partition(": ") for line in entry["status"].splitlines()]
        first = {k: v for k, _, v in reversed(status)}
        holders = {}
        for k, _, v in status:
            if k == "holder":
                f = dict(FIELD.findall(v))
                holders[int(f.get("gi", "-1"))] = f
        if first.get("placement") != f"{span[0]}:{span[1]}":
            problems.append(f"{where}/{start}/status says placement {first.get('placement')!r}, not {span[0]}:{span[1]}")
        if not refused:
            over = {gi for gi, g in live.items() if overlaps(g["placement"], span)}
            state = "taken" if over else "free"
            if first.get("state") != state:
                problems.append(f"{where}/{start}/status says {first.get('state')!r}; the driver's GPU instances "
                                f"{sorted(over)} make it {state}")
            if set(holders) != over:
                problems.append(f"{where}/{start}/status names holders {sorted(holders)}, the driver's overlapping "
                                f"GPU instances are {sorted(over)}")
            for gi, f in holders.items():
                listed = lines.get(gi, {}).get("job", "-")
                if gi in lines and f.get("job") != listed:
                    problems.append(f"{where}/{start}/status says GPU instance {gi} is job={f.get('job')}, "
                                    f"{dev}/mig/instances says job={listed}")
        want = {job for job, st in p["jobs"].items() if st.get("placement") == f"{span[0]}:{span[1]}"}
        if set(entry["jobs"]) != want:
            problems.append(f"{where}/{start}/ lists the jobs {sorted(entry['jobs'])}, the profile's jobs there are "
                            f"{sorted(want)}")
        for job, link in entry["jobs"].items():
            if link != f"../../../{job}":
                problems.append(f"{where}/{start}/{job}/device -> {link}, expected ../../../{job}")
    return problems


def tree_view(node, problems):
    """The tree as a dict: {"devices": {dev: {...}}, "node_profiles": {profile: {...}}}."""
    tree = {"devices": {}, "node_profiles": {}}
    try:
        names = sorted(e for e in os.listdir(node.mnt) if DEVICE_RE.match(e))
    except OSError as e:
        problems.append(f"cannot list the mount: {os.strerror(e.errno)}")
        return tree
    for dev in names:
        d = {"state": "?", "instances": [], "profiles": {}}
        info = _read(node, problems, dev, "info")
        if info is not None:
            d["state"] = keyvals(info).get("state", "?")
        inst = _read(node, problems, dev, "mig", "instances")
        if inst is not None:
            d["instances"] = parse_instances(inst)
        try:
            entries = sorted(os.listdir(node.path(dev, "mig")))
        except OSError as e:
            problems.append(f"cannot list {dev}/mig: {os.strerror(e.errno)}")
            entries = []
        for prof in entries:
            if prof in ("mode", "instances") or not os.path.isdir(node.path(dev, "mig", prof)):
                continue
            p = {"placements": [], "available": None, "jobs": {}, "places": {}}
            text = _read(node, problems, dev, "mig", prof, "info")
            if text is not None:
                p["placements"] = parse_placements(keyvals(text).get("placements", ""))
            text = _read(node, problems, dev, "mig", prof, "available")
            if text is not None:
                try:
                    p["available"] = int(text)
                except ValueError:
                    problems.append(f"{dev}/mig/{prof}/available is not a number: {text!r}")
            try:
                jobs = sorted(e for e in os.listdir(node.path(dev, "mig", prof))
                              if e != "placements" and os.path.isdir(node.path(dev, "mig", prof, e)))
            except OSError as e:
                problems.append(f"cannot list {dev}/mig/{prof}: {os.strerror(e.errno)}")
                jobs = []
            for job in jobs:
                text = _read(node, problems, dev, "mig", prof, job, "status")
                if text is not None:
                    p["jobs"][job] = keyvals(text)
            p["places"] = placement_view(node, problems, dev, prof)
            d["profiles"][prof] = p
        tree["devices"][dev] = d
    try:
        profs = sorted(os.listdir(node.path("mig")))
    except OSError as e:
        problems.append(f"cannot list mig/: {os.strerror(e.errno)}")
        profs = []
    for prof in profs:
        if not os.path.isdir(node.path("mig", prof)):
            continue
        p = {"available": None, "jobs": {}}
        text = _read(node, problems, "mig", prof, "available")
        if text is not None:
            try:
                p["available"] = int(text)
            except ValueError:
                problems.append(f"mig/{prof}/available is not a number: {text!r}")
        try:
            jobs = sorted(e for e in os.listdir(node.path("mig", prof)) if os.path.isdir(node.path("mig", prof, e)))
        except OSError as e:
            problems.append(f"cannot list mig/{prof}: {os.strerror(e.errno)}")
            jobs = []
        for job in jobs:
            try:
                p["jobs"][job] = os.readlink(node.path("mig", prof, job, "device"))
            except OSError as e:
                p["jobs"][job] = f"<{os.strerror(e.errno)}>"
        tree["node_profiles"][prof] = p
    return tree


def cdi_names(node, problems):
    """The device names in the node-level CDI spec files (one file per job); an empty set when there is none."""
    names = set()
    try:
        files = node.cdi_files()
    except OSError as e:
        problems.append(f"cannot list the CDI directory {node.cdi_dir()}: {os.strerror(e.errno)}")
        return None
    for job, path in sorted(files.items()):
        try:
            with open(path) as f:
                text = f.read()
        except FileNotFoundError:
            continue  # removed since the listing
        except OSError as e:
            problems.append(f"cannot read the CDI spec {path}: {os.strerror(e.errno)}")
            return None
        try:
            spec = json.loads(text)
        except ValueError as e:
            problems.append(f"the CDI spec {path} is not JSON ({e}): {text[:200]!r}")
            return None
        if spec.get("kind") != "accelfs.io/mig":
            problems.append(f"the CDI spec {path} has kind {spec.get('kind')!r}, not accelfs.io/mig")
        devices = [d.get("name") for d in spec.get("devices", [])]
        if devices != [job]:
            problems.append(f"the CDI spec {path} names {devices}, not the one job of its file name")
        names.update(devices)
    return names


# ---- the checks ----------------------------------------------------------------

def invariants(node, families=None, allow_refused=False, drv=None):
    """Every way the driver, the tree and the CDI spec disagree, as sentences ([] when consistent).
    families: the driver families to read (default: every family the tree shows); devices of other
    families are then held only to the checks that need no driver.  A refused card is a violation
    unless allow_refused (its view is then its last known one).  drv: a driver_view() just read, to
    save reading it again."""
    problems = []
    tree = tree_view(node, problems)
    devs = tree["devices"]
    if families is None:
        families = sorted({DEVICE_RE.match(d).group(1) for d in devs}) or list(FAMILIES)
    try:
        if drv is None:
            drv = driver_view(node, families)
    except DriverUnreadable as e:
        return problems + [f"driver view unreadable: {e}"]

    for dev in sorted(set(drv) - set(devs)):
        if drv[dev]:
            problems.append(f"{dev}: the driver has GPU instances {sorted(drv[dev])} on a device the tree does not show")

    all_jobs = {}  # name -> [(dev, profile, status)]
    for dev, d in devs.items():
        for prof, p in d["profiles"].items():
            for job, st in p["jobs"].items():
                all_jobs.setdefault(job, []).append((dev, prof, st))

    for dev, d in sorted(devs.items()):
        if DEVICE_RE.match(dev).group(1) not in families:
            continue  # its driver was not read
        live = drv.get(dev, {})
        refused = d["state"] != "ok"
        if refused and not allow_refused:
            problems.append(f"{dev}: card state is '{d['state']}' (expected ok)")
        jobs = [(prof, job, st) for prof, p in d["profiles"].items() for job, st in p["jobs"].items()]

        # every job's status, against the driver
        claims = {}  # gi -> [job]
        for prof, job, st in jobs:
            where = f"{dev}/mig/{prof}/{job}"
            state = st.get("state", "?")
            if st.get("device") != dev:
                problems.append(f"{where}: status says device {st.get('device')!r}")
            if st.get("profile") != prof:
                problems.append(f"{where}: status says profile {st.get('profile')!r}")
            try:
                gi, ci = int(st["gi"]), int(st["ci"])
                span, pid = parse_span(st["placement"]), int(st["profile_id"])
            except (KeyError, ValueError):
                problems.append(f"{where}: status is incomplete: {st}")
                continue
            uuid = st.get("uuid", "")
            g = live.get(gi)
            if state == "ready":
                claims.setdefault(gi, []).append(job)
                if g is None:
                    problems.append(f"{where}: ready, but the driver has no GPU instance {gi} on {dev}")
                    continue
                if g["placement"] != span or g["profile_id"] != pid:
                    problems.append(f"{where}: ready with gi={gi} placement={span[0]}:{span[1]} profile_id={pid}, "
                                    f"but the driver's GPU instance {gi} is placement="
                                    f"{g['placement'][0]}:{g['placement'][1]} profile_id={g['profile_id']}")
                if ci not in g["cis"]:
                    problems.append(f"{where}: ready, but GPU instance {gi} has no compute instance {ci} "
                                    f"(it has {sorted(g['cis'])})")
                elif g["uuids"].get(ci) != uuid:
                    problems.append(f"{where}: ready with uuid {uuid}, but the driver's g{gi}.c{ci} is "
                                    f"{g['uuids'].get(ci)}")
            elif state == "removing":
                if g is not None and g["placement"] == span and g["profile_id"] == pid and \
                        (not g["cis"] or uuid in g["uuids"].values()):
                    claims.setdefault(gi, []).append(job)
                elif g is not None and uuid in g["uuids"].values():
                    problems.append(f"{where}: removing, its uuid is on GPU instance {gi} but placement/profile differ")
            elif state == "lost":
                for lg, lgv in live.items():
                    if uuid and uuid in lgv["uuids"].values():
                        problems.append(f"{where}: lost, yet the driver's GPU instance {lg} carries its uuid {uuid}")
                if "reason" not in st or not st["reason"]:
                    problems.append(f"{where}: lost without a reason")
            else:
                problems.append(f"{where}: unknown state {state!r}")

        # every GPU instance of the driver, against the jobs and mig/instances
        lines = {}
        for fields in d["instances"]:
            try:
                gi = int(fields["gi"])
            except (KeyError, ValueError):
                problems.append(f"{dev}/mig/instances: unparsable line {fields['_line']!r}")
                continue
            if gi in lines:
                problems.append(f"{dev}/mig/instances: GPU instance {gi} listed twice")
            lines[gi] = fields
        for gi, g in sorted(live.items()):
            owners = claims.get(gi, [])
            line = lines.get(gi)
            desc = f"{dev}: the driver's GPU instance {gi} ({g['name']} at {g['placement'][0]}:{g['placement'][1]})"
            if len(owners) > 1:
                problems.append(f"{desc} is owned by several jobs: {sorted(owners)}")
            if line is None:
                problems.append(f"{desc} is not listed in {dev}/mig/instances")
                if not owners:
                    problems.append(f"{desc} belongs to no job and is not listed as unmanaged/orphan")
                continue
            if line.get("placement") != f"{g['placement'][0]}:{g['placement'][1]}" or \
                    line.get("profile_id") != str(g["profile_id"]):
                problems.append(f"{dev}/mig/instances says {line['_line']!r}, the driver says {desc}")
            if g["uuids"] and line.get("uuid") not in g["uuids"].values():
                problems.append(f"{dev}/mig/instances says uuid={line.get('uuid')} for GPU instance {gi}, "
                                f"the driver says {sorted(g['uuids'].values())}")
            listed = line.get("job", "-")
            if owners:
                if listed not in owners:
                    problems.append(f"{desc} belongs to job {owners[0]} but {dev}/mig/instances says job={listed}")
            elif listed != "-":
                problems.append(f"{desc}: {dev}/mig/instances says job={listed}, but no job of {dev} in state "
                                f"ready/removing claims it")
        if not refused:
            for gi, line in sorted(lines.items()):
                if gi not in live:
                    problems.append(f"{dev}/mig/instances lists GPU instance {gi}, which the driver does not have: "
                                    f"{line['_line']!r}")

        # available, from the profile's placements and the live instances
        used = [g["placement"] for g in live.values()]
        for prof, p in sorted(d["profiles"].items()):
            want = 0 if refused else greedy_available(p["placements"], used)
            if p["available"] is not None and p["available"] != want:
                problems.append(f"{dev}/mig/{prof}/available says {p['available']}, the live instances "
                                f"{sorted(used)} leave {want} of {p['placements']}")
            problems += placement_problems(dev, prof, p, live, lines, refused)

    # names are unique on the node; the node-level view lists exactly the jobs
    for job, where in sorted(all_jobs.items()):
        if len(where) > 1:
            problems.append(f"job name {job} exists more than once: {[f'{d}/{p}' for d, p, _ in where]}")
    for prof, p in sorted(tree["node_profiles"].items()):
        want = {j for j, where in all_jobs.items() for (_, wp, _) in where if wp == prof}
        have = set(p["jobs"])
        if want - have:
            problems.append(f"mig/{prof}/ lacks the jobs {sorted(want - have)}")
        if have - want:
            problems.append(f"mig/{prof}/ lists jobs that no device has: {sorted(have - want)}")
        for job, link in p["jobs"].items():
            for dev, wp, _ in all_jobs.get(job, []):
                if wp == prof and link != f"../../../{dev}/mig/{prof}/{job}":
                    problems.append(f"mig/{prof}/{job}/device -> {link}, expected ../../../{dev}/mig/{prof}/{job}")
        offering = [d for d in devs.values() if prof in d["profiles"]]
        if p["available"] is not None and all(d["profiles"][prof]["available"] is not None for d in offering):
            total = sum(d["profiles"][prof]["available"] for d in offering)
            if p["available"] != total:
                problems.append(f"mig/{prof}/available says {p['available']}, the devices' sum is {total}")
    for dev, d in devs.items():
        for prof, p in d["profiles"].items():
            if p["jobs"] and prof not in tree["node_profiles"]:
                problems.append(f"{dev}/mig/{prof} has jobs but there is no node-level mig/{prof}/")

    # the node-level CDI spec names exactly the ready jobs (unless the daemon said it writes none:
    # without its container hook installed, fs/main.c)
    names = None if "no CDI spec is written" in node.log() else cdi_names(node, problems)
    if names is not None:
        ready = {j for j, where in all_jobs.items() for (_, _, st) in where if st.get("state") == "ready"}
        if ready - names:
            problems.append(f"the node-level CDI spec lacks the ready jobs {sorted(ready - names)}")
        if names - ready:
            problems.append(f"the node-level CDI spec names {sorted(names - ready)}, which are not ready jobs")
    return problems


def settled(node, timeout=5.0, step=0.2, **kw):
    """invariants() once they hold, or the last violations after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        problems = invariants(node, **kw)
        if not problems or time.monotonic() > deadline:
            return problems
        time.sleep(step)


def unowned(node, families=None, drv=None):
    """The driver's GPU instances no job claims (by device): orphans, hand-made, left behind."""
    problems = []
    tree = tree_view(node, problems)
    if families is None:
        families = sorted({DEVICE_RE.match(d).group(1) for d in tree["devices"]}) or list(FAMILIES)
    if drv is None:
        drv = driver_view(node, families)
    out = {}
    for dev, gis in drv.items():
        claimed = set()
        for p in tree["devices"].get(dev, {}).get("profiles", {}).values():
            for st in p["jobs"].values():
                if st.get("state") in ("ready", "removing") and st.get("gi", "").isdigit():
                    claimed.add(int(st["gi"]))
        free = sorted(gi for gi in gis if gi not in claimed)
        if free:
            out[dev] = free
    return out


def format_problems(problems):
    return "\n  ".join(["invariants violated:"] + problems) if problems else "invariants hold"
