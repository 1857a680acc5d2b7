package driver

import (
	"context"
	"strings"
	"testing"
	"time"

	"k8s.io/dynamic-resource-allocation/kubeletplugin"

	"accelfs.io/k8s/accelfs"
)

func healthOf(r kubeletplugin.DeviceHealthReport, device string) (kubeletplugin.DeviceHealth, bool) {
	for _, h := range r.Devices {
		if h.DeviceName == device {
			return h, true
		}
	}
	return kubeletplugin.DeviceHealth{}, false
}

// Each prepared device's health follows its job and its card: an Xid on the
// instance, a failed card, a lost instance make it Unhealthy; a card that
// cannot be read makes it Unknown; recovery makes it Healthy again; an unprepared claim's device is no longer reported
// (issue 32: the plugin published no health).
func TestHealthReport(t *testing.T) {
	f := fakeNode(t, "node-default.json")
	d := newTestDriver(t, f)
	c := claim("f1111111-2222-4333-8444-555555555555", "h", "gpu0-1g-18gb-0")
	if res := prepare(t, d, c); res.Err != nil {
		t.Fatal(res.Err)
	}
	job := JobName(c.UID, 0)
	check := func(want kubeletplugin.HealthStatus, msg string) {
		t.Helper()
		n, _ := f.ReadNode()
		h, ok := healthOf(d.healthReport(n, time.Now()), "gpu0-1g-18gb-0")
		if !ok || h.Health != want || !strings.Contains(h.Message, msg) || h.PoolName != nodeName {
			t.Errorf("health %+v (reported %v), want %s with %q", h, ok, want, msg)
		}
	}
	check(kubeletplugin.HealthStatusHealthy, "")
	xid, why, reset := 48, "double-bit ECC error", "gpu-reset"
	f.SetJobHealth(job, &accelfs.Health{State: accelfs.HealthFailed, Xid: &xid, Why: &why, Recovery: &reset})
	check(kubeletplugin.HealthStatusUnhealthy, "Xid 48")
	f.SetJobHealth(job, &accelfs.Health{State: accelfs.HealthOK})
	check(kubeletplugin.HealthStatusHealthy, "")
	cardWhy := "fallen off the bus (Xid 79)"
	f.SetCardState("gpu0", &accelfs.Admits{Condition: accelfs.CondFailed, Why: &cardWhy}, false, nil)
	check(kubeletplugin.HealthStatusUnhealthy, "fallen off the bus")
	f.SetCardState("gpu0", &accelfs.Admits{NewJobs: true, Condition: accelfs.CondOK}, false, nil)
	check(kubeletplugin.HealthStatusHealthy, "")
	// A card that cannot be read now: its job is as last seen, so its health
	// is not known (from admits, and from the state of an older accelfs).
	refusal := "GPU_IS_LOST reading the instances"
	f.Refuse("gpu0", refusal)
	f.SetCardState("gpu0", &accelfs.Admits{Condition: accelfs.CondRefused, Why: &refusal}, false, nil)
	check(kubeletplugin.HealthStatusUnknown, "gpu0 cannot be read now: GPU_IS_LOST")
	f.SetCardState("gpu0", nil, false, nil)
	check(kubeletplugin.HealthStatusUnknown, "gpu0 cannot be read now: GPU_IS_LOST")
	f.Refuse("gpu0", "")
	f.SetCardState("gpu0", &accelfs.Admits{NewJobs: true, Condition: accelfs.CondOK}, false, nil)
	check(kubeletplugin.HealthStatusHealthy, "")
	f.Lose(job)
	check(kubeletplugin.HealthStatusUnhealthy, "lost")
	if err := unprepare(t, d, c); err != nil {
		t.Fatal(err)
	}
	n, _ := f.ReadNode()
	if _, ok := healthOf(d.healthReport(n, time.Now()), "gpu0-1g-18gb-0"); ok {
		t.Error("an unprepared claim's device is still reported")
	}
}

// The stream sends at once and again at every new reading of node.json.
func TestWatchHealthStatus(t *testing.T) {
	f := fakeNode(t, "node-default.json")
	d := newTestDriver(t, f)
	c := claim("f2111111-2222-4333-8444-555555555555", "h", "gpu0-1g-18gb-0")
	if res := prepare(t, d, c); res.Err != nil {
		t.Fatal(res.Err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	reports := make(chan kubeletplugin.DeviceHealthReport)
	done := make(chan error, 1)
	go func() { done <- d.WatchHealthStatus(ctx, reports) }()
	if h, _ := healthOf(<-reports, "gpu0-1g-18gb-0"); h.Health != kubeletplugin.HealthStatusHealthy {
		t.Fatalf("first report %+v", h)
	}
	xid := 79
	f.SetJobHealth(JobName(c.UID, 0), &accelfs.Health{State: accelfs.HealthFailed, Xid: &xid})
	if _, err := d.readNode(); err != nil { // what the watch loop does on a wake-up
		t.Fatal(err)
	}
	for r := range reports {
		if h, _ := healthOf(r, "gpu0-1g-18gb-0"); h.Health == kubeletplugin.HealthStatusUnhealthy {
			break
		}
	}
	cancel()
	go func() {
		for range reports {
		}
	}()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
