package driver

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"

	"accelfs.io/k8s/accelfs"
	"accelfs.io/k8s/accelfs/accelfstest"
	"accelfs.io/k8s/publish"
)

const nodeName = "node-a"

// claim is a ResourceClaim allocated the given devices of this node's pool.
func claim(uid, name string, devices ...string) *resourceapi.ResourceClaim {
	c := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID(uid)}}
	var results []resourceapi.DeviceRequestAllocationResult
	for _, d := range devices {
		results = append(results, resourceapi.DeviceRequestAllocationResult{Request: "mig", Driver: publish.DriverName, Pool: nodeName, Device: d})
	}
	c.Status.Allocation = &resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{Results: results}}
	return c
}

func fakeNode(t *testing.T, name string) *accelfstest.Fake {
	t.Helper()
	f, err := accelfstest.FromFile(filepath.Join("..", "accelfs", "testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func newTestDriver(t *testing.T, fs accelfs.Interface, objects ...*resourceapi.ResourceClaim) *Driver {
	t.Helper()
	client := fake.NewClientset()
	for _, c := range objects {
		if _, err := client.ResourceV1().ResourceClaims(c.Namespace).Create(context.Background(), c, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	d, _, err := newDriver(context.Background(), Config{FS: fs, Client: client, NodeName: nodeName, CDITimeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func prepare(t *testing.T, d *Driver, c *resourceapi.ResourceClaim) kubeletplugin.PrepareResult {
	t.Helper()
	out, err := d.PrepareResourceClaims(context.Background(), []*resourceapi.ResourceClaim{c})
	if err != nil {
		t.Fatal(err)
	}
	return out[c.UID]
}

func unprepare(t *testing.T, d *Driver, c *resourceapi.ResourceClaim) error {
	t.Helper()
	out, err := d.UnprepareResourceClaims(context.Background(), []kubeletplugin.NamespacedObject{{UID: c.UID, NamespacedName: types.NamespacedName{Namespace: c.Namespace, Name: c.Name}}})
	if err != nil {
		t.Fatal(err)
	}
	return out[c.UID]
}

func TestJobNames(t *testing.T) {
	uid := types.UID("2f1c7a4e-9b3d-4c41-8e0a-6d5b3f9a1c27")
	for _, i := range []int{0, 1, 31} {
		job := JobName(uid, i)
		if !accelfs.ValidJobName(job) {
			t.Errorf("%q is not a job name", job)
		}
		part, n, ok := ParseJobName(job)
		if !ok || part != string(uid) || n != i {
			t.Errorf("ParseJobName(%q) = %q %d %v", job, part, n, ok)
		}
	}
	if got := JobName(uid, 31); len(got) > 63 || got != "k8s-2f1c7a4e-9b3d-4c41-8e0a-6d5b3f9a1c27-31" {
		t.Errorf("%q", got)
	}
	// A UID that does not fit the job-name rule is hashed, and still parses.
	odd := JobName("UPPER_and:colons/and-a-very-long-tail-that-goes-on-and-on-and-on", 2)
	if !accelfs.ValidJobName(odd) {
		t.Errorf("%q", odd)
	}
	if _, n, ok := ParseJobName(odd); !ok || n != 2 {
		t.Errorf("ParseJobName(%q)", odd)
	}
	for _, other := range []string{"slurm-42-0", "notebook", "k8s-", "k8s-abc", "k8s-abc-x", "k8s-abc-01", "k8s--1"} {
		if _, _, ok := ParseJobName(other); ok {
			t.Errorf("%q taken for a job of this plugin", other)
		}
	}
}

// A claim of two devices: both carved at exactly their placements, answered
// with their CDI names; a repeated call answers the same jobs and carves
// nothing; unprepare gives both back, and again is success.
func TestPrepareUnprepare(t *testing.T) {
	f := fakeNode(t, "node-default.json")
	d := newTestDriver(t, f)
	c := claim("11111111-2222-4333-8444-555555555555", "two", "gpu0-1g-18gb-5", "ppu3-4g-48gb-4")
	res := prepare(t, d, c)
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	if len(res.Devices) != 2 {
		t.Fatalf("%+v", res.Devices)
	}
	for i, want := range []struct {
		device, card, profile string
		start                 int
	}{{"gpu0-1g-18gb-5", "gpu0", "1g.18gb", 5}, {"ppu3-4g-48gb-4", "ppu3", "4g.48gb", 4}} {
		job := JobName(c.UID, i)
		got := res.Devices[i]
		if got.DeviceName != want.device || got.PoolName != nodeName || len(got.CDIDeviceIDs) != 1 || got.CDIDeviceIDs[0] != "accelfs.io/mig="+job || got.Requests[0] != "mig" {
			t.Errorf("device %d: %+v", i, got)
		}
		st, err := f.Status(want.card, want.profile, job)
		if err != nil || st.Placement.Start != want.start || st.State != accelfs.StateReady {
			t.Errorf("job %s: %+v %v", job, st, err)
		}
	}
	if !d.accounted(JobName(c.UID, 0)) {
		t.Error("a prepared claim's job is not accounted")
	}
	carves := f.Carves
	again := prepare(t, d, c)
	if again.Err != nil || f.Carves != carves || again.Devices[1].CDIDeviceIDs[0] != res.Devices[1].CDIDeviceIDs[0] {
		t.Fatalf("a repeated prepare: %v, %d carves more", again.Err, f.Carves-carves)
	}
	if err := unprepare(t, d, c); err != nil {
		t.Fatal(err)
	}
	n, _ := f.ReadNode()
	if n.FindJob(JobName(c.UID, 0)) != nil || n.FindJob(JobName(c.UID, 1)) != nil {
		t.Fatal("unprepare left a job")
	}
	if d.accounted(JobName(c.UID, 0)) {
		t.Error("an unprepared claim's job is still accounted")
	}
	if err := unprepare(t, d, c); err != nil {
		t.Fatalf("unprepare of a claim whose jobs are gone: %v", err)
	}
}

// The placement is taken (a job carved outside Kubernetes after the
// scheduler chose): ENOSPC with accelfs's reason, and the claim's other
// device, carved first, is given back.
func TestPrepareTaken(t *testing.T) {
	f := fakeNode(t, "node-default.json")
	if err := f.CarveAt("gpu0", "2g.35gb", 2, "notebook"); err != nil {
		t.Fatal(err)
	}
	d := newTestDriver(t, f)
	c := claim("21111111-2222-4333-8444-555555555555", "taken", "gpu0-1g-18gb-0", "gpu0-1g-18gb-3")
	res := prepare(t, d, c)
	if !errors.Is(res.Err, syscall.ENOSPC) || !strings.Contains(res.Err.Error(), "job notebook") {
		t.Fatalf("%v", res.Err)
	}
	n, _ := f.ReadNode()
	if n.FindJob(JobName(c.UID, 0)) != nil {
		t.Fatal("the first device's job was not given back")
	}
}

// A device the node no longer has, another node's pool, admin access.
func TestPrepareRefusals(t *testing.T) {
	f := fakeNode(t, "node-small.json")
	d := newTestDriver(t, f)
	for name, c := range map[string]*resourceapi.ResourceClaim{
		"MIG off":    claim("31111111-2222-4333-8444-555555555555", "a", "gpu1-1g-18gb-0"),
		"other pool": claim("41111111-2222-4333-8444-555555555555", "b", "gpu0-1g-18gb-3"),
		"admin":      claim("51111111-2222-4333-8444-555555555555", "c", "gpu0-1g-18gb-3"),
		"refused":    claim("61111111-2222-4333-8444-555555555555", "d", "ppu1-4g-48gb-0"),
	} {
		switch name {
		case "other pool":
			c.Status.Allocation.Devices.Results[0].Pool = "node-b"
		case "admin":
			admin := true
			c.Status.Allocation.Devices.Results[0].AdminAccess = &admin
		}
		if res := prepare(t, d, c); res.Err == nil {
			t.Errorf("%s: prepared", name)
		} else {
			t.Logf("%s: %v", name, res.Err)
		}
	}
	n, _ := f.ReadNode()
	for _, card := range n.Devices {
		for _, j := range card.Jobs {
			if strings.HasPrefix(j.Name, JobPrefix) && j.Name != "k8s-2f1c7a4e-9b3d-4c41-8e0a-6d5b3f9a1c27-0" {
				t.Errorf("job %s left behind", j.Name)
			}
		}
	}
	// A claim of another driver only: nothing to do.
	other := claim("71111111-2222-4333-8444-555555555555", "e", "x")
	other.Status.Allocation.Devices.Results[0].Driver = "gpu.example.com"
	if res := prepare(t, d, other); res.Err != nil || len(res.Devices) != 0 {
		t.Errorf("another driver's claim: %+v", res)
	}
}

// A job that was lost (its instance went with a reboot) is carved again.
func TestPrepareLostJob(t *testing.T) {
	f := fakeNode(t, "node-default.json")
	d := newTestDriver(t, f)
	c := claim("81111111-2222-4333-8444-555555555555", "lost", "gpu0-3g-71gb-4")
	if res := prepare(t, d, c); res.Err != nil {
		t.Fatal(res.Err)
	}
	job := JobName(c.UID, 0)
	f.Lose(job)
	if res := prepare(t, d, c); res.Err != nil {
		t.Fatal(res.Err)
	}
	st, err := f.Status("gpu0", "3g.71gb", job)
	if err != nil || st.State != accelfs.StateReady || st.Placement.Start != 4 {
		t.Fatalf("%+v %v", st, err)
	}
}

// Without its OCI hook accelfs writes no CDI spec: prepare fails after the
// wait, naming the cause, and gives the job back.
func TestPrepareNoCDI(t *testing.T) {
	f := fakeNode(t, "node-default.json")
	f.NoCDI = true
	d := newTestDriver(t, f)
	c := claim("91111111-2222-4333-8444-555555555555", "nocdi", "gpu0-7g-141gb-0")
	res := prepare(t, d, c)
	if res.Err == nil || !strings.Contains(res.Err.Error(), "accelfs-hook") {
		t.Fatalf("%v", res.Err)
	}
	n, _ := f.ReadNode()
	if n.FindJob(JobName(c.UID, 0)) != nil {
		t.Fatal("the job stayed")
	}
}

// A busy job (a container holds it): unprepare is the claim's error, so the
// kubelet retries; once free, it goes.
func TestUnprepareBusy(t *testing.T) {
	f := fakeNode(t, "node-default.json")
	d := newTestDriver(t, f)
	c := claim("a1111111-2222-4333-8444-555555555555", "busy", "ppu0-8g-96gb-0")
	if res := prepare(t, d, c); res.Err != nil {
		t.Fatal(res.Err)
	}
	job := JobName(c.UID, 0)
	f.SetBusy(job, true)
	err := unprepare(t, d, c)
	if !errors.Is(err, syscall.EBUSY) || !strings.Contains(err.Error(), "container") {
		t.Fatalf("%v", err)
	}
	if d.accounted(job) {
		t.Error("a job left behind by unprepare is still the scheduler's")
	}
	f.SetBusy(job, false)
	if err := unprepare(t, d, c); err != nil {
		t.Fatal(err)
	}
}

// At start: the jobs of a claim that still exists stay (and are accounted),
// those of a claim that is gone or was allocated elsewhere are given back,
// a busy one stays for the next look, other names are left alone.
func TestReconcile(t *testing.T) {
	f := fakeNode(t, "node-default.json")
	kept := claim("b1111111-2222-4333-8444-555555555555", "kept", "gpu0-1g-18gb-0")
	moved := claim("b2111111-2222-4333-8444-555555555555", "moved", "gpu0-1g-18gb-1")
	for job, at := range map[string]struct {
		card, profile string
		start         int
	}{
		JobName(kept.UID, 0):                               {"gpu0", "1g.18gb", 0},
		JobName(moved.UID, 0):                              {"gpu0", "1g.18gb", 2}, // allocated 1, carved at 2: not its device
		JobName("c1111111-2222-4333-8444-555555555555", 0): {"ppu0", "4g.48gb", 0},
		JobName("c2111111-2222-4333-8444-555555555555", 0): {"ppu1", "4g.48gb", 0},
		"slurm-42-0": {"ppu2", "8g.96gb", 0},
	} {
		if err := f.CarveAt(at.card, at.profile, at.start, job); err != nil {
			t.Fatal(err)
		}
	}
	busy := JobName("c2111111-2222-4333-8444-555555555555", 0)
	f.SetBusy(busy, true)
	d := newTestDriver(t, f, kept, moved)
	if err := d.reconcile(context.Background()); err != nil {
		t.Fatal(err)
	}
	n, _ := f.ReadNode()
	for job, want := range map[string]bool{
		JobName(kept.UID, 0):                               true,
		JobName(moved.UID, 0):                              false,
		JobName("c1111111-2222-4333-8444-555555555555", 0): false,
		busy:         true,
		"slurm-42-0": true,
	} {
		if got := n.FindJob(job) != nil; got != want {
			t.Errorf("%s: there %v, want %v", job, got, want)
		}
	}
	if !d.accounted(JobName(kept.UID, 0)) || d.accounted(busy) {
		t.Error("after the reconcile, the kept claim's job is accounted and the busy stale one is not")
	}
	f.SetBusy(busy, false)
	if err := d.reconcile(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n, _ := f.ReadNode(); n.FindJob(busy) != nil {
		t.Error("the stale job was not given back once free")
	}
}

// Claims are prepared in parallel: one claim waiting for its CDI spec does
// not hold up another claim's prepare (issue 35: one lock across the wait).
func TestPrepareParallel(t *testing.T) {
	f := fakeNode(t, "node-default.json")
	d := newTestDriver(t, f)
	d.cfg.CDITimeout = time.Minute
	slow := claim("d1111111-2222-4333-8444-555555555555", "slow", "gpu0-1g-18gb-0")
	fast := claim("d2111111-2222-4333-8444-555555555555", "fast", "gpu0-1g-18gb-1")
	f.HoldCDI(JobName(slow.UID, 0), true)
	slowDone := make(chan kubeletplugin.PrepareResult, 1)
	go func() {
		out, _ := d.PrepareResourceClaims(context.Background(), []*resourceapi.ResourceClaim{slow})
		slowDone <- out[slow.UID]
	}()
	// Wait until the slow claim's job exists: its prepare is in its CDI wait.
	for {
		n, _ := f.ReadNode()
		if n.FindJob(JobName(slow.UID, 0)) != nil {
			break
		}
		time.Sleep(time.Millisecond)
	}
	if res := prepare(t, d, fast); res.Err != nil {
		t.Fatal(res.Err)
	}
	select {
	case res := <-slowDone:
		t.Fatalf("the fast claim was prepared only after the slow one ended: %+v", res)
	default:
	}
	f.HoldCDI(JobName(slow.UID, 0), false)
	if res := <-slowDone; res.Err != nil {
		t.Fatal(res.Err)
	}
}

// Claims of one call are prepared side by side: both wait for their CDI
// specs at once.
func TestPrepareOneCallParallel(t *testing.T) {
	f := fakeNode(t, "node-default.json")
	d := newTestDriver(t, f)
	d.cfg.CDITimeout = time.Minute
	a := claim("d3111111-2222-4333-8444-555555555555", "a", "gpu0-1g-18gb-0")
	b := claim("d4111111-2222-4333-8444-555555555555", "b", "ppu0-4g-48gb-0")
	f.HoldCDI(JobName(a.UID, 0), true)
	f.HoldCDI(JobName(b.UID, 0), true)
	done := make(chan map[types.UID]kubeletplugin.PrepareResult, 1)
	go func() {
		out, _ := d.PrepareResourceClaims(context.Background(), []*resourceapi.ResourceClaim{a, b})
		done <- out
	}()
	// Both jobs are carved while neither's spec is there: serial prepares
	// would carve the second only after the first's wait.
	for {
		n, _ := f.ReadNode()
		if n.FindJob(JobName(a.UID, 0)) != nil && n.FindJob(JobName(b.UID, 0)) != nil {
			break
		}
		time.Sleep(time.Millisecond)
	}
	f.HoldCDI(JobName(a.UID, 0), false)
	f.HoldCDI(JobName(b.UID, 0), false)
	for uid, res := range <-done {
		if res.Err != nil {
			t.Errorf("%s: %v", uid, res.Err)
		}
	}
}

// A reconcile whose list of claims fails keeps every job, and keeps them
// taken in the scheduler's view: none is accounted, so their slices are
// not offered (issue 35: stale jobs looked free). A later look that lists
// accounts for the live claim's job and gives back the stale one.
func TestReconcileListFailsClosed(t *testing.T) {
	f := fakeNode(t, "node-default.json")
	kept := claim("e1111111-2222-4333-8444-555555555555", "kept", "gpu0-1g-18gb-0")
	stale := JobName("e2111111-2222-4333-8444-555555555555", 0)
	if err := f.CarveAt("gpu0", "1g.18gb", 0, JobName(kept.UID, 0)); err != nil {
		t.Fatal(err)
	}
	if err := f.CarveAt("gpu0", "1g.18gb", 1, stale); err != nil {
		t.Fatal(err)
	}
	d := newTestDriver(t, f, kept)
	fail := true
	d.cfg.Client.(*fake.Clientset).PrependReactor("list", "resourceclaims", func(k8stesting.Action) (bool, runtime.Object, error) {
		if fail {
			return true, nil, errors.New("the API server is away")
		}
		return false, nil, nil
	})
	if err := d.reconcile(context.Background()); err == nil {
		t.Fatal("a failed list is the reconcile's error")
	}
	n, _ := f.ReadNode()
	for _, job := range []string{JobName(kept.UID, 0), stale} {
		if n.FindJob(job) == nil {
			t.Errorf("%s given back on a failed list", job)
		}
		if d.accounted(job) {
			t.Errorf("%s accounted as the scheduler's on a failed list: its slices would look free", job)
		}
	}
	res := publish.Build(n, publish.Options{PoolName: nodeName, Accounted: d.accounted})
	for _, s := range res.Resources.Pools[nodeName].Slices {
		for _, dev := range s.Devices {
			if dev.Name == "gpu0-1g-18gb-0" || dev.Name == "gpu0-1g-18gb-1" {
				t.Errorf("%s offered while the reconcile cannot say whose its job is", dev.Name)
			}
		}
	}
	fail = false
	if err := d.reconcile(context.Background()); err != nil {
		t.Fatal(err)
	}
	n, _ = f.ReadNode()
	if n.FindJob(stale) != nil || n.FindJob(JobName(kept.UID, 0)) == nil || !d.accounted(JobName(kept.UID, 0)) {
		t.Error("the look after a failed one did not settle the jobs")
	}
}

// A job on a card whose devices are not in node.json now cannot be judged:
// it is kept.
func TestReconcileKeepsUnknown(t *testing.T) {
	f := fakeNode(t, "node-default.json")
	c := claim("e3111111-2222-4333-8444-555555555555", "c", "ppu1-4g-48gb-0")
	if err := f.CarveAt("ppu1", "4g.48gb", 0, JobName(c.UID, 0)); err != nil {
		t.Fatal(err)
	}
	d := newTestDriver(t, f, c)
	f.Refuse("ppu1", "gone from the bus")
	if err := d.reconcile(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n, _ := f.ReadNode(); n.FindJob(JobName(c.UID, 0)) == nil {
		t.Error("a job the reconcile cannot judge was given back")
	}
}
