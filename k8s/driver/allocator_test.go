package driver_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/dynamic-resource-allocation/cel"
	"k8s.io/dynamic-resource-allocation/structured"
	"k8s.io/klog/v2/ktesting"
	drapb "k8s.io/kubelet/pkg/apis/dra/v1"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"

	"accelfs.io/k8s/accelfs"
	"accelfs.io/k8s/accelfs/accelfstest"
	"accelfs.io/k8s/driver"
	"accelfs.io/k8s/internal/check"
	"accelfs.io/k8s/internal/kubetest"
	"accelfs.io/k8s/publish"
)

const nodeName = "node-a"

// outside carves and removes jobs the way a person or Slurm does, with plain
// mkdir (accelfs picks the placement) and rmdir: not Kubernetes'.
type outside interface {
	carve(card, profile, job string) error
	remove(card, profile, job string) error
}

type mountOutside struct{ root string }

func (m mountOutside) carve(card, profile, job string) error {
	return os.Mkdir(filepath.Join(m.root, card, "mig", profile, job), 0o755)
}

func (m mountOutside) remove(card, profile, job string) error {
	return os.Remove(filepath.Join(m.root, card, "mig", profile, job))
}

type fakeOutside struct{ f *accelfstest.Fake }

func (o fakeOutside) carve(card, profile, job string) error {
	n, _ := o.f.ReadNode()
	d := n.Card(card)
	for _, pl := range d.Profile(profile).Placements {
		if d.Free()[pl.Start] && freeSpan(d, pl) {
			return o.f.CarveAt(card, profile, pl.Start, job)
		}
	}
	return fmt.Errorf("no free placement")
}

func (o fakeOutside) remove(card, profile, job string) error { return o.f.Remove(card, profile, job) }

func freeSpan(d *accelfs.Device, s accelfs.Span) bool {
	free := d.Free()
	for i := s.Start; i < s.End(); i++ {
		if !free[i] {
			return false
		}
	}
	return true
}

// kubelet is the test's kubelet: it registers the plugin over the
// registration socket and calls it over the DRA socket it was given.
type kubelet struct {
	dra drapb.DRAPluginClient
}

func register(t testing.TB, registrarDir string) *kubelet {
	t.Helper()
	sock := filepath.Join(registrarDir, publish.DriverName+"-reg.sock")
	conn, err := grpc.NewClient("unix://"+sock, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	reg := registerapi.NewRegistrationClient(conn)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	info, err := reg.GetInfo(ctx, &registerapi.InfoRequest{})
	if err != nil {
		t.Fatalf("GetInfo over %s: %v", sock, err)
	}
	if info.Type != registerapi.DRAPlugin || info.Name != publish.DriverName || !contains(info.SupportedVersions, drapb.DRAPluginService) {
		t.Fatalf("plugin info %+v", info)
	}
	if _, err := reg.NotifyRegistrationStatus(ctx, &registerapi.RegistrationStatus{PluginRegistered: true}); err != nil {
		t.Fatal(err)
	}
	dconn, err := grpc.NewClient("unix://"+info.Endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dconn.Close() })
	return &kubelet{dra: drapb.NewDRAPluginClient(dconn)}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func (k *kubelet) prepare(claims ...*resourceapi.ResourceClaim) (map[string]*drapb.NodePrepareResourceResponse, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	req := &drapb.NodePrepareResourcesRequest{}
	for _, c := range claims {
		req.Claims = append(req.Claims, &drapb.Claim{Namespace: c.Namespace, Name: c.Name, Uid: string(c.UID)})
	}
	resp, err := k.dra.NodePrepareResources(ctx, req)
	if err != nil {
		return nil, err
	}
	return resp.Claims, nil
}

func (k *kubelet) unprepare(c *resourceapi.ResourceClaim) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	resp, err := k.dra.NodeUnprepareResources(ctx, &drapb.NodeUnprepareResourcesRequest{Claims: []*drapb.Claim{{Namespace: c.Namespace, Name: c.Name, Uid: string(c.UID)}}})
	if err != nil {
		return "", err
	}
	return resp.Claims[string(c.UID)].Error, nil
}

type classes map[string]*resourceapi.DeviceClass

func (c classes) List() ([]*resourceapi.DeviceClass, error) {
	var out []*resourceapi.DeviceClass
	for _, dc := range c {
		out = append(out, dc)
	}
	return out, nil
}

