package publish

import (
	"fmt"
	"sort"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/dynamic-resource-allocation/resourceslice"
	"k8s.io/utils/ptr"

	"accelfs.io/k8s/accelfs"
)

// Device attributes (in the driver's domain: accelfs.io/profile) and capacities.
const (
	AttrProfile        = "profile"
	AttrProfileID      = "profileID"
	AttrCard           = "card"
	AttrCardUUID       = "cardUUID"
	AttrCardIndex      = "cardIndex"
	AttrCardBusID      = "cardBusID"
	AttrVendor         = "vendor"
	AttrProduct        = "product"
	AttrPlacementStart = "placementStart"
	AttrPlacementSize  = "placementSize"

	CapMemory          = "memory"
	CapMemorySlices    = "memorySlices"
	CapComputeSlices   = "computeSlices"
	CapMultiprocessors = "multiprocessors"
)

// The API's limits on one ResourceSlice (k8s.io/api/resource/v1).
const (
	maxCounterSetsPerSlice = resourceapi.ResourceSliceMaxCounterSets
	maxCountersPerSet      = resourceapi.ResourceSliceMaxCountersPerCounterSet
	maxDevicesPerSlice     = resourceapi.ResourceSliceMaxDevicesWithAdvancedFeatures
)

// Options says how to publish.
type Options struct {
	// PoolName names the node's one pool: the node name.
	PoolName string
	// Accounted says whether a job is Kubernetes': carved by this plugin for
	// a claim that is prepared on the node. Its slices are consumed in the
	// scheduler's view by that claim's allocation; every other instance
	// (jobs carved outside Kubernetes, instances made by hand, a job of a
	// claim that is gone or being unprepared) is taken away from the
	// counters. Nil: no job is.
	Accounted func(job string) bool
	// Evict names the devices allocated to a claim of this node that the
	// plugin cannot serve (their placement was taken behind the
	// scheduler's back, or a lost instance could not be carved again): a
	// device it answers true for is published, taken or not, with a
	// NoExecute taint (TaintUnservable), so that its pod is evicted and
	// scheduled again. Nil: none.
	Evict func(device string) (why string, evict bool)
}

// Result is the pool to publish and what was left out of it.
type Result struct {
	Resources resourceslice.DriverResources
	// Offered and Withheld count devices published and left out.
	Offered, Withheld int
	// Notes say, per card, why devices were left out.
	Notes []string
}

