// Package accelfstest is an in-memory accelfs for unit tests: it keeps a
// node.json model and answers CarveAt, Remove, Status and the CDI lookup with
// the errnos docs/tree.md gives, so the kubelet plugin can be tested without
// a mount. Tests against a real simulated mount use accelfs.Mount instead.
package accelfstest

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"accelfs.io/k8s/accelfs"
)

// Fake is an accelfs node in memory.
type Fake struct {
	mu      sync.Mutex
	node    *accelfs.Node
	cdi     map[string]bool
	cdiHeld map[string]bool
	busy    map[string]bool
	lastErr map[string]string // each profile directory's last_error, by card/profile
	changed chan struct{}     // closed at every change, then replaced
	// NoCDI makes carved jobs never appear in the CDI specs (no hook installed).
	NoCDI bool
	// Carves counts successful CarveAt calls.
	Carves int
}

var _ accelfs.Interface = (*Fake)(nil)

// New starts from a node.json, its jobs and instances included.
func New(node *accelfs.Node) *Fake {
	f := &Fake{node: clone(node), cdi: map[string]bool{}, busy: map[string]bool{}, lastErr: map[string]string{}, changed: make(chan struct{})}
	for _, d := range f.node.Devices {
		for _, j := range d.Jobs {
			if j.State == accelfs.StateReady {
				f.cdi[j.Name] = true
			}
		}
	}
	f.recompute()
	return f
}

// FromFile is New over a node.json file.
func FromFile(path string) (*Fake, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	n, err := accelfs.ParseNode(data)
	if err != nil {
		return nil, err
	}
	return New(n), nil
}

func clone(n *accelfs.Node) *accelfs.Node {
	data, err := json.Marshal(n)
	if err != nil {
		panic(err)
	}
	var out accelfs.Node
	if err := json.Unmarshal(data, &out); err != nil {
		panic(err)
	}
	return &out
}

func errno(op, path string, e syscall.Errno, reason string) error {
	return &accelfs.OpError{Op: op, Path: path, Err: e, Reason: reason}
}

// looked is a failure of the kernel's lookup, before accelfs is asked: the
// profile directory's last_error is not touched, and the mount's error
// carries whatever it says. The caller holds mu.
func (f *Fake) looked(card, profile, op, path string, e syscall.Errno) error {
	return errno(op, path, e, f.lastErr[card+"/"+profile])
}

// refused is accelfs's own refusal: last_error says why. The caller holds mu.
func (f *Fake) refused(card, profile, op, path string, e syscall.Errno, why string) error {
	f.lastErr[card+"/"+profile] = why
	return errno(op, path, e, why)
}

// recompute sets every profile's available the way accelfs counts it
// (repeated lowest-free picks against every live instance) and bumps the
// generation; the caller holds mu.
func (f *Fake) recompute() {
	for i := range f.node.Devices {
		d := &f.node.Devices[i]
		for p := range d.Profiles {
			prof := &d.Profiles[p]
			if !d.OK() {
				prof.Available = 0
				continue
			}
			var used []accelfs.Span
			for _, in := range d.Instances {
				used = append(used, in.Placement)
			}
			prof.Available = 0
			for {
				pick := -1
				for k, pl := range prof.Placements {
					if free(pl, used) && (pick < 0 || pl.Start < prof.Placements[pick].Start) {
						pick = k
					}
				}
				if pick < 0 {
					break
				}
				used = append(used, prof.Placements[pick])
				prof.Available++
			}
		}
	}
	f.node.Generation++
	close(f.changed)
	f.changed = make(chan struct{})
}

func free(s accelfs.Span, used []accelfs.Span) bool {
	for _, u := range used {
		if s.Overlaps(u) {
			return false
		}
	}
	return true
}

// ReadNode returns a copy of the node as node.json would show it now.
func (f *Fake) ReadNode() (*accelfs.Node, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return clone(f.node), nil
}

// treeFiles are the names a job may not take: the files of a profile
// directory and of placements/<start>/, where every job shows too
// (core/model/tree_names.h).
var treeFiles = map[string]string{
	"info": "profile", "available": "profile", "last_error": "profile", "placements": "profile",
	"status": "placement",
}

