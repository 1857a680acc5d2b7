package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
)

// While the driver starts, the process is alive (liveness) and not ready;
// once started, its handler answers every path.
func TestProbesWhileStarting(t *testing.T) {
	var p probes
	for path, want := range map[string]int{"/healthz": 200, "/readyz": 503, "/metrics": 503, "/other": 404} {
		rec := httptest.NewRecorder()
		p.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
		if rec.Code != want {
			t.Errorf("starting: %s answered %d, want %d", path, rec.Code, want)
		}
	}
	p.started(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "driver "+r.URL.Path) }))
	rec := httptest.NewRecorder()
	p.ServeHTTP(rec, httptest.NewRequest("GET", "/readyz", nil))
	if rec.Code != 200 || rec.Body.String() != "driver /readyz" {
		t.Errorf("started: /readyz answered %d %q", rec.Code, rec.Body.String())
	}
}
