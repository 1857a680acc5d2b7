# SPDX-License-Identifier: MIT
"""Fragmentation, for test 5 of docs/kubernetes.md: how many of the same jobs, in the same order, a
best-fit packer places on the same cards, against how many the scheduler placed.  Computed from the
profiles and legal placements of node.json alone (a card is its memory slices; a job takes one
legal placement of its profile whose slices are all free), as the plugin's counters model it.

Best fit, per job in arrival order: of every free legal placement on every card, the one that
leaves its card the fewest free slices; among those, the one that leaves the card the most legal
placements of any profile (the room for what comes next); then the first card, the lowest start.
"""


class Card:
    """A card's legal placements: {profile: [(start, size), ...]}, and its slice count."""

    def __init__(self, name, slices, placements):
        self.name, self.slices = name, slices
        self.placements = {p: [(s, n, ((1 << n) - 1) << s) for s, n in spans] for p, spans in placements.items()}
        # Cards of one layout in one state score alike: best_fit looks at the first of them only.
        self.layout = (slices, tuple(sorted((p, tuple(spans)) for p, spans in placements.items())))
        self._room = {}

    def room(self, taken):
        """How many legal placements of any profile are still free with `taken` (a slice mask)."""
        if taken not in self._room:
            self._room[taken] = sum(1 for spans in self.placements.values() for _, _, m in spans if not m & taken)
        return self._room[taken]

    def free(self, taken):
        return self.slices - bin(taken).count("1")


def cards_of(node_json, node_name=""):
    """The Cards of a node.json (cards with MIG on), named node/card."""
    out = []
    for d in node_json["devices"]:
        if not d["profiles"]:
            continue
        spans = {p["name"]: [(pl["start"], pl["size"]) for pl in p["placements"]] for p in d["profiles"]}
        slices = max((s + n for ps in spans.values() for s, n in ps), default=0)
        out.append(Card(f"{node_name}/{d['name']}" if node_name else d["name"], slices, spans))
    return out


def best_fit(cards, jobs):
    """Place jobs (profiles, in order) by best fit: [(card index, start) or None per job]."""
    taken = [0] * len(cards)
    out = []
    for profile in jobs:
        best, seen = None, set()
        for i, card in enumerate(cards):
            key = (card.layout, taken[i])
            if key in seen:
                continue  # an earlier card in the same state scores the same and wins the tie
            seen.add(key)
            for start, _, mask in card.placements.get(profile, ()):
                if mask & taken[i]:
                    continue
                after = taken[i] | mask
                score = (card.free(after), -card.room(after), i, start)
                if best is None or score < best[0]:
                    best = (score, i, start, mask)
        if best is None:
            out.append(None)
            continue
        _, i, start, mask = best
        taken[i] |= mask
        out.append((i, start))
    return out


def overlapping(spans):
    """Pairs of placements on one card that share a slice: [(a, b)] of (card, start, size) triples."""
    by_card = {}
    for card, start, size in spans:
        by_card.setdefault(card, []).append((start, size))
    out = []
    for card, ps in by_card.items():
        ps.sort()
        for (s1, n1), (s2, n2) in zip(ps, ps[1:]):
            if s2 < s1 + n1:
                out.append(((card, s1, n1), (card, s2, n2)))
    return out


def fragmentation(cards, jobs, placed):
    """{best_fit, placed, more, share}: the jobs best fit places, the scheduler's count, how many
    more best fit places, and that as a share of best fit's (0.03: 3 % fewer jobs placed)."""
    best = sum(1 for p in best_fit(cards, jobs) if p is not None)
    more = best - placed
    return {"best_fit": best, "placed": placed, "more": more, "share": more / best if best else 0.0}
