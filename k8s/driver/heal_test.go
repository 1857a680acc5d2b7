package driver

import (
	"context"
	"strings"
	"testing"

	resourceapi "k8s.io/api/resource/v1"

	"accelfs.io/k8s/accelfs"
	"accelfs.io/k8s/publish"
)

func publishedDevice(t *testing.T, d *Driver, f interface {
	ReadNode() (*accelfs.Node, error)
}, name string) (resourceapi.Device, bool) {
	t.Helper()
	n, err := f.ReadNode()
	if err != nil {
		t.Fatal(err)
	}
	res := publish.Build(n, publish.Options{PoolName: nodeName, Accounted: d.accounted, Evict: d.evicted})
	for _, s := range res.Resources.Pools[nodeName].Slices {
		for _, dev := range s.Devices {
			if dev.Name == name {
				return dev, true
			}
		}
	}
	return resourceapi.Device{}, false
}

func hasTaint(dev resourceapi.Device, key string, effect resourceapi.DeviceTaintEffect) bool {
	for _, t := range dev.Taints {
		if t.Key == key && t.Effect == effect {
			return true
		}
	}
	return false
}

// A running claim's instance is lost: the plugin carves the job again at
// its placement, so the container's restart resolves its CDI device
// (issue 35, observation 2: every restart failed for good).
func TestHealLostJob(t *testing.T) {
	f := fakeNode(t, "node-default.json")
	d := newTestDriver(t, f)
	c := claim("a7111111-2222-4333-8444-555555555555", "heal", "gpu0-2g-35gb-2")
	if res := prepare(t, d, c); res.Err != nil {
		t.Fatal(res.Err)
	}
	job := JobName(c.UID, 0)
	f.Lose(job)
	n, _ := f.ReadNode()
	d.heal(context.Background(), n)
	d.wg.Wait()
	st, err := f.Status("gpu0", "2g.35gb", job)
	if err != nil || st.State != accelfs.StateReady || st.Placement.Start != 2 {
		t.Fatalf("not carved again at its placement: %+v %v", st, err)
	}
	if ok, _ := f.HasCDIDevice(job); !ok {
		t.Error("the job's CDI device is not back")
	}
	if _, evict := d.evicted("gpu0-2g-35gb-2"); evict || d.healed != 1 {
		t.Errorf("healed %d, evict %v", d.healed, evict)
	}
	// A claim unprepared is not healed.
	if err := unprepare(t, d, c); err != nil {
		t.Fatal(err)
	}
}

// A lost instance still attached to the container it was given (the pod's
// container runs on without it) cannot be removed from the tree yet: the
// heal waits for the container to exit, without tainting the device, and
// carves the job again once it has (found on the real cluster: the taint
// evicted every pod whose instance was lost while its container ran).
func TestHealWaitsForContainers(t *testing.T) {
	f := fakeNode(t, "node-default.json")
	d := newTestDriver(t, f)
	c := claim("ac111111-2222-4333-8444-555555555555", "heal", "gpu0-2g-35gb-2")
	if res := prepare(t, d, c); res.Err != nil {
		t.Fatal(res.Err)
	}
	job := JobName(c.UID, 0)
	f.SetBusy(job, true)
	f.Lose(job)
	n, _ := f.ReadNode()
	d.heal(context.Background(), n)
	d.wg.Wait()
	if st, err := f.Status("gpu0", "2g.35gb", job); err != nil || st.State != accelfs.StateLost {
		t.Fatalf("healed while attached: %+v %v", st, err)
	}
	if _, evict := d.evicted("gpu0-2g-35gb-2"); evict {
		t.Fatal("tainted while its container runs")
	}
	f.SetBusy(job, false) // the container exited
	n, _ = f.ReadNode()
	d.heal(context.Background(), n)
	d.wg.Wait()
	st, err := f.Status("gpu0", "2g.35gb", job)
	if err != nil || st.State != accelfs.StateReady || st.Placement.Start != 2 {
		t.Fatalf("not carved again at its placement: %+v %v", st, err)
	}
	if _, evict := d.evicted("gpu0-2g-35gb-2"); evict || d.healed != 1 {
		t.Errorf("healed %d, evict %v", d.healed, evict)
	}
	if err := unprepare(t, d, c); err != nil {
		t.Fatal(err)
	}
}