// Build makes the node's pool: counter-only slices holding one counter set per
// card with MIG on (a counter per memory slice: 1 when free or held by an
// accounted job, 0 when held by anything else), then device slices with one
// device per profile and legal placement that is offered now, consuming
// exactly its slices. A device is left out when its card is refused or has a
// mode change pending, or when its placement overlaps an instance that is not
// accounted: a placement that is taken is never offered.
func Build(node *accelfs.Node, opts Options) Result {
	var res Result
	var counterSets []resourceapi.CounterSet
	var devices []resourceapi.Device
	setOf := map[string]string{}

	for i := range node.Devices {
		card := &node.Devices[i]
		n := card.Slices()
		if n == 0 {
			continue // MIG off: nothing to count, nothing to offer
		}
		if n > maxCountersPerSet {
			res.Notes = append(res.Notes, fmt.Sprintf("%s: %d memory slices, more than the %d counters of a counter set: not published", card.Name, n, maxCountersPerSet))
			continue
		}
		value := make([]int64, n)
		for s := range value {
			value[s] = 1
		}
		for _, in := range card.Instances {
			if in.Job != nil && accounted(card, *in.Job, opts) {
				continue
			}
			for s := in.Placement.Start; s < in.Placement.End() && s < n; s++ {
				value[s] = 0
			}
		}
		set := resourceapi.CounterSet{Name: CounterSetName(card.Name), Counters: map[string]resourceapi.Counter{}}
		for s, v := range value {
			set.Counters[CounterName(s)] = resourceapi.Counter{Value: *resource.NewQuantity(v, resource.DecimalSI)}
		}
		counterSets = append(counterSets, set)
		setOf[card.Name] = set.Name

		why := ""
		switch {
		case !card.OK():
			why = "refused"
			if card.Refusal != nil {
				why += ": " + *card.Refusal
			}
		case !card.MigEnabled():
			why = "MIG mode change pending (" + card.MigPending + ")"
		}
		if why != "" {
			res.Notes = append(res.Notes, fmt.Sprintf("%s: no device offered: %s", card.Name, why))
		}
	}

	for _, p := range Placements(node) {
		set, ok := setOf[p.Card.Name]
		if !ok {
			continue
		}
		why, evict := "", false
		if opts.Evict != nil {
			why, evict = opts.Evict(p.Device)
		}
		if !p.Card.OK() || !p.Card.MigEnabled() || (!evict && takenBy(p, opts) != "") {
			res.Withheld++
			continue
		}
		dev := device(p, set)
		dev.Taints = Taints(p.Card)
		if evict {
			dev.Taints = append(dev.Taints, resourceapi.DeviceTaint{Key: TaintUnservable, Value: why, Effect: resourceapi.DeviceTaintEffectNoExecute})
		}
		devices = append(devices, dev)
	}
	res.Offered = len(devices)
	for _, card := range node.Devices {
		if _, ok := setOf[card.Name]; !ok || !card.OK() || !card.MigEnabled() {
			continue
		}
		var held []string
		for _, in := range card.Instances {
			if in.Job == nil || !accounted(&card, *in.Job, opts) {
				held = append(held, holder(in)+" at "+in.Placement.String())
			}
		}
		if len(held) > 0 {
			sort.Strings(held)
			res.Notes = append(res.Notes, fmt.Sprintf("%s: placements overlapping %v not offered", card.Name, held))
		}
	}

	var slices []resourceslice.Slice
	for len(counterSets) > 0 {
		k := min(len(counterSets), maxCounterSetsPerSlice)
		slices = append(slices, resourceslice.Slice{SharedCounters: counterSets[:k]})
		counterSets = counterSets[k:]
	}
	for len(devices) > 0 {
		k := min(len(devices), maxDevicesPerSlice)
		slices = append(slices, resourceslice.Slice{Devices: devices[:k]})
		devices = devices[k:]
	}
	if len(slices) == 0 {
		// An empty pool says that the driver runs and has nothing to offer.
		slices = append(slices, resourceslice.Slice{})
	}
	res.Resources = resourceslice.DriverResources{Pools: map[string]resourceslice.Pool{opts.PoolName: {Slices: slices}}}
	return res
}

// Taint keys: one per card condition (KEP-5055: the driver's domain, a
// simple value). The effect says what the scheduler does.
const (
	TaintCordoned    = DriverName + "/cordoned"     // NoSchedule
	TaintDraining    = DriverName + "/draining"     // NoSchedule
	TaintModePending = DriverName + "/mode-pending" // NoSchedule
	TaintFailed      = DriverName + "/failed"       // NoSchedule; value: the Xid when known
	TaintDegraded    = DriverName + "/degraded"     // None (informational); value: the Xid
	// TaintUnservable: NoExecute on one device whose claim the plugin cannot
	// serve; value: "taken" or "lost".
	TaintUnservable = DriverName + "/unservable"
)

// Taints are the taints of every device of a card, from what the card can
// take now (node.json's admits): a card that takes no new job (cordoned,
// draining, a mode change from a layout waiting, failed) taints its devices
// NoSchedule, so the scheduler places no new claim there and a pending pod
// says which taint kept it; running pods keep running, as the card's jobs
// do. A failed card is NoSchedule too, as NVIDIA's driver does for a fatal
// Xid and KEP-5055 leaves eviction to the operator (a DeviceTaintRule with
// NoExecute); degraded (the driver asks for nothing) is informational
// (None). Recovery (the condition back to ok) publishes the devices without
// the taint. TimeAdded is left to the API server (kept across updates by the
// ResourceSlice controller).
func Taints(card *accelfs.Device) []resourceapi.DeviceTaint {
	xid := ""
	if card.Health != nil && card.Health.Xid != nil {
		xid = fmt.Sprint(*card.Health.Xid)
	}
	switch card.Condition() {
	case accelfs.CondCordoned:
		return []resourceapi.DeviceTaint{{Key: TaintCordoned, Effect: resourceapi.DeviceTaintEffectNoSchedule}}
	case accelfs.CondDraining:
		return []resourceapi.DeviceTaint{{Key: TaintDraining, Effect: resourceapi.DeviceTaintEffectNoSchedule}}
	case accelfs.CondModePending:
		return []resourceapi.DeviceTaint{{Key: TaintModePending, Effect: resourceapi.DeviceTaintEffectNoSchedule}}
	case accelfs.CondFailed:
		return []resourceapi.DeviceTaint{{Key: TaintFailed, Value: xid, Effect: resourceapi.DeviceTaintEffectNoSchedule}}
	case accelfs.CondDegraded:
		return []resourceapi.DeviceTaint{{Key: TaintDegraded, Value: xid, Effect: resourceapi.DeviceTaintEffectNone}}
	}
	return nil
}

