package driver

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes/fake"

	"accelfs.io/k8s/pending"
)

// Prepare and unprepare latency and errors are counted and served in
// Prometheus's text format; /healthz answers while the plugin runs and
// /readyz only once it is registered and has published.
func TestMetrics(t *testing.T) {
	f := fakeNode(t, "node-default.json")
	d := newTestDriver(t, f)
	ok := claim("ac111111-2222-4333-8444-555555555555", "ok", "gpu0-1g-18gb-0")
	bad := claim("ad111111-2222-4333-8444-555555555555", "bad", "no-such-device")
	if res := prepare(t, d, ok); res.Err != nil {
		t.Fatal(res.Err)
	}
	if res := prepare(t, d, bad); res.Err == nil {
		t.Fatal("a device that is not there was prepared")
	}
	if err := unprepare(t, d, ok); err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	d.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body := rec.Body.String()
	for _, want := range []string{
		"accelfs_dra_prepare_seconds_count 2\n",
		"accelfs_dra_prepare_errors_total 1\n",
		"accelfs_dra_unprepare_seconds_count 1\n",
		"accelfs_dra_unprepare_errors_total 0\n",
		`accelfs_dra_prepare_seconds_bucket{le="+Inf"} 2` + "\n",
		"# TYPE accelfs_dra_prepare_seconds histogram\n",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("no %q in\n%s", want, body)
		}
	}
	if strings.Contains(body, "accelfs_dra_pending") {
		t.Errorf("pending-pod metrics without --pending-events:\n%s", body)
	}
	rec = httptest.NewRecorder()
	d.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/healthz", nil))
	if rec.Code != 200 {
		t.Errorf("/healthz %d", rec.Code)
	}
	rec = httptest.NewRecorder()
	d.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/readyz", nil))
	if rec.Code != 503 || !strings.Contains(rec.Body.String(), "not published") {
		t.Errorf("/readyz before any publish: %d %s", rec.Code, rec.Body.String())
	}
}

// With --pending-events the explainer's counts are served too, 0 while no
// card is tainted (no pod watched).
func TestMetricsPendingEvents(t *testing.T) {
	f := fakeNode(t, "node-default.json")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	client := fake.NewClientset()
	d, _, err := newDriver(ctx, Config{FS: f, Client: client, NodeName: nodeName, CDITimeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	d.pending = pending.Start(ctx, client, nodeName, pending.Options{}) // as Start does with PendingEvents
	rec := httptest.NewRecorder()
	d.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	for _, want := range []string{
		"# TYPE accelfs_dra_pending_events_total counter\naccelfs_dra_pending_events_total 0\n",
		"accelfs_dra_pending_events_delayed_total 0\n",
		"accelfs_dra_pending_events_failed_total 0\n",
		"# TYPE accelfs_dra_pending_watching gauge\naccelfs_dra_pending_watching 0\n",
	} {
		if !strings.Contains(rec.Body.String(), want) {
			t.Errorf("no %q in\n%s", want, rec.Body.String())
		}
	}
}
