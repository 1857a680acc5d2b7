package driver

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2/ktesting"

	"accelfs.io/k8s/accelfs"
	"accelfs.io/k8s/accelfs/accelfstest"
	"accelfs.io/k8s/internal/kubetest"
)

// until polls cond until it holds; a liveness bound, not a timing.
func until(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("timed out waiting for %s", what)
}

func jobOf(t *testing.T, fs accelfs.Interface, job string) *accelfs.Job {
	t.Helper()
	n, err := fs.ReadNode()
	if err != nil {
		t.Fatal(err)
	}
	return n.FindJob(job)
}

// Prepare and unprepare against the real daemon (the small simulated node:
// two PPUs, two H200s, the second with MIG off).
func TestSimPrepareUnprepare(t *testing.T) {
	sim := accelfstest.StartSim(t, "small")
	fs := sim.Mount
	d := newTestDriver(t, fs)
	d.cfg.CDITimeout = 20 * time.Second

	// Two devices: carved at their placements, their CDI devices in the daemon's specs.
	c := claim("d1111111-2222-4333-8444-555555555555", "two", "gpu0-1g-18gb-3", "ppu0-4g-48gb-4")
	res := prepare(t, d, c)
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	for i, want := range []struct {
		card, profile string
		start         int
	}{{"gpu0", "1g.18gb", 3}, {"ppu0", "4g.48gb", 4}} {
		job := JobName(c.UID, i)
		st, err := sim.Status(want.card, want.profile, job)
		if err != nil || st.State != accelfs.StateReady || st.Placement.Start != want.start {
			t.Fatalf("%s: %+v %v", job, st, err)
		}
		if ok, err := sim.HasCDIDevice(job); !ok || err != nil {
			t.Fatalf("%s is not in %s: %v", job, sim.CDIDir, err)
		}
		if res.Devices[i].CDIDeviceIDs[0] != "accelfs.io/mig="+job {
			t.Errorf("CDI id %v", res.Devices[i].CDIDeviceIDs)
		}
	}
	uuid := jobOf(t, sim, JobName(c.UID, 0)).UUID
	if again := prepare(t, d, c); again.Err != nil || jobOf(t, sim, JobName(c.UID, 0)).UUID != uuid {
		t.Fatalf("a repeated prepare: %v (the job must be the same instance)", again.Err)
	}

	// A job outside Kubernetes on the placement the scheduler chose: ENOSPC, the reason, nothing left.
	if err := os.Mkdir(filepath.Join(sim.Root, "gpu0", "mig", "2g.35gb", "notebook"), 0o755); err != nil {
		t.Fatal(err)
	}
	taken := claim("d2111111-2222-4333-8444-555555555555", "taken", "gpu0-1g-18gb-5", "gpu0-1g-18gb-1")
	res = prepare(t, d, taken)
	if !errors.Is(res.Err, syscall.ENOSPC) {
		t.Fatalf("prepare on a taken placement: %v", res.Err)
	}
	t.Logf("taken: %v", res.Err)
	if !strings.Contains(res.Err.Error(), "job notebook") {
		t.Errorf("accelfs's reason does not name the holder: %v", res.Err)
	}
	if jobOf(t, sim, JobName(taken.UID, 0)) != nil {
		t.Fatal("the claim's first device was not given back")
	}

	// Busy: something runs on the instance, rmdir answers EBUSY, the kubelet retries.
	job := JobName(c.UID, 0)
	j := jobOf(t, sim, job)
	busy := func(n int) {
		t.Helper()
		if out, err := sim.SMI("-f", "gpu", "sim", "busy", "-i", "0", "-gi", fmt.Sprint(*j.GI), "-ci", fmt.Sprint(*j.CI), fmt.Sprint(n)); err != nil {
			t.Fatalf("accel-smi sim busy: %v %s", err, out)
		}
	}
	busy(1)
	err := unprepare(t, d, c)
	if !errors.Is(err, syscall.EBUSY) {
		t.Fatalf("unprepare of a busy job: %v", err)
	}
	t.Logf("busy: %v", err)
	if jobOf(t, sim, job) == nil || jobOf(t, sim, JobName(c.UID, 1)) != nil {
		t.Fatal("the busy job must stay, the other go")
	}
	busy(0)
	if err := unprepare(t, d, c); err != nil {
		t.Fatal(err)
	}
	if err := unprepare(t, d, c); err != nil {
		t.Fatalf("unprepare of jobs already gone: %v", err)
	}

	// Lost: the instance destroyed by hand; the next prepare carves it again.
	lost := claim("d3111111-2222-4333-8444-555555555555", "lost", "gpu0-3g-71gb-4")
	if res := prepare(t, d, lost); res.Err != nil {
		t.Fatal(res.Err)
	}
	job = JobName(lost.UID, 0)
	j = jobOf(t, sim, job)
	for _, args := range [][]string{{"-ci", fmt.Sprint(*j.CI), "-dci"}, {"-dgi"}} {
		if out, err := sim.SMI(append([]string{"-f", "gpu", "mig", "-i", "0", "-gi", fmt.Sprint(*j.GI)}, args...)...); err != nil {
			t.Fatalf("accel-smi: %v %s", err, out)
		}
	}
	until(t, job+" lost", func() bool { j := jobOf(t, sim, job); return j != nil && j.State == accelfs.StateLost })
	if res := prepare(t, d, lost); res.Err != nil {
		t.Fatal(res.Err)
	}
	if j := jobOf(t, sim, job); j.State != accelfs.StateReady || *j.Placement != (accelfs.Span{Start: 4, Size: 4}) {
		t.Fatalf("after the loss: %+v", j)
	}
	if err := unprepare(t, d, lost); err != nil {
		t.Fatal(err)
	}
}

