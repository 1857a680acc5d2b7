package main

import (
	"io"
	"net/http"
	"sync/atomic"
)

// probes serves /healthz, /readyz and /metrics from the process's start, and
// the driver's own handler once it has started. A start can take a while (the
// reconcile lists the cluster's claims, the ResourceSlice informer syncs, the
// API server may be slow or away): were nothing served meanwhile, the
// DaemonSet's liveness probe would kill a start in progress, again and again.
// Until then /healthz says the process runs and /readyz that it starts.
type probes struct {
	ready atomic.Pointer[http.Handler]
}

// started hands every path over to the driver's handler.
func (p *probes) started(h http.Handler) { p.ready.Store(&h) }

func (p *probes) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if h := p.ready.Load(); h != nil {
		(*h).ServeHTTP(w, r)
		return
	}
	switch r.URL.Path {
	case "/healthz":
		io.WriteString(w, "ok: starting\n")
	case "/readyz", "/metrics":
		http.Error(w, "starting: reconciling and publishing the node's slices", http.StatusServiceUnavailable)
	default:
		http.NotFound(w, r)
	}
}
