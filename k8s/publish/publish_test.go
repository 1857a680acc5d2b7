package publish_test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/dynamic-resource-allocation/resourceslice"

	"accelfs.io/k8s/accelfs"
	"accelfs.io/k8s/internal/check"
	"accelfs.io/k8s/publish"
)

const pool = "node-a"

func node(t *testing.T, name string) *accelfs.Node {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "accelfs", "testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	n, err := accelfs.ParseNode(data)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

var dnsLabelRE = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$`)
var cIdentRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,31}$`)

// valid checks the pool against the API's rules for ResourceSlices that the
// API server would otherwise refuse, and the 1.35+ shape: counter sets in
// counter-only slices, devices in others referencing them.
func valid(t *testing.T, p resourceslice.Pool) {
	t.Helper()
	sets := map[string]resourceapi.CounterSet{}
	for i, s := range p.Slices {
		if len(s.SharedCounters) > 0 && len(s.Devices) > 0 {
			t.Errorf("slice %d has both counters and devices", i)
		}
		if len(s.SharedCounters) > resourceapi.ResourceSliceMaxCounterSets {
			t.Errorf("slice %d: %d counter sets", i, len(s.SharedCounters))
		}
		if len(s.Devices) > resourceapi.ResourceSliceMaxDevicesWithAdvancedFeatures {
			t.Errorf("slice %d: %d devices", i, len(s.Devices))
		}
		for _, cs := range s.SharedCounters {
			if _, dup := sets[cs.Name]; dup || !dnsLabelRE.MatchString(cs.Name) {
				t.Errorf("counter set %q: duplicate or not a DNS label", cs.Name)
			}
			if len(cs.Counters) == 0 || len(cs.Counters) > resourceapi.ResourceSliceMaxCountersPerCounterSet {
				t.Errorf("counter set %q: %d counters", cs.Name, len(cs.Counters))
			}
			for name := range cs.Counters {
				if !dnsLabelRE.MatchString(name) {
					t.Errorf("counter %q is not a DNS label", name)
				}
			}
			sets[cs.Name] = cs
		}
	}
	names := map[string]bool{}
	for _, s := range p.Slices {
		for _, d := range s.Devices {
			if names[d.Name] || !dnsLabelRE.MatchString(d.Name) {
				t.Errorf("device %q: duplicate or not a DNS label", d.Name)
			}
			names[d.Name] = true
			if len(d.Attributes)+len(d.Capacity) > resourceapi.ResourceSliceMaxAttributesAndCapacitiesPerDevice {
				t.Errorf("device %q: too many attributes", d.Name)
			}
			for a, v := range d.Attributes {
				if !cIdentRE.MatchString(string(a)) {
					t.Errorf("device %q: attribute %q", d.Name, a)
				}
				if v.StringValue != nil && len(*v.StringValue) > resourceapi.DeviceAttributeMaxValueLength {
					t.Errorf("device %q: attribute %q too long", d.Name, a)
				}
			}
			if len(d.ConsumesCounters) != 1 {
				t.Errorf("device %q consumes %d counter sets", d.Name, len(d.ConsumesCounters))
				continue
			}
			c := d.ConsumesCounters[0]
			set, ok := sets[c.CounterSet]
			if !ok {
				t.Errorf("device %q: counter set %q not in the pool", d.Name, c.CounterSet)
			}
			for name := range c.Counters {
				if _, ok := set.Counters[name]; !ok {
					t.Errorf("device %q: counter %q not in set %q", d.Name, name, c.CounterSet)
				}
			}
		}
	}
}

func devices(p resourceslice.Pool) map[string]resourceapi.Device {
	out := map[string]resourceapi.Device{}
	for _, s := range p.Slices {
		for _, d := range s.Devices {
			out[d.Name] = d
		}
	}
	return out
}

func counterSets(p resourceslice.Pool) map[string]map[string]int64 {
	out := map[string]map[string]int64{}
	for _, s := range p.Slices {
		for _, cs := range s.SharedCounters {
			out[cs.Name] = map[string]int64{}
			for n, c := range cs.Counters {
				out[cs.Name][n] = c.Value.Value()
			}
		}
	}
	return out
}