func withheld(d *Driver, device string) bool {
	_, last := d.Published()
	if last == nil {
		return false
	}
	for _, s := range last.Pools[nodeName].Slices {
		for _, dev := range s.Devices {
			if dev.Name == device {
				return false
			}
		}
	}
	return true
}

// The whole plugin on the real daemon: the start reconciles (a claim's job
// whose claim is gone is given back, one whose claim exists stays), a job
// carved outside Kubernetes withdraws its placements at once (a wake-up from
// poll on node.json: the periodic re-read is an hour away), and so does one
// carved after the daemon restarted (the watch is opened again).
func TestSimStartWatchRestart(t *testing.T) {
	sim := accelfstest.StartSim(t, "small")
	fs := sim.Mount
	kept := claim("e1111111-2222-4333-8444-555555555555", "kept", "gpu0-1g-18gb-0")
	goneJob := JobName("e2111111-2222-4333-8444-555555555555", 0)
	if err := fs.CarveAt("gpu0", "1g.18gb", 0, JobName(kept.UID, 0)); err != nil {
		t.Fatal(err)
	}
	if err := fs.CarveAt("ppu0", "8g.96gb", 0, goneJob); err != nil {
		t.Fatal(err)
	}
	client := kubetest.Client(nodeName)
	if _, err := client.ResourceV1().ResourceClaims("default").Create(context.Background(), kept, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pluginDir, _ := os.MkdirTemp("", "dra-plugin-")
	registrarDir, _ := os.MkdirTemp("", "dra-reg-")
	defer os.RemoveAll(pluginDir)
	defer os.RemoveAll(registrarDir)
	_, ctx := ktesting.NewTestContext(t)
	d, err := Start(ctx, Config{FS: fs, Client: client, NodeName: nodeName, PluginDataDir: pluginDir, RegistrarDir: registrarDir,
		Fallback: time.Hour, ReconcileEvery: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Stop()
	if jobOf(t, sim, goneJob) != nil {
		t.Error("the job of a claim that is gone survived the start")
	}
	if jobOf(t, sim, JobName(kept.UID, 0)) == nil || !d.accounted(JobName(kept.UID, 0)) {
		t.Error("the job of a claim that exists was not kept and accounted")
	}
	if withheld(d, "gpu0-1g-18gb-0") || withheld(d, "ppu0-8g-96gb-0") {
		t.Error("the kept claim's device, or the freed placement, is not offered")
	}

	if err := os.Mkdir(filepath.Join(sim.Root, "ppu0", "mig", "4g.48gb", "outside-1"), 0o755); err != nil {
		t.Fatal(err)
	}
	until(t, "ppu0-4g-48gb-0 withdrawn after a carve outside Kubernetes", func() bool { return withheld(d, "ppu0-4g-48gb-0") })
	if withheld(d, "ppu0-4g-48gb-4") {
		t.Error("a free placement was withdrawn")
	}

	sim.Stop()
	sim.Start()
	if err := os.Mkdir(filepath.Join(sim.Root, "ppu0", "mig", "4g.48gb", "outside-2"), 0o755); err != nil {
		t.Fatal(err)
	}
	until(t, "ppu0-4g-48gb-4 withdrawn after accelfs restarted", func() bool { return withheld(d, "ppu0-4g-48gb-4") })
	if jobOf(t, sim, JobName(kept.UID, 0)) == nil || withheld(d, "gpu0-1g-18gb-0") {
		t.Error("the kept claim's job or device did not come back with the daemon")
	}
	published, _ := d.Published()
	t.Logf("the pool was published %d times", published)
}
