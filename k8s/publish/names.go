// Package publish turns an accelfs node.json into what the scheduler sees:
// ResourceSlices of partitionable devices (one device per profile and legal
// placement, consuming the memory slices of its card's counter set) and
// DeviceClasses per profile.
package publish

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"

	"accelfs.io/k8s/accelfs"
)

// DriverName is the DRA driver's name, also the domain of its attributes.
const DriverName = "accelfs.io"

// dnsLabel lowercases s and turns every run of characters outside [a-z0-9]
// into one '-', trimmed at both ends: "4g.48gb" is "4g-48gb".
func dnsLabel(s string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(s) {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			dash = false
			b.WriteRune(r)
		} else {
			dash = true
		}
	}
	return b.String()
}

// fit cuts a name to n bytes, keeping it unique with a hash of the whole.
func fit(name string, n int) string {
	if len(name) <= n {
		return name
	}
	sum := sha256.Sum256([]byte(name))
	h := hex.EncodeToString(sum[:])[:10]
	return strings.TrimRight(name[:n-11], "-") + "-" + h
}

// CounterSetName is the card's counter set: its name as a DNS label.
func CounterSetName(card string) string { return fit(dnsLabel(card), 63) }

// CounterName names memory slice i of a card.
func CounterName(i int) string { return "slice-" + strconv.Itoa(i) }

// DeviceName is the device of a profile at one placement start of a card:
// "ppu3-4g-48gb-4" is 4g.48gb at slice 4 of ppu3. A DNS label.
func DeviceName(card, profile string, start int) string {
	return fit(dnsLabel(card)+"-"+dnsLabel(profile)+"-"+strconv.Itoa(start), 63)
}

// Placement is one (card, profile, legal placement) of the node, and the name
// of the device that stands for it.
type Placement struct {
	Device  string // the device name in the ResourceSlices
	Card    *accelfs.Device
	Profile *accelfs.Profile
	Span    accelfs.Span
}

// Placements lists every legal placement of every profile of every card with
// MIG on, in node.json's order (cards, their profiles, starts as listed).
// Two profiles whose names map to one device name (4g.48gb, 4g-48gb) keep
// distinct names: the later one is named after its profile id.
func Placements(node *accelfs.Node) []Placement {
	var out []Placement
	seen := map[string]bool{}
	for i := range node.Devices {
		card := &node.Devices[i]
		for p := range card.Profiles {
			prof := &card.Profiles[p]
			for _, pl := range prof.Placements {
				name := DeviceName(card.Name, prof.Name, pl.Start)
				if seen[name] {
					name = DeviceName(card.Name, "id"+strconv.Itoa(prof.ProfileID)+"-"+prof.Name, pl.Start)
				}
				seen[name] = true
				out = append(out, Placement{Device: name, Card: card, Profile: prof, Span: pl})
			}
		}
	}
	return out
}

// Lookup finds the placement a device name stands for on this node.
func Lookup(node *accelfs.Node, device string) (Placement, bool) {
	for _, p := range Placements(node) {
		if p.Device == device {
			return p, true
		}
	}
	return Placement{}, false
}