// consumed lists the slices a device consumes, "0 1 2 3".
func consumed(d resourceapi.Device) string {
	var s []int
	for name := range d.ConsumesCounters[0].Counters {
		var i int
		fmt.Sscanf(name, "slice-%d", &i)
		s = append(s, i)
	}
	sort.Ints(s)
	return strings.Trim(fmt.Sprint(s), "[]")
}

// The built-in simulated node: 16 PPUs and an H200, nothing carved. Every
// placement of every profile is a device consuming exactly its slices.
func TestBuildDefaultNode(t *testing.T) {
	n := node(t, "node-default.json")
	res := publish.Build(n, publish.Options{PoolName: pool})
	p := res.Resources.Pools[pool]
	valid(t, p)
	// 17 counter sets in counter-only slices of at most 8, then 16 x 3 + 18 devices in slices of at most 64.
	var shape []string
	for _, s := range p.Slices {
		shape = append(shape, fmt.Sprintf("c%d/d%d", len(s.SharedCounters), len(s.Devices)))
	}
	if got := strings.Join(shape, " "); got != "c8/d0 c8/d0 c1/d0 c0/d64 c0/d2" {
		t.Fatalf("slices %s", got)
	}
	if res.Offered != 66 || res.Withheld != 0 || len(res.Notes) != 0 {
		t.Fatalf("offered %d withheld %d notes %v", res.Offered, res.Withheld, res.Notes)
	}
	devs := devices(p)
	want := map[string]string{ // device -> the slices it consumes
		"ppu0-4g-48gb-0":  "0 1 2 3",
		"ppu0-4g-48gb-4":  "4 5 6 7",
		"ppu15-8g-96gb-0": "0 1 2 3 4 5 6 7",
		"gpu0-1g-18gb-6":  "6",
		"gpu0-1g-35gb-6":  "6 7",
		"gpu0-2g-35gb-4":  "4 5",
		"gpu0-3g-71gb-4":  "4 5 6 7",
		"gpu0-4g-71gb-0":  "0 1 2 3",
		"gpu0-7g-141gb-0": "0 1 2 3 4 5 6 7",
	}
	for name, slices := range want {
		d, ok := devs[name]
		if !ok {
			t.Errorf("no device %s", name)
			continue
		}
		if got := consumed(d); got != slices {
			t.Errorf("%s consumes slices %s, want %s", name, got, slices)
		}
	}
	d := devs["gpu0-3g-71gb-4"]
	if c := d.ConsumesCounters[0].CounterSet; c != "gpu0" {
		t.Errorf("counter set %q", c)
	}
	str := func(a string) string { return *d.Attributes[resourceapi.QualifiedName(a)].StringValue }
	num := func(a string) int64 { return *d.Attributes[resourceapi.QualifiedName(a)].IntValue }
	if str(publish.AttrProfile) != "3g.71gb" || num(publish.AttrProfileID) != 9 || str(publish.AttrCard) != "gpu0" ||
		str(publish.AttrVendor) != "NVIDIA" || !strings.HasPrefix(str(publish.AttrCardUUID), "GPU-") ||
		num(publish.AttrPlacementStart) != 4 || num(publish.AttrPlacementSize) != 4 || num(publish.AttrCardIndex) != 0 {
		t.Errorf("attributes %v", d.Attributes)
	}
	if m := d.Capacity[publish.CapMemory].Value; m.String() != "71424Mi" {
		t.Errorf("memory %s", m.String())
	}
	for set, counters := range counterSets(p) {
		for name, v := range counters {
			if v != 1 {
				t.Errorf("%s/%s = %d on an empty node", set, name, v)
			}
		}
		if len(counters) != 8 {
			t.Errorf("%s has %d counters", set, len(counters))
		}
	}
	if err := check.Counters(n, check.Specs(p), nil); err != nil {
		t.Error(err)
	}
}

