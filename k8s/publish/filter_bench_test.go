package publish_test

// BenchmarkFilterNode is test 5's scheduler cost without a cluster: the
// structured allocator the scheduler's DRA filter runs (k8s.io/dynamic-
// resource-allocation, the version of go.mod) over one node's pool, for a
// node filling up claim by claim, with the pool this package publishes for
// eight H200s against the whole cards test 5 compares it with. Under 100
// nodes the scheduler filters every node for every pod, a fresh allocator
// each time, so the cost a pod pays per node is what one Allocate costs at
// the node's fill; a run sums it over a fill from empty to test 5's 32 pods
// a node (docs/performance.md, "Kubernetes at scale").
//
// Two ways of publishing the same placements are timed beside it, to say
// what they would give: "slim", the devices without the attributes and
// capacities that repeat the card or the profile (uuid, bus id, vendor,
// profile id, placement size; compute slices, multiprocessors, memory
// slices), and "bysize", every card's devices of one profile together,
// profiles in the order of test 5's mix, commonest first.
//
// testdata/node-eight-h200.json is the node.json of a daemon started with
// --sim=tests/k8s/cluster/eight-h200.json, test 5's topology, its driver_library
// set to where a node keeps libnvidia-ml.so.1.

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"sort"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/dynamic-resource-allocation/cel"
	"k8s.io/dynamic-resource-allocation/structured"
	"k8s.io/utils/ptr"

	"accelfs.io/k8s/accelfs/accelfstest"
	"accelfs.io/k8s/publish"
)

// The allocator features of kube-scheduler's default gates: with binding
// conditions and consumable capacity on, it runs the "incubating"
// allocator, the one a profile of the scheduler shows.
var schedulerFeatures = structured.Features{AdminAccess: true, PrioritizedList: true, PartitionableDevices: true,
	DeviceTaints: true, DeviceBindingAndStatus: true, ConsumableCapacity: true}

// test 5's mix (tests/k8s/cluster/test_scale.py, MIX) and pods a node.
var scaleMix = []struct {
	profile string
	percent int
}{{"1g.18gb", 65}, {"1g.35gb", 15}, {"2g.35gb", 8}, {"3g.71gb", 8}, {"7g.141gb", 4}}

const podsPerNode = 32

const wholeDriver = "whole-card.accelfs.test"

type classMap map[string]*resourceapi.DeviceClass

func (c classMap) Get(name string) (*resourceapi.DeviceClass, error) {
	if dc, ok := c[name]; ok {
		return dc, nil
	}
	return nil, fmt.Errorf("no DeviceClass %s", name)
}

func (c classMap) List() ([]*resourceapi.DeviceClass, error) {
	var out []*resourceapi.DeviceClass
	for _, dc := range c {
		out = append(out, dc)
	}
	return out, nil
}

// poolSlices turns a Build result into the API's slices of one node.
func poolSlices(res publish.Result, node string) []*resourceapi.ResourceSlice {
	var out []*resourceapi.ResourceSlice
	for name, pool := range res.Resources.Pools {
		for i, s := range pool.Slices {
			out = append(out, &resourceapi.ResourceSlice{
				ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d", name, i)},
				Spec: resourceapi.ResourceSliceSpec{Driver: publish.DriverName, NodeName: ptr.To(node),
					Pool:    resourceapi.ResourcePool{Name: name, Generation: 1, ResourceSliceCount: int64(len(pool.Slices))},
					Devices: s.Devices, SharedCounters: s.SharedCounters},
			})
		}
	}
	return out
}

// wholeCardSlices is test 5's step 1: a device a card, no counters.
func wholeCardSlices(node string, cards int) []*resourceapi.ResourceSlice {
	var devs []resourceapi.Device
	for i := range cards {
		devs = append(devs, resourceapi.Device{Name: fmt.Sprintf("card%d", i),
			Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
				"card": {StringValue: ptr.To(fmt.Sprintf("card%d", i))}, "cardIndex": {IntValue: ptr.To(int64(i))},
				"vendor": {StringValue: ptr.To("NVIDIA")}, "product": {StringValue: ptr.To("NVIDIA H200")}},
			Capacity: map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{"memory": {Value: resource.MustParse("143771Mi")}}})
	}
	return []*resourceapi.ResourceSlice{{ObjectMeta: metav1.ObjectMeta{Name: node + "-whole"},
		Spec: resourceapi.ResourceSliceSpec{Driver: wholeDriver, NodeName: ptr.To(node), Devices: devs,
			Pool: resourceapi.ResourcePool{Name: node, Generation: 1, ResourceSliceCount: 1}}}}
}

func wholeCardClass() *resourceapi.DeviceClass {
	return &resourceapi.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: wholeDriver},
		Spec: resourceapi.DeviceClassSpec{Selectors: []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{
			Expression: `device.driver == "` + wholeDriver + `" && device.attributes["` + wholeDriver + `"].product == "NVIDIA H200"`}}}}}
}

// slim drops what repeats the card or the profile.
func slim(slices []*resourceapi.ResourceSlice) []*resourceapi.ResourceSlice {
	out := make([]*resourceapi.ResourceSlice, len(slices))
	for i, s := range slices {
		out[i] = s.DeepCopy()
		for d := range out[i].Spec.Devices {
			dev := &out[i].Spec.Devices[d]
			for _, a := range []string{publish.AttrCardUUID, publish.AttrCardBusID, publish.AttrVendor,
				publish.AttrProfileID, publish.AttrPlacementSize} {
				delete(dev.Attributes, resourceapi.QualifiedName(a))
			}
			for _, c := range []string{publish.CapComputeSlices, publish.CapMultiprocessors, publish.CapMemorySlices} {
				delete(dev.Capacity, resourceapi.QualifiedName(c))
			}
		}
	}
	return out
}