func (c classes) Get(name string) (*resourceapi.DeviceClass, error) {
	if dc, ok := c[name]; ok {
		return dc, nil
	}
	return nil, apierrors.NewNotFound(resourceapi.Resource("deviceclasses"), name)
}

// The features of a 1.37 scheduler's allocator where partitionable devices
// are on by default (the "stable" implementation), and every feature the
// allocators know (the "experimental" one).
var (
	stableFeatures = structured.Features{AdminAccess: true, PrioritizedList: true, PartitionableDevices: true, DeviceTaints: true}
	allFeatures    = structured.Features{AdminAccess: true, CompatibilityGroups: true, ConsumableCapacity: true,
		DerivedAttributes: true, DeviceBindingAndStatus: true, DeviceTaints: true, FractionalCapacityRange: true,
		ListTypeAttributes: true, OptionalNodeOperations: true, PartitionableDevices: true, PrioritizedList: true}
)

// scenario drives the plugin as a cluster would: claims of mixed profiles
// allocated by the real structured allocator over the ResourceSlices the
// plugin published (read back from the API), prepared and unprepared over
// the plugin's gRPC sockets, with jobs carved and removed outside
// Kubernetes in between. After every step:
//   - every allocation was prepared, and carved exactly its placements;
//   - an allocation the allocator could not make, accelfs could not carve;
//   - the counters left free are accelfs's free slices, and what can still
//     be allocated of each profile on each card is its available.
func scenario(t *testing.T, fs accelfs.Interface, out outside, features structured.Features, steps int) {
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("ACCELFS_K8S_SEED"); s != "" {
		seed, _ = strconv.ParseUint(s, 10, 64)
	}
	t.Logf("seed %d (ACCELFS_K8S_SEED=%d repeats this run)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, seed))

	client := kubetest.Client(nodeName)
	pluginDir, err := os.MkdirTemp("", "dra-plugin-")
	if err != nil {
		t.Fatal(err)
	}
	registrarDir, err := os.MkdirTemp("", "dra-reg-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(pluginDir)
	defer os.RemoveAll(registrarDir)
	d, err := driver.Start(ctx, driver.Config{
		FS: fs, Client: client, NodeName: nodeName,
		PluginDataDir: pluginDir, RegistrarDir: registrarDir,
		Fallback: 5 * time.Second, ReconcileEvery: -1,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Stop()
	k := register(t, registrarDir)

	node, err := fs.ReadNode()
	if err != nil {
		t.Fatal(err)
	}
	profiles := publish.Profiles(node)
	lister := classes{}
	for _, dc := range publish.DeviceClasses(profiles) {
		lister[dc.Name] = &dc
	}
	celCache := cel.NewCache(100, cel.Features{})

	claims := map[types.UID]*resourceapi.ResourceClaim{}
	allocated := map[string]bool{} // device names held by claims
	var outsideJobs [][3]string
	stats := map[string]int{}

	// settled waits until the API's slices are one whole generation and the
	// verdict holds, then returns them. Own carves change no slice; a carve
	// outside Kubernetes is seen through poll() on node.json and republished.
	settled := func(what string) []*resourceapi.ResourceSlice {
		t.Helper()
		var last error
		for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			list, err := client.ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			var slices []*resourceapi.ResourceSlice
			var specs []resourceapi.ResourceSliceSpec
			gen := int64(-1)
			for i := range list.Items {
				gen = max(gen, list.Items[i].Spec.Pool.Generation)
			}
			for i := range list.Items {
				if s := &list.Items[i]; s.Spec.Pool.Generation == gen {
					slices = append(slices, s)
					specs = append(specs, s.Spec)
				}
			}
			if len(slices) == 0 || int64(len(slices)) != slices[0].Spec.Pool.ResourceSliceCount {
				last = fmt.Errorf("pool incomplete: %d slices of generation %d", len(slices), gen)
				continue
			}
			n, err := fs.ReadNode()
			if err != nil {
				t.Fatal(err)
			}
			if last = check.Counters(n, specs, allocated); last == nil {
				return slices
			}
		}
		t.Fatalf("after %s: the published slices never matched accelfs: %v", what, last)
		return nil
	}

	release := func(c *resourceapi.ResourceClaim) {
		t.Helper()
		msg, err := k.unprepare(c)
		if err != nil || msg != "" {
			t.Fatalf("unprepare %s: %v %s", c.Name, err, msg)
		}
		n, _ := fs.ReadNode()
		for i := range c.Status.Allocation.Devices.Results {
			if n.FindJob(driver.JobName(c.UID, i)) != nil {
				t.Fatalf("unprepare %s left job %s", c.Name, driver.JobName(c.UID, i))
			}
		}
		for _, r := range c.Status.Allocation.Devices.Results {
			delete(allocated, r.Device)
		}
		if err := client.ResourceV1().ResourceClaims(c.Namespace).Delete(ctx, c.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		delete(claims, c.UID)
		stats["released"]++
	}

	slices := settled("the start")
	for step := 0; step < steps; step++ {
		switch op := rng.IntN(10); {
		case op < 6 || len(claims) == 0: // a pod starts, with one claim or two
			npods := 1
			if rng.IntN(5) == 0 {
				npods = 2
			}
			var pod []*resourceapi.ResourceClaim
			want := map[string]int{} // profile -> count, for a pod of one claim of one profile
			for c := 0; c < npods; c++ {
				var requests []resourceapi.DeviceRequest
				switch kind := rng.IntN(10); {
				case kind < 6:
					p := profiles[rng.IntN(len(profiles))]
					n := 1 + rng.IntN(2)
					want[p] += n
					requests = append(requests, request("mig", publish.ClassName(p), n))
				case kind < 8: // two profiles at once
					a, b := profiles[rng.IntN(len(profiles))], profiles[rng.IntN(len(profiles))]
					requests = append(requests, request("a", publish.ClassName(a), 1), request("b", publish.ClassName(b), 1))
					want[""] = -1
				default: // any MIG device
					requests = append(requests, request("any", publish.AnyClass, 1))
					want[""] = -1
				}
				pod = append(pod, &resourceapi.ResourceClaim{
					ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: fmt.Sprintf("claim-%d-%d", step, c),
						UID: types.UID(fmt.Sprintf("%08x-0000-4000-8%03x-%012x", seed&0xffffffff, c, step))},
					Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: requests}},
				})
			}
			state := structured.AllocatedState{
				AllocatedDevices:         sets.New[structured.DeviceID](),
				AllocatedSharedDeviceIDs: sets.New[structured.SharedDeviceID](),
				AggregatedCapacity:       structured.NewConsumedCapacityCollection(),
			}
			for dev := range allocated {
				state.AllocatedDevices.Insert(structured.MakeDeviceID(publish.DriverName, nodeName, dev))
			}
			alloc, err := structured.NewAllocator(ctx, features, state, lister, slices, celCache)
			if err != nil {
				t.Fatal(err)
			}
			results, err := alloc.Allocate(ctx, &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: nodeName}}, pod)
			if err != nil {
				t.Fatal(err)
			}
			n, _ := fs.ReadNode()
			if len(results) == 0 {
				// Nothing of one profile can be allocated exactly when accelfs cannot carve that many.
				if _, mixed := want[""]; !mixed && len(pod) == 1 {
					for p, count := range want {
						if avail := available(n, p); avail >= count {
							t.Fatalf("step %d: the allocator found no %d x %s, accelfs has %d available", step, count, p, avail)
						}
					}
				}
				stats["unallocatable"]++
				continue
			}
			for i, c := range pod {
				c.Status.Allocation = &results[i]
				if _, err := client.ResourceV1().ResourceClaims("default").Create(ctx, c, metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			// One NodePrepareResources for the pod's claims, as the kubelet sends it.
			resps, err := k.prepare(pod...)
			if err != nil {
				t.Fatalf("step %d: NodePrepareResources: %v", step, err)
			}
			n, _ = fs.ReadNode()
			for _, c := range pod {
				resp := resps[string(c.UID)]
				if resp == nil || resp.Error != "" {
					t.Fatalf("step %d: accelfs refused the allocator's choice %v: %s", step, devNames(c), resp.GetError())
				}
				if len(resp.Devices) != len(c.Status.Allocation.Devices.Results) {
					t.Fatalf("step %d: %d devices answered for %d allocated", step, len(resp.Devices), len(c.Status.Allocation.Devices.Results))
				}
				for i, r := range c.Status.Allocation.Devices.Results {
					job := driver.JobName(c.UID, i)
					p, ok := publish.Lookup(n, r.Device)
					j := n.FindJob(job)
					if !ok || j == nil || j.State != accelfs.StateReady || j.Device != p.Card.Name || j.Profile != p.Profile.Name || *j.Placement != p.Span {
						t.Fatalf("step %d: device %s: job %s is %+v, not at its placement", step, r.Device, job, j)
					}
					got := resp.Devices[i]
					if got.DeviceName != r.Device || len(got.CdiDeviceIds) != 1 || got.CdiDeviceIds[0] != accelfs.CDIDeviceID(job) {
						t.Fatalf("step %d: answered %+v for %s", step, got, r.Device)
					}
					if ok, _ := fs.HasCDIDevice(job); !ok {
						t.Fatalf("step %d: answered before the CDI specs list %s", step, job)
					}
					allocated[r.Device] = true
				}
				claims[c.UID] = c
				stats["prepared"]++
				stats["devices"] += len(c.Status.Allocation.Devices.Results)
			}
			if len(pod) > 1 {
				stats["pods of two claims"]++
			}
		case op < 9: // a pod ends
			release(pick(claims, rng))
		default: // a job outside Kubernetes comes or goes
			if len(outsideJobs) > 0 && rng.IntN(2) == 0 {
				j := outsideJobs[0]
				outsideJobs = outsideJobs[1:]
				if err := out.remove(j[0], j[1], j[2]); err != nil {
					t.Fatalf("rmdir %v: %v", j, err)
				}
				stats["outside removed"]++
				break
			}
			card := n0(fs).Devices[rng.IntN(len(n0(fs).Devices))]
			if len(card.Profiles) == 0 {
				break
			}
			prof := card.Profiles[rng.IntN(len(card.Profiles))]
			job := fmt.Sprintf("outside-%d", step)
			if err := out.carve(card.Name, prof.Name, job); err == nil {
				outsideJobs = append(outsideJobs, [3]string{card.Name, prof.Name, job})
				stats["outside carved"]++
			}
		}
		slices = settled(fmt.Sprintf("step %d", step))
	}
	for _, c := range claims {
		release(c)
	}
	for _, j := range outsideJobs {
		if err := out.remove(j[0], j[1], j[2]); err != nil {
			t.Fatal(err)
		}
	}
	settled("the end")
	n, _ := fs.ReadNode()
	for _, card := range n.Devices {
		if len(card.Jobs) != 0 || len(card.Instances) != 0 {
			t.Errorf("%s: jobs or instances left: %+v", card.Name, card.Jobs)
		}
	}
	times, _ := d.Published()
	t.Logf("%v; the pool was published %d times", stats, times)
	if stats["prepared"] == 0 || stats["unallocatable"] == 0 {
		t.Errorf("the run never filled the node or never prepared: %v", stats)
	}
}

func n0(fs accelfs.Interface) *accelfs.Node {
	n, err := fs.ReadNode()
	if err != nil {
		panic(err)
	}
	return n
}

func request(name, class string, count int) resourceapi.DeviceRequest {
	return resourceapi.DeviceRequest{Name: name, Exactly: &resourceapi.ExactDeviceRequest{
		DeviceClassName: class, AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: int64(count),
	}}
}

func available(n *accelfs.Node, profile string) int {
	total := 0
	for _, d := range n.Devices {
		if p := d.Profile(profile); p != nil {
			total += p.Available
		}
	}
	return total
}

func devNames(c *resourceapi.ResourceClaim) string {
	var out []string
	for _, r := range c.Status.Allocation.Devices.Results {
		out = append(out, r.Device)
	}
	return strings.Join(out, ",")
}

func pick(claims map[types.UID]*resourceapi.ResourceClaim, rng *rand.Rand) *resourceapi.ResourceClaim {
	var uids []string
	for uid := range claims {
		uids = append(uids, string(uid))
	}
	sort.Strings(uids)
	return claims[types.UID(uids[rng.IntN(len(uids))])]
}

// Against the in-memory accelfs: the built-in simulated node's node.json.
func TestAllocatorFake(t *testing.T) {
	for name, features := range map[string]structured.Features{"stable": stableFeatures, "all": allFeatures} {
		t.Run(name, func(t *testing.T) {
			f, err := accelfstest.FromFile(filepath.Join("..", "accelfs", "testdata", "node-default.json"))
			if err != nil {
				t.Fatal(err)
			}
			scenario(t, f, fakeOutside{f}, features, 300)
		})
	}
}

// Against the real daemon over the built-in simulated node (16 PPUs, an H200).
func TestAllocatorSim(t *testing.T) {
	sim := accelfstest.StartSim(t, "")
	scenario(t, sim.Mount, mountOutside{sim.Root}, stableFeatures, 150)
}