// CarveAt carves the job at that start, or answers as the tree does for
// mkdir <card>/mig/<profile>/placements/<start>/<job>, in the daemon's
// order (fs/ops_dir.c, core/engine/node_jobs.c): the lookup of the path, the name,
// the node's other jobs, the card, then the placement against every live
// instance. accelfstest's conformance test holds these answers to the
// daemon's.
func (f *Fake) CarveAt(card, profile string, start int, job string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	path := filepath.Join(card, "mig", profile, "placements", fmt.Sprint(start), job)
	d := f.node.Card(card)
	if d == nil || d.Profile(profile) == nil {
		return f.looked(card, profile, "mkdir", path, syscall.ENOENT)
	}
	prof := d.Profile(profile)
	var span *accelfs.Span
	for _, pl := range prof.Placements {
		if pl.Start == start {
			span = &pl
		}
	}
	if span == nil {
		// No directory placements/<start>.
		return f.looked(card, profile, "mkdir", path, syscall.ENOENT)
	}
	// placements/<start>/ shows its status file and the profile's jobs
	// whose placement is this one, in any state: the kernel finds those.
	if j := d.Job(job); job == "status" || (j != nil && j.Profile == profile && j.Placement != nil && *j.Placement == *span) {
		return f.looked(card, profile, "mkdir", path, syscall.EEXIST)
	}
	refuse := func(e syscall.Errno, why string) error { return f.refused(card, profile, "mkdir", path, e, why) }
	if len(job) > accelfs.MaxJobName {
		return refuse(syscall.ENAMETOOLONG, fmt.Sprintf("job name '%.64s...' is longer than %d bytes", job, accelfs.MaxJobName))
	}
	if !accelfs.ValidJobName(job) {
		return refuse(syscall.EINVAL, fmt.Sprintf("job name '%s' is not valid", job))
	}
	if where, ok := treeFiles[job]; ok {
		return refuse(syscall.EEXIST, fmt.Sprintf("'%s' is a file of the %s directory: choose another job name", job, where))
	}
	if f.node.FindJob(job) != nil {
		return refuse(syscall.EEXIST, fmt.Sprintf("a job named '%s' already exists on this node", job))
	}
	if !d.OK() {
		return refuse(syscall.EBUSY, d.Name+" is refused")
	}
	if why := taken(d, prof, *span); why != "" {
		return refuse(syscall.ENOSPC, why)
	}
	delete(f.lastErr, card+"/"+profile)
	gi := 0
	for used := true; used; {
		used = false
		for _, in := range d.Instances {
			if in.GI == gi {
				gi++
				used = true
			}
		}
	}
	name := job
	ci := 0
	uuid := fmt.Sprintf("MIG-%08x-0000-4000-8000-%012x", f.node.Generation, gi)
	d.Instances = append(d.Instances, accelfs.Instance{GI: gi, CI: []int{0}, Profile: profile, ProfileID: prof.ProfileID, Placement: *span, UUID: uuid, Job: &name})
	sort.Slice(d.Instances, func(a, b int) bool { return d.Instances[a].Placement.Start < d.Instances[b].Placement.Start })
	d.Jobs = append(d.Jobs, accelfs.Job{Name: job, Profile: profile, State: accelfs.StateReady, Device: card, ProfileID: prof.ProfileID, GI: &gi, CI: &ci, Placement: span, UUID: uuid})
	if !f.NoCDI {
		f.cdi[job] = true
	}
	f.Carves++
	f.recompute()
	return nil
}

// taken is the daemon's sentence naming every live instance in the way of
// span (core/policy/place_exact.c), or "" when span is free.
func taken(d *accelfs.Device, prof *accelfs.Profile, span accelfs.Span) string {
	var holders []string
	for _, in := range d.Instances {
		if !in.Placement.Overlaps(span) {
			continue
		}
		if in.Job != nil {
			holders = append(holders, fmt.Sprintf(" job %s holds %d:%d (GPU instance %d)", *in.Job, in.Placement.Start, in.Placement.Size, in.GI))
		} else {
			holders = append(holders, fmt.Sprintf(" GPU instance %d (%s at %d:%d), which accelfs did not make, holds it", in.GI, in.Profile, in.Placement.Start, in.Placement.Size))
		}
	}
	if holders == nil {
		return ""
	}
	return fmt.Sprintf("placement %d:%d of %s on %s is taken:%s. Choose a start whose placements/<start>/status says free, or remove what holds this one",
		span.Start, span.Size, prof.Name, d.Name, strings.Join(holders, ";"))
}

// Remove gives the job back; EBUSY while it is marked busy.
func (f *Fake) Remove(card, profile, job string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	path := filepath.Join(card, "mig", profile, job)
	d := f.node.Card(card)
	if d == nil || d.Profile(profile) == nil {
		return f.looked(card, profile, "rmdir", path, syscall.ENOENT)
	}
	j := d.Job(job)
	if j == nil || j.Profile != profile {
		return f.looked(card, profile, "rmdir", path, syscall.ENOENT)
	}
	if f.busy[job] {
		return f.refused(card, profile, "rmdir", path, syscall.EBUSY, job+" is attached to 1 container: stop it first")
	}
	delete(f.lastErr, card+"/"+profile)
	f.dropJob(d, job)
	f.recompute()
	return nil
}