// A small node with everything that takes slices away: a job outside
// Kubernetes on ppu0 (slurm-42-0 at 0:4), a refused card (ppu1, subdivided
// by hand at 4:4), gpu0 with a notebook job (0:2), a job of a claim (2:1) and
// an instance made by hand (6:1), and gpu1 with MIG off.
func TestBuildSmallNode(t *testing.T) {
	n := node(t, "node-small.json")
	ownJob := "k8s-2f1c7a4e-9b3d-4c41-8e0a-6d5b3f9a1c27-0"

	for _, tc := range []struct {
		name      string
		accounted func(string) bool
		gpu0      []string // devices offered on gpu0
		gpu0Zero  string   // gpu0's counters at 0
	}{
		{
			// The claim is unknown here (gone, or not prepared): its job is like any other.
			name:     "no claim",
			gpu0:     []string{"1g-18gb-3", "1g-18gb-4", "1g-18gb-5", "1g-35gb-4", "2g-35gb-4"},
			gpu0Zero: "0 1 2 6",
		},
		{
			// The claim is prepared: its slice is consumed by its allocation, the
			// placements overlapping it alone stay offered.
			name:      "claim prepared",
			accounted: func(job string) bool { return job == ownJob },
			gpu0:      []string{"1g-18gb-2", "1g-18gb-3", "1g-18gb-4", "1g-18gb-5", "1g-35gb-2", "1g-35gb-4", "2g-35gb-2", "2g-35gb-4"},
			gpu0Zero:  "0 1 6",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := publish.Build(n, publish.Options{PoolName: pool, Accounted: tc.accounted})
			p := res.Resources.Pools[pool]
			valid(t, p)
			byCard := map[string][]string{}
			for name := range devices(p) {
				card, rest, _ := strings.Cut(name, "-")
				byCard[card] = append(byCard[card], rest)
			}
			for _, v := range byCard {
				sort.Strings(v)
			}
			if got := strings.Join(byCard["ppu0"], " "); got != "4g-48gb-4" {
				t.Errorf("ppu0 offers %s: slurm-42-0 holds 0:4", got)
			}
			if len(byCard["ppu1"]) != 0 || len(byCard["gpu1"]) != 0 {
				t.Errorf("a refused card (ppu1: %v) and a card with MIG off (gpu1: %v) offer nothing", byCard["ppu1"], byCard["gpu1"])
			}
			if got, want := strings.Join(byCard["gpu0"], " "), strings.Join(tc.gpu0, " "); got != want {
				t.Errorf("gpu0 offers %s, want %s", got, want)
			}
			sets := counterSets(p)
			if _, ok := sets["gpu1"]; ok {
				t.Error("gpu1 (MIG off) has a counter set")
			}
			zero := func(set string) string {
				var z []int
				for i := 0; i < 8; i++ {
					if sets[set][publish.CounterName(i)] == 0 {
						z = append(z, i)
					}
				}
				return strings.Trim(fmt.Sprint(z), "[]")
			}
			if got := zero("gpu0"); got != tc.gpu0Zero {
				t.Errorf("gpu0's counters at 0: %s, want %s", got, tc.gpu0Zero)
			}
			if zero("ppu0") != "0 1 2 3" || zero("ppu1") != "4 5 6 7" {
				t.Errorf("ppu0 zero at %s, ppu1 at %s", zero("ppu0"), zero("ppu1"))
			}
			if len(res.Notes) == 0 || !strings.Contains(strings.Join(res.Notes, "\n"), "ppu1: no device offered: refused") {
				t.Errorf("notes %q", res.Notes)
			}
			// With the claim's device allocated, the scheduler's counters are accelfs's map.
			var allocated map[string]bool
			if tc.accounted != nil {
				allocated = map[string]bool{"gpu0-1g-18gb-2": true}
			}
			if err := check.Counters(n, check.Specs(p), allocated); err != nil {
				t.Error(err)
			}
		})
	}
}

