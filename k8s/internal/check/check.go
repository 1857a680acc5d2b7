// Package check holds the tests' verdict on a published pool: that what the
// scheduler can still allocate is what accelfs can still carve.
package check

import (
	"errors"
	"fmt"
	"sort"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/dynamic-resource-allocation/resourceslice"

	"accelfs.io/k8s/accelfs"
	"accelfs.io/k8s/publish"
)

// Counters compares the scheduler's view with accelfs's, card by card:
//   - the memory slices the pool's counters leave free (each counter's value
//     less what the allocated devices consume) are the slices no GPU
//     instance holds (the card's map);
//   - for each profile, the untainted devices that could be allocated one after
//     another (lowest start first, each taking its counters) are as many as
//     the profile's available.
//
// slices are the pool's ResourceSlices of one generation; allocated names the
// pool's devices that claims hold. Cards with a MIG mode change pending are
// left out (accelfs may still carve there; the plugin offers nothing).
func Counters(node *accelfs.Node, slices []resourceapi.ResourceSliceSpec, allocated map[string]bool) error {
	sets := map[string]map[string]int64{}
	devices := map[string]resourceapi.Device{}
	for _, s := range slices {
		for _, cs := range s.SharedCounters {
			sets[cs.Name] = map[string]int64{}
			for name, c := range cs.Counters {
				sets[cs.Name][name] = c.Value.Value()
			}
		}
		for _, d := range s.Devices {
			devices[d.Name] = d
		}
	}
	free := map[string]map[string]int64{}
	for set, counters := range sets {
		free[set] = map[string]int64{}
		for name, v := range counters {
			free[set][name] = v
		}
	}
	for name := range allocated {
		d, ok := devices[name]
		if !ok {
			continue // withdrawn: it consumes nothing in the scheduler's view
		}
		take(free, d)
	}

	var errs []error
	byCard := map[string][]publish.Placement{}
	for _, p := range publish.Placements(node) {
		byCard[p.Card.Name] = append(byCard[p.Card.Name], p)
	}
	for i := range node.Devices {
		card := &node.Devices[i]
		if card.Slices() == 0 || !card.MigEnabled() {
			continue
		}
		set, ok := free[publish.CounterSetName(card.Name)]
		if !ok {
			errs = append(errs, fmt.Errorf("%s: no counter set published", card.Name))
			continue
		}
		accel := card.Free()
		for s, f := range accel {
			got := set[publish.CounterName(s)] > 0
			if got != f {
				errs = append(errs, fmt.Errorf("%s: slice %d is %s to the scheduler but %s in accelfs", card.Name, s, word(got), word(f)))
			}
		}
		for _, prof := range card.Profiles {
			var offered []resourceapi.Device
			for _, p := range byCard[card.Name] {
				if d, ok := devices[p.Device]; ok && p.Profile.Name == prof.Name && !allocated[p.Device] && !tainted(d) {
					offered = append(offered, d)
				}
			}
			sort.SliceStable(offered, func(a, b int) bool { return start(offered[a]) < start(offered[b]) })
			left := map[string]map[string]int64{publish.CounterSetName(card.Name): clone(set)}
			n := 0
			for _, d := range offered {
				if fits(left, d) {
					take(left, d)
					n++
				}
			}
			if n != prof.Available {
				errs = append(errs, fmt.Errorf("%s %s: the scheduler can allocate %d more, accelfs's available is %d", card.Name, prof.Name, n, prof.Available))
			}
		}
	}
	return errors.Join(errs...)
}

// tainted says whether a claim without a toleration cannot be allocated the
// device (a card that takes no new job: accelfs's available is 0 there).
func tainted(d resourceapi.Device) bool {
	for _, t := range d.Taints {
		if t.Effect == resourceapi.DeviceTaintEffectNoSchedule || t.Effect == resourceapi.DeviceTaintEffectNoExecute {
			return true
		}
	}
	return false
}

func word(free bool) string {
	if free {
		return "free"
	}
	return "taken"
}

func start(d resourceapi.Device) int64 {
	if a, ok := d.Attributes[publish.AttrPlacementStart]; ok && a.IntValue != nil {
		return *a.IntValue
	}
	return 0
}

func clone(m map[string]int64) map[string]int64 {
	out := make(map[string]int64, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func fits(free map[string]map[string]int64, d resourceapi.Device) bool {
	for _, c := range d.ConsumesCounters {
		for name, v := range c.Counters {
			if free[c.CounterSet][name] < v.Value.Value() {
				return false
			}
		}
	}
	return true
}

func take(free map[string]map[string]int64, d resourceapi.Device) {
	for _, c := range d.ConsumesCounters {
		for name, v := range c.Counters {
			if set, ok := free[c.CounterSet]; ok {
				set[name] -= v.Value.Value()
			}
		}
	}
}

// Specs turns what is handed to the ResourceSlice controller into slice
// specs (for unit tests that check what would be published, without an API
// server).
func Specs(pool resourceslice.Pool) []resourceapi.ResourceSliceSpec {
	out := make([]resourceapi.ResourceSliceSpec, len(pool.Slices))
	for i, s := range pool.Slices {
		out[i] = resourceapi.ResourceSliceSpec{Devices: s.Devices, SharedCounters: s.SharedCounters}
	}
	return out
}
