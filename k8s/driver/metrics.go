package driver

import (
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"
)

// latencyBuckets are the upper bounds (seconds) of the prepare and
// unprepare histograms: a carve is milliseconds, a CDI wait up to
// --cdi-timeout.
var latencyBuckets = []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 30}

type histogram struct {
	counts []uint64 // per bucket, then +Inf
	sum    float64
	n      uint64
}

func (h *histogram) observe(v float64) {
	if h.counts == nil {
		h.counts = make([]uint64, len(latencyBuckets)+1)
	}
	i := sort.SearchFloat64s(latencyBuckets, v)
	h.counts[i]++
	h.sum += v
	h.n++
}

// metrics are the plugin's own (Prometheus text format, /metrics):
// accelfs's own are in its mount's metrics file.
type metrics struct {
	mu                 sync.Mutex
	prepare, unprepare histogram
	prepareErrors      uint64
	unprepareErrors    uint64
	publishes          uint64
	healed             uint64
	evicted            uint64
}

func (m *metrics) observe(h *histogram, errs *uint64, start time.Time, err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	h.observe(time.Since(start).Seconds())
	if err != nil {
		*errs++
	}
}

func (m *metrics) add(c *uint64) {
	m.mu.Lock()
	*c++
	m.mu.Unlock()
}

func writeHistogram(w io.Writer, name, help string, h histogram) {
	fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s histogram\n", name, help, name)
	var cum uint64
	for i, le := range latencyBuckets {
		if h.counts != nil {
			cum += h.counts[i]
		}
		fmt.Fprintf(w, "%s_bucket{le=\"%g\"} %d\n", name, le, cum)
	}
	fmt.Fprintf(w, "%s_bucket{le=\"+Inf\"} %d\n%s_sum %g\n%s_count %d\n", name, h.n, name, h.sum, name, h.n)
}

func writeCounter(w io.Writer, name, help, typ string, v uint64) {
	fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s %s\n%s %d\n", name, help, name, typ, name, v)
}

// WriteMetrics writes the plugin's metrics in Prometheus's text format.
func (d *Driver) WriteMetrics(w io.Writer) {
	m := &d.metrics
	m.mu.Lock()
	prep, unprep := m.prepare, m.unprepare
	pe, ue, healed, evicted := m.prepareErrors, m.unprepareErrors, m.healed, m.evicted
	m.mu.Unlock()
	pubs, _ := d.Published()
	d.liveMu.Lock()
	prepared, evicting := len(d.live), len(d.evict)
	d.liveMu.Unlock()
	writeHistogram(w, "accelfs_dra_prepare_seconds", "Time to prepare one claim (carve and CDI wait).", prep)
	writeCounter(w, "accelfs_dra_prepare_errors_total", "Claims whose prepare failed (the kubelet retries).", "counter", pe)
	writeHistogram(w, "accelfs_dra_unprepare_seconds", "Time to unprepare one claim.", unprep)
	writeCounter(w, "accelfs_dra_unprepare_errors_total", "Claims whose unprepare failed (the kubelet retries).", "counter", ue)
	writeCounter(w, "accelfs_dra_publishes_total", "Times the node's ResourceSlices were handed to the controller.", "counter", uint64(pubs))
	writeCounter(w, "accelfs_dra_healed_total", "Lost instances of running claims carved again.", "counter", healed)
	writeCounter(w, "accelfs_dra_unservable_total", "Devices tainted accelfs.io/unservable (NoExecute).", "counter", evicted)
	writeCounter(w, "accelfs_dra_claims_prepared", "Claims prepared on this node.", "gauge", uint64(prepared))
	writeCounter(w, "accelfs_dra_devices_unservable", "Devices tainted accelfs.io/unservable now.", "gauge", uint64(evicting))
	if d.pending != nil { // --pending-events
		posted, delayed, failed := d.pending.Counts()
		watching := uint64(0)
		if d.pending.Watching() {
			watching = 1
		}
		writeCounter(w, "accelfs_dra_pending_events_total", "Events posted on pending pods that this node's tainted cards keep.", "counter", uint64(posted))
		writeCounter(w, "accelfs_dra_pending_events_delayed_total", "Such Events put off by the rate limit (posted later).", "counter", uint64(delayed))
		writeCounter(w, "accelfs_dra_pending_events_failed_total", "Such Events the API server refused (tried again).", "counter", uint64(failed))
		writeCounter(w, "accelfs_dra_pending_watching", "1 while a card of this node is tainted and unscheduled pods are watched.", "gauge", watching)
	}
}

// Handler serves /metrics, /healthz (the plugin runs: its context is not
// done) and /readyz (registered with the kubelet and the slices published
// once), for the DaemonSet's probes and Prometheus.
func (d *Driver) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/metrics", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		d.WriteMetrics(w)
	})
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		if err := d.ctx.Err(); err != nil {
			http.Error(w, "stopped: "+causeOf(d), http.StatusServiceUnavailable)
			return
		}
		io.WriteString(w, "ok\n")
	})
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		if why := d.notReady(); why != "" {
			http.Error(w, why, http.StatusServiceUnavailable)
			return
		}
		io.WriteString(w, "ok\n")
	})
	return mux
}

func causeOf(d *Driver) string {
	if err := d.Err(); err != nil {
		return err.Error()
	}
	return ""
}

// notReady says why the plugin does not serve yet ("" when it does).
func (d *Driver) notReady() string {
	var why []string
	if d.ctx.Err() != nil {
		why = append(why, "stopped")
	}
	if n, _ := d.Published(); n == 0 {
		why = append(why, "the slices are not published yet")
	}
	if d.helper == nil {
		why = append(why, "the kubelet plugin is not started")
	} else if st := d.helper.RegistrationStatus(); st == nil || !st.PluginRegistered {
		why = append(why, "not registered with the kubelet")
	}
	return strings.Join(why, "; ")
}
