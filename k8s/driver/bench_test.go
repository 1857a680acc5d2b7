package driver_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	drapb "k8s.io/kubelet/pkg/apis/dra/v1"

	"accelfs.io/k8s/accelfs"
	"accelfs.io/k8s/accelfs/accelfstest"
	"accelfs.io/k8s/driver"
	"accelfs.io/k8s/internal/kubetest"
	"accelfs.io/k8s/publish"
)

// BenchmarkPrepareVsMkdir is docs/performance.md's "Prepare to CDI id": a
// claim of one device prepared through the plugin's DRA socket as the
// kubelet calls it (the library fetches the claim, the plugin reads
// node.json, carves at the placement, reads the job's status and waits for
// its CDI device), then unprepared; against, in the same run and on the
// same mount, the bare mkdir of the same job at the same placement
// (rmdir'd after), and the gRPC round trip of an empty
// NodePrepareResources. Reported: each in microseconds and
// (prepare - round trip) / mkdir, whose goal is at most 1.2.
func BenchmarkPrepareVsMkdir(b *testing.B) {
	sim := accelfstest.StartSim(b, "")
	// klog's own logger, at its default verbosity: the test logger's
	// verbose lines would be most of what is measured.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	client := kubetest.Client(nodeName)
	pluginDir, registrarDir := b.TempDir(), b.TempDir()
	d, err := driver.Start(ctx, driver.Config{FS: sim.Mount, Client: client, NodeName: nodeName,
		PluginDataDir: pluginDir, RegistrarDir: registrarDir, Fallback: time.Hour, ReconcileEvery: -1})
	if err != nil {
		b.Fatal(err)
	}
	defer d.Stop()
	k := register(b, registrarDir)

	c := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "bench", UID: "b1111111-2222-4333-8444-555555555555"}}
	c.Status.Allocation = &resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{Results: []resourceapi.DeviceRequestAllocationResult{
		{Request: "mig", Driver: publish.DriverName, Pool: nodeName, Device: "gpu0-3g-71gb-4"}}}}
	if _, err := client.ResourceV1().ResourceClaims(c.Namespace).Create(ctx, c, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	job := driver.JobName(c.UID, 0)
	at := filepath.Join(sim.Root, "gpu0", "mig", "3g.71gb", "placements", "4", job)
	mkdir := func() time.Duration {
		t0 := time.Now()
		if err := os.Mkdir(at, 0o755); err != nil {
			b.Fatal(err)
		}
		took := time.Since(t0)
		if err := os.Remove(at); err != nil {
			b.Fatal(err)
		}
		return took
	}
	roundTrip := func() time.Duration {
		t0 := time.Now()
		if _, err := k.dra.NodePrepareResources(ctx, &drapb.NodePrepareResourcesRequest{}); err != nil {
			b.Fatal(err)
		}
		return time.Since(t0)
	}
	prepare := func() time.Duration {
		t0 := time.Now()
		res, err := k.prepare(c)
		took := time.Since(t0)
		if err != nil || res[string(c.UID)].Error != "" {
			b.Fatalf("prepare: %v %v", err, res)
		}
		if ids := res[string(c.UID)].Devices[0].CdiDeviceIds; len(ids) != 1 || ids[0] != accelfs.CDIDeviceID(job) {
			b.Fatalf("CDI ids %v", ids)
		}
		if msg, err := k.unprepare(c); err != nil || msg != "" {
			b.Fatalf("unprepare: %v %s", err, msg)
		}
		return took
	}
	// Warm: the claim in the library's informer, the daemon's caches.
	mkdir()
	roundTrip()
	prepare()

	var tm, tr, tp time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		tm += mkdir()
		tr += roundTrip()
		tp += prepare()
	}
	b.StopTimer()
	n := float64(b.N)
	us := func(t time.Duration) float64 { return float64(t.Microseconds()) / n }
	b.ReportMetric(us(tm), "mkdir-us")
	b.ReportMetric(us(tr), "rtt-us")
	b.ReportMetric(us(tp), "prepare-us")
	b.ReportMetric(float64(tp-tr)/float64(tm), "(prepare-rtt)/mkdir")
	b.ReportMetric(0, "ns/op") // the three are timed apart; the loop's total is not one figure
}

// BenchmarkPrepareBurst is docs/performance.md's "Prepares in parallel": 8
// claims, one whole-card partition each on 8 cards, prepared in one
// NodePrepareResources call (the kubelet's burst of pods) against the same
// 8 prepared one call after another, in the same run. Reported: each in
// milliseconds and sequential/burst (above 1: the claims' carves and CDI
// waits overlap).
func BenchmarkPrepareBurst(b *testing.B) {
	sim := accelfstest.StartSim(b, "")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	client := kubetest.Client(nodeName)
	pluginDir, registrarDir := b.TempDir(), b.TempDir()
	d, err := driver.Start(ctx, driver.Config{FS: sim.Mount, Client: client, NodeName: nodeName,
		PluginDataDir: pluginDir, RegistrarDir: registrarDir, Fallback: time.Hour, ReconcileEvery: -1})
	if err != nil {
		b.Fatal(err)
	}
	defer d.Stop()
	k := register(b, registrarDir)
	var claims []*resourceapi.ResourceClaim
	for i := 0; i < 8; i++ {
		c := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: fmt.Sprintf("burst-%d", i),
			UID: types.UID(fmt.Sprintf("c%07d-2222-4333-8444-555555555555", i))}}
		c.Status.Allocation = &resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{Results: []resourceapi.DeviceRequestAllocationResult{
			{Request: "mig", Driver: publish.DriverName, Pool: nodeName, Device: fmt.Sprintf("ppu%d-8g-96gb-0", i)}}}}
		if _, err := client.ResourceV1().ResourceClaims(c.Namespace).Create(ctx, c, metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
		claims = append(claims, c)
	}
	check := func(res map[string]*drapb.NodePrepareResourceResponse, err error, cs ...*resourceapi.ResourceClaim) {
		if err != nil {
			b.Fatal(err)
		}
		for _, c := range cs {
			if r := res[string(c.UID)]; r == nil || r.Error != "" || len(r.Devices) != 1 {
				b.Fatalf("prepare %s: %v", c.Name, r)
			}
		}
	}
	release := func() {
		for _, c := range claims {
			if msg, err := k.unprepare(c); err != nil || msg != "" {
				b.Fatalf("unprepare: %v %s", err, msg)
			}
		}
	}
	burst := func() time.Duration {
		t0 := time.Now()
		res, err := k.prepare(claims...)
		took := time.Since(t0)
		check(res, err, claims...)
		release()
		return took
	}
	oneByOne := func() time.Duration {
		var took time.Duration
		for _, c := range claims {
			t0 := time.Now()
			res, err := k.prepare(c)
			took += time.Since(t0)
			check(res, err, c)
		}
		release()
		return took
	}
	burst()
	oneByOne()
	var tb, ts time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		tb += burst()
		ts += oneByOne()
	}
	b.StopTimer()
	n := float64(b.N)
	b.ReportMetric(float64(tb.Microseconds())/n/1000, "burst-ms")
	b.ReportMetric(float64(ts.Microseconds())/n/1000, "one-by-one-ms")
	b.ReportMetric(float64(ts)/float64(tb), "one-by-one/burst")
	b.ReportMetric(0, "ns/op")
}