func accounted(card *accelfs.Device, job string, opts Options) bool {
	if opts.Accounted == nil || !opts.Accounted(job) {
		return false
	}
	j := card.Job(job)
	return j != nil && j.State == accelfs.StateReady
}

func holder(in accelfs.Instance) string {
	if in.Job != nil {
		return "job " + *in.Job
	}
	return "an instance accelfs did not make (gi " + fmt.Sprint(in.GI) + ")"
}

// takenBy names what holds a slice of the placement and is not accounted, or "".
func takenBy(p Placement, opts Options) string {
	for _, in := range p.Card.Instances {
		if in.Job != nil && accounted(p.Card, *in.Job, opts) {
			continue
		}
		if in.Placement.Overlaps(p.Span) {
			return holder(in)
		}
	}
	return ""
}

func device(p Placement, set string) resourceapi.Device {
	card, prof := p.Card, p.Profile
	attrs := map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
		AttrProfile:        {StringValue: ptr.To(prof.Name)},
		AttrProfileID:      {IntValue: ptr.To(int64(prof.ProfileID))},
		AttrCard:           {StringValue: ptr.To(card.Name)},
		AttrVendor:         {StringValue: ptr.To(card.Vendor)},
		AttrPlacementStart: {IntValue: ptr.To(int64(p.Span.Start))},
		AttrPlacementSize:  {IntValue: ptr.To(int64(p.Span.Size))},
	}
	if card.UUID != "" {
		attrs[AttrCardUUID] = resourceapi.DeviceAttribute{StringValue: ptr.To(card.UUID)}
	}
	if card.Product != "" && len(card.Product) <= resourceapi.DeviceAttributeMaxValueLength {
		attrs[AttrProduct] = resourceapi.DeviceAttribute{StringValue: ptr.To(card.Product)}
	}
	if card.BusID != "" {
		attrs[AttrCardBusID] = resourceapi.DeviceAttribute{StringValue: ptr.To(card.BusID)}
	}
	if card.Ordinal != nil {
		attrs[AttrCardIndex] = resourceapi.DeviceAttribute{IntValue: ptr.To(int64(*card.Ordinal))}
	} else if card.Index != nil {
		attrs[AttrCardIndex] = resourceapi.DeviceAttribute{IntValue: ptr.To(int64(*card.Index))}
	}
	capacity := map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{
		CapMemory:       {Value: *resource.NewQuantity(prof.MemoryMiB<<20, resource.BinarySI)},
		CapMemorySlices: {Value: *resource.NewQuantity(int64(p.Span.Size), resource.DecimalSI)},
	}
	if prof.ComputeSlices > 0 {
		capacity[CapComputeSlices] = resourceapi.DeviceCapacity{Value: *resource.NewQuantity(int64(prof.ComputeSlices), resource.DecimalSI)}
	}
	if prof.Multiprocessors > 0 {
		capacity[CapMultiprocessors] = resourceapi.DeviceCapacity{Value: *resource.NewQuantity(int64(prof.Multiprocessors), resource.DecimalSI)}
	}
	counters := map[string]resourceapi.Counter{}
	for s := p.Span.Start; s < p.Span.End(); s++ {
		counters[CounterName(s)] = resourceapi.Counter{Value: *resource.NewQuantity(1, resource.DecimalSI)}
	}
	return resourceapi.Device{
		Name:             p.Device,
		Attributes:       attrs,
		Capacity:         capacity,
		ConsumesCounters: []resourceapi.DeviceCounterConsumption{{CounterSet: set, Counters: counters}},
	}
}