// Hand-made cases over the small node.
func TestBuildEdgeCases(t *testing.T) {
	t.Run("mode change pending", func(t *testing.T) {
		n := node(t, "node-small.json")
		n.Card("ppu0").MigPending = "disabled"
		res := publish.Build(n, publish.Options{PoolName: pool})
		for name := range devices(res.Resources.Pools[pool]) {
			if strings.HasPrefix(name, "ppu0-") {
				t.Errorf("%s offered while ppu0's MIG mode is about to go off", name)
			}
		}
		if _, ok := counterSets(res.Resources.Pools[pool])["ppu0"]; !ok {
			t.Error("ppu0 lost its counter set")
		}
	})
	t.Run("a lost job holds nothing", func(t *testing.T) {
		n := node(t, "node-small.json")
		gpu0 := n.Card("gpu0")
		j := gpu0.Job("notebook")
		j.State = accelfs.StateLost
		var ins []accelfs.Instance
		for _, in := range gpu0.Instances {
			if in.Job == nil || *in.Job != "notebook" {
				ins = append(ins, in)
			}
		}
		gpu0.Instances = ins
		res := publish.Build(n, publish.Options{PoolName: pool})
		if _, ok := devices(res.Resources.Pools[pool])["gpu0-2g-35gb-0"]; !ok {
			t.Error("the placement of a lost job is not offered")
		}
	})
	t.Run("a job being removed is not accounted", func(t *testing.T) {
		n := node(t, "node-small.json")
		own := "k8s-2f1c7a4e-9b3d-4c41-8e0a-6d5b3f9a1c27-0"
		n.Card("gpu0").Job(own).State = accelfs.StateRemoving
		res := publish.Build(n, publish.Options{PoolName: pool, Accounted: func(string) bool { return true }})
		if _, ok := devices(res.Resources.Pools[pool])["gpu0-1g-18gb-2"]; ok {
			t.Error("the placement of a job being removed is offered")
		}
	})
	t.Run("more slices than a counter set holds", func(t *testing.T) {
		n := node(t, "node-small.json")
		prof := n.Card("ppu0").Profile("8g.96gb")
		prof.Placements = []accelfs.Span{{Start: 0, Size: 40}}
		res := publish.Build(n, publish.Options{PoolName: pool})
		for name := range devices(res.Resources.Pools[pool]) {
			if strings.HasPrefix(name, "ppu0-") {
				t.Errorf("%s offered on a card that cannot be counted", name)
			}
		}
		if !strings.Contains(strings.Join(res.Notes, "\n"), "ppu0: 40 memory slices") {
			t.Errorf("notes %q", res.Notes)
		}
	})
	t.Run("no card with MIG on", func(t *testing.T) {
		n := node(t, "node-small.json")
		n.Devices = n.Devices[3:] // gpu1 alone
		res := publish.Build(n, publish.Options{PoolName: pool})
		p := res.Resources.Pools[pool]
		if len(p.Slices) != 1 || len(p.Slices[0].Devices) != 0 || len(p.Slices[0].SharedCounters) != 0 {
			t.Errorf("an empty pool is one empty slice: %+v", p.Slices)
		}
	})
	t.Run("two profile names, one device name", func(t *testing.T) {
		n := node(t, "node-small.json")
		ppu0 := n.Card("ppu0")
		other := *ppu0.Profile("4g.48gb")
		other.Name, other.ProfileID = "4g-48gb", 77
		ppu0.Profiles = append(ppu0.Profiles, other)
		ppu0.Instances, ppu0.Jobs = nil, nil
		res := publish.Build(n, publish.Options{PoolName: pool})
		valid(t, res.Resources.Pools[pool])
		if _, ok := devices(res.Resources.Pools[pool])["ppu0-id77-4g-48gb-4"]; !ok {
			t.Error("the second profile's device is not named after its id")
		}
		if p, ok := publish.Lookup(n, "ppu0-id77-4g-48gb-4"); !ok || p.Profile.Name != "4g-48gb" || p.Span.Start != 4 {
			t.Errorf("Lookup: %+v", p)
		}
	})
}

func TestLookup(t *testing.T) {
	n := node(t, "node-small.json")
	p, ok := publish.Lookup(n, "gpu0-3g-71gb-4")
	if !ok || p.Card.Name != "gpu0" || p.Profile.Name != "3g.71gb" || p.Span != (accelfs.Span{Start: 4, Size: 4}) {
		t.Fatalf("%+v", p)
	}
	if _, ok := publish.Lookup(n, "gpu1-1g-18gb-0"); ok {
		t.Error("a device of a card with MIG off")
	}
}

// k8s/deploy/deviceclasses.yaml is what `accelfs-dra classes` prints for the
// built-in simulated node (T-Head's two profiles, the H200's six).
func TestDeviceClassesManifest(t *testing.T) {
	n := node(t, "node-default.json")
	classes := publish.DeviceClasses(publish.Profiles(n))
	if len(classes) != 1+8 {
		t.Fatalf("%d classes", len(classes))
	}
	c := classes[1]
	if c.Name != "4g.48gb.accelfs.io" || *c.Spec.ExtendedResourceName != "accelfs.io/mig-4g.48gb" ||
		c.Spec.Selectors[0].CEL.Expression != `device.driver == "accelfs.io" && device.attributes["accelfs.io"].profile == "4g.48gb"` {
		t.Fatalf("%+v", c)
	}
	got, err := publish.ClassesYAML(classes)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("..", "deploy", "deviceclasses.yaml")
	if os.Getenv("ACCELFS_K8S_UPDATE") == "1" {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Fatalf("%s is not what accelfs-dra classes prints for the simulated node (ACCELFS_K8S_UPDATE=1 go test ./publish rewrites it):\n%s", path, got)
	}
}