func (f *Fake) dropJob(d *accelfs.Device, job string) {
	jobs := d.Jobs[:0]
	for _, j := range d.Jobs {
		if j.Name != job {
			jobs = append(jobs, j)
		}
	}
	d.Jobs = jobs
	ins := d.Instances[:0]
	for _, in := range d.Instances {
		if in.Job == nil || *in.Job != job {
			ins = append(ins, in)
		}
	}
	d.Instances = ins
	delete(f.cdi, job)
}

// Status is the job's status file.
func (f *Fake) Status(card, profile, job string) (*accelfs.Status, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	d := f.node.Card(card)
	var j *accelfs.Job
	if d != nil {
		j = d.Job(job)
	}
	if j == nil || j.Profile != profile {
		return nil, &os.PathError{Op: "open", Path: filepath.Join(card, "mig", profile, job, "status"), Err: syscall.ENOENT}
	}
	st := &accelfs.Status{State: j.State, Device: j.Device, Profile: j.Profile, ProfileID: j.ProfileID, UUID: j.UUID, Fields: map[string]string{}}
	if j.Placement != nil {
		st.Placement = *j.Placement
	}
	if f.busy[job] {
		st.Containers = []string{"0123456789ab pid=1 since=2026-01-01T00:00:00Z"}
	}
	return st, nil
}

// HasCDIDevice says whether a ready job's device is in the specs.
func (f *Fake) HasCDIDevice(job string) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.cdi[job] && !f.cdiHeld[job], nil
}

// HoldCDI keeps the job's device out of the CDI specs (a slow hook) until
// released.
func (f *Fake) HoldCDI(job string, hold bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.cdiHeld == nil {
		f.cdiHeld = map[string]bool{}
	}
	f.cdiHeld[job] = hold
}

// Watch returns a watcher that wakes at every change of the model.
func (f *Fake) Watch() (accelfs.Watcher, error) {
	return &watch{f: f, gen: -1}, nil
}

type watch struct {
	f   *Fake
	gen int64
}

func (w *watch) Read() (*accelfs.Node, error) {
	n, err := w.f.ReadNode()
	if err == nil {
		w.gen = n.Generation
	}
	return n, err
}

func (w *watch) Wait(ctx context.Context, fallback time.Duration) error {
	w.f.mu.Lock()
	ch, gen := w.f.changed, w.f.node.Generation
	w.f.mu.Unlock()
	if gen != w.gen {
		return nil
	}
	t := time.NewTimer(fallback)
	defer t.Stop()
	select {
	case <-ch:
		return nil
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (w *watch) Close() error { return nil }

// SetBusy makes rmdir of the job answer EBUSY (a container holds it) or not.
func (f *Fake) SetBusy(job string, busy bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.busy[job] = busy
}

// Lose turns the job lost: its instance is gone (a reboot, a destroy by hand).
func (f *Fake) Lose(job string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i := range f.node.Devices {
		d := &f.node.Devices[i]
		if j := d.Job(job); j != nil {
			j.State = accelfs.StateLost
			reason := "its GPU instance is gone"
			j.Reason = &reason
			ins := d.Instances[:0]
			for _, in := range d.Instances {
				if in.Job == nil || *in.Job != job {
					ins = append(ins, in)
				}
			}
			d.Instances = ins
			delete(f.cdi, job)
		}
	}
	f.recompute()
}

// AddOrphan adds a GPU instance no job accounts for (carved by hand).
func (f *Fake) AddOrphan(card, profile string, start int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	d := f.node.Card(card)
	p := d.Profile(profile)
	for _, pl := range p.Placements {
		if pl.Start == start {
			note := "orphan"
			d.Instances = append(d.Instances, accelfs.Instance{GI: 100 + len(d.Instances), CI: []int{0}, Profile: profile, ProfileID: p.ProfileID, Placement: pl, Note: &note})
		}
	}
	f.recompute()
}

// Refuse marks the card refused (why) or, with why empty, ok again.
func (f *Fake) Refuse(card, why string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	d := f.node.Card(card)
	if why == "" {
		d.State, d.Refusal = "ok", nil
	} else {
		d.State, d.Refusal = "refused", &why
	}
	f.recompute()
}

// SetCardState sets what the card can take now (admits, nil for an accelfs
// without it), its cordon and its health, as node.json shows them.
func (f *Fake) SetCardState(card string, admits *accelfs.Admits, cordon bool, health *accelfs.Health) {
	f.mu.Lock()
	defer f.mu.Unlock()
	d := f.node.Card(card)
	d.Admits, d.Cordon, d.Health = admits, cordon, health
	f.recompute()
}

// SetJobHealth sets a job's health (an Xid on its instance).
func (f *Fake) SetJobHealth(job string, health *accelfs.Health) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if j := f.node.FindJob(job); j != nil {
		j.Health = health
	}
	f.recompute()
}
