# SPDX-License-Identifier: MIT
"""What must hold inside one document, whenever it is read: node.json, metrics, a device's mig/map
and dies/slot are each drawn from one instant (docs/tree.md), so nothing in one of them may
contradict another part of it, however busy the node is.  Each check returns a list of problems,
sentences naming the document and what disagrees; an empty list is a consistent document."""
import json
import re

SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$")
LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')


def check_node_json(text):
    try:
        doc = json.loads(text)
    except ValueError as e:
        return [f"node.json does not parse: {e}"]
    problems = []
    avail = {}
    for dev in doc["devices"]:
        name = dev["name"]
        jobs = {j["name"]: j for j in dev["jobs"]}
        held = {i["job"]: i for i in dev["instances"] if i["job"]}
        for job, j in jobs.items():
            if j["state"] == "ready" and (job not in held or held[job]["gi"] != j["gi"]
                                          or held[job]["uuid"] != j["uuid"]):
                problems.append(f"node.json: {name}'s ready job {job} (gi {j['gi']}) has no instance of its own")
        for job in held:
            if job not in jobs:
                problems.append(f"node.json: {name}'s instance of {job} belongs to no job")
        for p in dev["profiles"]:
            avail[(name, p["name"])] = p["available"]
        # what the card takes (tree.md, What a card can take): one answer for every number here
        adm = dev["admits"]
        if adm["new_jobs"] != (adm["condition"] in ("ok", "degraded")) or (adm["why"] is None) != adm["new_jobs"]:
            problems.append(f"node.json: {name} admits {adm}")
        for p in dev["profiles"]:
            if p["available"] != (p["free"] if adm["new_jobs"] else 0):
                problems.append(f"node.json: {name}'s {p['name']} has {p['available']} available, {p['free']} free, "
                                f"and the card {'takes' if adm['new_jobs'] else 'takes no'} new jobs")
    for p in doc["mig"]["profiles"]:
        total = sum(avail.get((d, p["name"]), 0) for d in p["devices"])
        if p["available"] != total:
            problems.append(f"node.json: mig/{p['name']} has {p['available']} available, its devices {total}")
    dies = doc["dies"]
    if dies is None:
        return problems
    slot = dies["slot"]
    active = [d["die"] for d in dies["dies"] if d["active"]]
    if len(active) > 1:
        problems.append(f"node.json: dies {active} are all active at once")
    if slot["active"] != (active[0] if active else None):
        problems.append(f"node.json: the slot's active die is {slot['active']}, the dies' active {active}")
    if sum(d["acquires"] for d in dies["dies"]) != slot["swaps"]:
        problems.append(f"node.json: the dies were acquired {sum(d['acquires'] for d in dies['dies'])} times, "
                        f"the slot swapped {slot['swaps']}")
    if slot["holders"] and (slot["owner"] != "accelfs" or slot["active"] is None):
        problems.append(f"node.json: {slot['holders']} holders of a slot owned by {slot['owner']}, "
                        f"active {slot['active']}")
    return problems


def parse_metrics(text):
    """{(name, frozenset of (label, value)): value}"""
    out = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = SAMPLE.match(line)
        if not m:
            raise ValueError(f"metrics: not a sample: {line!r}")
        out[(m.group(1), frozenset(LABEL.findall(m.group(2) or "")))] = float(m.group(3))
    return out


def check_metrics(text):
    try:
        m = parse_metrics(text)
    except ValueError as e:
        return [str(e)]
    problems = []

    def of(name):
        return {dict(labels).get("device", dict(labels).get("die")): v for (n, labels), v in m.items() if n == name}

    def summed(name, key):
        out = {}
        for (n, labels), v in m.items():
            if n == name:
                k = dict(labels)[key]
                out[k] = out.get(k, 0) + v
        return out

    jobs, profile_jobs = summed("accelfs_jobs", "device"), summed("accelfs_profile_jobs", "device")
    for dev, enabled in of("accelfs_device_mig_enabled").items():
        if enabled and jobs.get(dev, 0) != profile_jobs.get(dev, 0):
            problems.append(f"metrics: {dev} has {jobs.get(dev, 0)} jobs by state, "
                            f"{profile_jobs.get(dev, 0)} by profile")
    swaps = m.get(("accelfs_dies_slot_swaps_total", frozenset()))
    if swaps is not None:
        acquires = sum(of("accelfs_die_acquires_total").values())
        if acquires != swaps:
            problems.append(f"metrics: the dies were acquired {acquires} times, the slot swapped {swaps}")
        holders = m[("accelfs_dies_slot_holders", frozenset())]
        if holders and m[("accelfs_dies_slot_active_die", frozenset())] < 0:
            problems.append(f"metrics: {holders} holders of an empty slot")
    return problems


def check_map(device, text):
    lines = text.splitlines()
    if not lines or not lines[0].startswith("slice "):
        return []  # the mode is disabled, or the card refused: the map says so in words
    row = lines[1].split()
    problems = []
    for line in lines[2:]:
        letter, _, rest = line.partition(" ")
        fields = dict(f.split("=", 1) for f in rest.split() if "=" in f)
        if letter in (".", "-") or "placement" not in fields:
            continue
        start, size = map(int, fields["placement"].split(":"))
        if row[start:start + size] != [letter] * size and "*" not in row[start:start + size]:
            problems.append(f"{device}/mig/map: {letter} ({fields['placement']}) is drawn as "
                            f"{' '.join(row[start:start + size])}")
        if row.count(letter) != size:
            problems.append(f"{device}/mig/map: {letter} holds {size} slices, the row shows {row.count(letter)}")
    return problems


def check_slot(text):
    keys, holders, waiters = {}, [], []
    for line in text.splitlines():
        key, _, value = line.partition(": ")
        if key == "holder":
            if value != "none":  # the one line of a slot nobody here holds
                holders.append(dict(f.split("=", 1) for f in value.split()))
        elif key == "waiter":
            waiters.append(dict(f.split("=", 1) for f in value.split()))
        else:
            keys[key] = value
    problems = []
    if int(keys["holders"]) != len(holders):
        problems.append(f"dies/slot: holders: {keys['holders']}, with {len(holders)} holder lines")
    if int(keys["waiters"]) != len(waiters):
        problems.append(f"dies/slot: waiters: {keys['waiters']}, with {len(waiters)} waiter lines")
    for h in holders:
        if h["die"] != keys["active"]:
            problems.append(f"dies/slot: a holder of die {h['die']} while die {keys['active']} is active")
    if holders and keys["owner"] != "accelfs":
        problems.append(f"dies/slot: {len(holders)} holders of a slot owned by {keys['owner']}")
    return problems