// A card's condition (node.json's admits, or its health from an accelfs
// that has no admits yet) taints every device of the card; back to ok, the
// taint is gone (issue 32: cordon and failure were invisible to the
// scheduler).
func TestTaintsFromCondition(t *testing.T) {
	xid := 79
	for _, tc := range []struct {
		name   string
		set    func(*accelfs.Device)
		key    string
		value  string
		effect resourceapi.DeviceTaintEffect
	}{
		{"cordoned", func(d *accelfs.Device) {
			d.Admits = &accelfs.Admits{NewJobs: false, Condition: accelfs.CondCordoned}
			d.Cordon = true
		}, publish.TaintCordoned, "", resourceapi.DeviceTaintEffectNoSchedule},
		{"draining", func(d *accelfs.Device) {
			d.Admits = &accelfs.Admits{Condition: accelfs.CondDraining}
		}, publish.TaintDraining, "", resourceapi.DeviceTaintEffectNoSchedule},
		{"mode-pending", func(d *accelfs.Device) {
			d.Admits = &accelfs.Admits{Condition: accelfs.CondModePending}
		}, publish.TaintModePending, "", resourceapi.DeviceTaintEffectNoSchedule},
		{"failed", func(d *accelfs.Device) {
			d.Admits = &accelfs.Admits{Condition: accelfs.CondFailed}
			d.Health = &accelfs.Health{State: accelfs.HealthFailed, Xid: &xid}
		}, publish.TaintFailed, "79", resourceapi.DeviceTaintEffectNoSchedule},
		{"failed, no admits yet", func(d *accelfs.Device) {
			d.Health = &accelfs.Health{State: accelfs.HealthFailed, Xid: &xid}
		}, publish.TaintFailed, "79", resourceapi.DeviceTaintEffectNoSchedule},
		{"cordon, no admits yet", func(d *accelfs.Device) {
			d.Cordon = true
		}, publish.TaintCordoned, "", resourceapi.DeviceTaintEffectNoSchedule},
		{"degraded", func(d *accelfs.Device) {
			d.Admits = &accelfs.Admits{NewJobs: true, Condition: accelfs.CondDegraded}
			d.Health = &accelfs.Health{State: accelfs.HealthDegraded, Xid: &xid}
		}, publish.TaintDegraded, "79", resourceapi.DeviceTaintEffectNone},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := node(t, "node-small.json")
			tc.set(n.Card("ppu0"))
			res := publish.Build(n, publish.Options{PoolName: pool})
			seen := 0
			for name, dev := range devices(res.Resources.Pools[pool]) {
				if !strings.HasPrefix(name, "ppu0-") {
					if len(dev.Taints) != 0 {
						t.Errorf("%s of another card tainted: %v", name, dev.Taints)
					}
					continue
				}
				seen++
				if len(dev.Taints) != 1 || dev.Taints[0].Key != tc.key || dev.Taints[0].Value != tc.value || dev.Taints[0].Effect != tc.effect {
					t.Errorf("%s: taints %+v, want %s=%s:%s", name, dev.Taints, tc.key, tc.value, tc.effect)
				}
			}
			if seen == 0 {
				t.Fatal("ppu0's devices are not published")
			}
			// Recovered: the same node with the card back to ok.
			c := n.Card("ppu0")
			c.Admits = &accelfs.Admits{NewJobs: true, Condition: accelfs.CondOK}
			c.Cordon, c.Health = false, &accelfs.Health{State: accelfs.HealthOK}
			res = publish.Build(n, publish.Options{PoolName: pool})
			for name, dev := range devices(res.Resources.Pools[pool]) {
				if len(dev.Taints) != 0 {
					t.Errorf("after recovery %s keeps %v", name, dev.Taints)
				}
			}
		})
	}
}