// A lost instance whose placement was taken meanwhile cannot be carved
// again: its device is tainted NoExecute so the pod is evicted and
// scheduled elsewhere; the claim's unprepare lifts the taint.
func TestHealTakenEvicts(t *testing.T) {
	f := fakeNode(t, "node-default.json")
	d := newTestDriver(t, f)
	c := claim("a8111111-2222-4333-8444-555555555555", "heal", "gpu0-2g-35gb-2")
	if res := prepare(t, d, c); res.Err != nil {
		t.Fatal(res.Err)
	}
	job := JobName(c.UID, 0)
	f.Lose(job)
	f.AddOrphan("gpu0", "2g.35gb", 2)
	n, _ := f.ReadNode()
	d.heal(context.Background(), n)
	d.wg.Wait()
	dev, ok := publishedDevice(t, d, f, "gpu0-2g-35gb-2")
	if !ok || !hasTaint(dev, publish.TaintUnservable, resourceapi.DeviceTaintEffectNoExecute) {
		t.Fatalf("published %v, taints %+v", ok, dev.Taints)
	}
	if err := unprepare(t, d, c); err != nil {
		t.Fatal(err)
	}
	if dev, ok := publishedDevice(t, d, f, "gpu0-2g-35gb-2"); ok {
		t.Errorf("after the unprepare the taken device is still published: %+v", dev.Taints)
	}
}

// A placement taken outside Kubernetes after the scheduler chose it: the
// prepare fails saying so, and the device is tainted NoExecute so the pod
// is rescheduled rather than waiting until someone deletes it (issue 35,
// observation 3).
func TestPrepareTakenEvicts(t *testing.T) {
	f := fakeNode(t, "node-default.json")
	d := newTestDriver(t, f)
	f.AddOrphan("gpu0", "1g.18gb", 5)
	c := claim("a9111111-2222-4333-8444-555555555555", "late", "gpu0-1g-18gb-5")
	res := prepare(t, d, c)
	if res.Err == nil || !strings.Contains(res.Err.Error(), publish.TaintUnservable) {
		t.Fatalf("%v", res.Err)
	}
	dev, ok := publishedDevice(t, d, f, "gpu0-1g-18gb-5")
	if !ok || !hasTaint(dev, publish.TaintUnservable, resourceapi.DeviceTaintEffectNoExecute) {
		t.Fatalf("published %v, taints %+v", ok, dev.Taints)
	}
	if err := unprepare(t, d, c); err != nil {
		t.Fatal(err)
	}
	if _, ok := publishedDevice(t, d, f, "gpu0-1g-18gb-5"); ok {
		t.Error("after the unprepare the taken device is still published")
	}
}

// A placement held by one of the plugin's own jobs being given back is not
// taken behind the scheduler's back: no taint, the kubelet retries.
func TestPrepareHeldByOwnJobNoEvict(t *testing.T) {
	f := fakeNode(t, "node-default.json")
	d := newTestDriver(t, f)
	old := claim("aa111111-2222-4333-8444-555555555555", "old", "gpu0-1g-18gb-6")
	if res := prepare(t, d, old); res.Err != nil {
		t.Fatal(res.Err)
	}
	f.SetBusy(JobName(old.UID, 0), true)
	if err := unprepare(t, d, old); err == nil {
		t.Fatal("busy job unprepared")
	}
	c := claim("ab111111-2222-4333-8444-555555555555", "new", "gpu0-1g-18gb-6")
	if res := prepare(t, d, c); res.Err == nil || strings.Contains(res.Err.Error(), publish.TaintUnservable) {
		t.Fatalf("%v", res.Err)
	}
	if _, evict := d.evicted("gpu0-1g-18gb-6"); evict {
		t.Error("tainted for one of its own jobs on the way out")
	}
}