// bySize republishes the devices profile by profile, in the mix's order.
func bySize(slices []*resourceapi.ResourceSlice) []*resourceapi.ResourceSlice {
	rank := map[string]int{}
	for i, m := range scaleMix {
		rank[m.profile] = i
	}
	var devs []resourceapi.Device
	var out []*resourceapi.ResourceSlice
	for _, s := range slices {
		if len(s.Spec.Devices) == 0 {
			out = append(out, s.DeepCopy())
		}
		devs = append(devs, s.Spec.Devices...)
	}
	profile := func(d resourceapi.Device) string { return *d.Attributes[publish.AttrProfile].StringValue }
	sort.SliceStable(devs, func(a, b int) bool { return rank[profile(devs[a])] < rank[profile(devs[b])] })
	per := len(slices[len(slices)-1].Spec.Devices)
	for _, s := range slices {
		per = max(per, len(s.Spec.Devices))
	}
	for len(devs) > 0 {
		k := min(per, len(devs))
		s := out[0].DeepCopy()
		s.Name = fmt.Sprintf("%s-%d", s.Spec.Pool.Name, len(out))
		s.Spec.SharedCounters, s.Spec.Devices = nil, devs[:k]
		out = append(out, s)
		devs = devs[k:]
	}
	for _, s := range out {
		s.Spec.Pool.ResourceSliceCount = int64(len(out))
	}
	return out
}

// fill allocates one claim of each class in turn on a node, a fresh
// allocator each, and returns the time the Allocate calls took and how
// many claims got a device.
func fill(b *testing.B, slices []*resourceapi.ResourceSlice, classes classMap, classOf []string) (time.Duration, int) {
	ctx := context.Background()
	cache := cel.NewCache(100, cel.Features{})
	node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a"}}
	taken := sets.New[structured.DeviceID]()
	var took time.Duration
	placed := 0
	for i, class := range classOf {
		claim := &resourceapi.ResourceClaim{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: fmt.Sprintf("c%d", i), UID: types.UID(fmt.Sprintf("uid-%d", i))},
			Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{{Name: "dev",
				Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: class, AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: 1}}}}}}
		state := structured.AllocatedState{AllocatedDevices: taken.Clone(),
			AllocatedSharedDeviceIDs: sets.New[structured.SharedDeviceID](), AggregatedCapacity: structured.NewConsumedCapacityCollection()}
		start := time.Now()
		alloc, err := structured.NewAllocator(ctx, schedulerFeatures, state, classes, slices, cache)
		if err != nil {
			b.Fatal(err)
		}
		results, err := alloc.Allocate(ctx, node, []*resourceapi.ResourceClaim{claim})
		took += time.Since(start)
		if err != nil {
			b.Fatal(err)
		}
		if len(results) == 1 {
			placed++
			for _, d := range results[0].Devices.Results {
				taken.Insert(structured.MakeDeviceID(d.Driver, d.Pool, d.Device))
			}
		}
	}
	return took, placed
}

func BenchmarkFilterNode(b *testing.B) {
	f, err := accelfstest.FromFile(filepath.Join("..", "accelfs", "testdata", "node-eight-h200.json"))
	if err != nil {
		b.Fatal(err)
	}
	node, _ := f.ReadNode()
	partitions := poolSlices(publish.Build(node, publish.Options{PoolName: "node-a"}), "node-a")
	classes := classMap{wholeDriver: wholeCardClass()}
	for _, dc := range publish.DeviceClasses(publish.Profiles(node)) {
		classes[dc.Name] = &dc
	}
	whole := wholeCardSlices("node-a", podsPerNode)
	wholeClasses := make([]string, podsPerNode)
	for i := range wholeClasses {
		wholeClasses[i] = wholeDriver
	}

	variants := []struct {
		name   string
		slices []*resourceapi.ResourceSlice
	}{{"partitions", partitions}, {"slim", slim(partitions)}, {"bysize", bySize(partitions)}}
	sums := make([]time.Duration, len(variants))
	var wholeSum time.Duration
	placedMin := podsPerNode
	rng := rand.New(rand.NewPCG(5, 5))
	for b.Loop() {
		// A fresh draw of the mix each round, the same for every variant.
		mix := make([]string, podsPerNode)
		for i := range mix {
			n := rng.IntN(100)
			for _, m := range scaleMix {
				if n < m.percent {
					mix[i] = publish.ClassName(m.profile)
					break
				}
				n -= m.percent
			}
		}
		took, placed := fill(b, whole, classes, wholeClasses)
		if placed != podsPerNode {
			b.Fatalf("whole cards: %d of %d placed", placed, podsPerNode)
		}
		wholeSum += took
		for v := range variants {
			took, placed := fill(b, variants[v].slices, classes, mix)
			sums[v] += took
			placedMin = min(placedMin, placed)
		}
	}
	n := float64(b.N) * podsPerNode
	b.ReportMetric(float64(wholeSum.Microseconds())/n, "whole-us")
	b.ReportMetric(float64(sums[0].Microseconds())/n, "partitions-us")
	for v := range variants {
		b.ReportMetric(float64(sums[v])/float64(wholeSum), variants[v].name+"/whole")
	}
	b.ReportMetric(float64(placedMin), "placed-min")
	b.ReportMetric(0, "ns/op") // the variants are timed apart; the loop's total is not one figure
}
