// Package accelfs reads and drives an accelfs mount through its files alone:
// node.json for the whole node, mkdir under a profile's placements/ to carve
// at one placement, rmdir to give a job back, a job's status, and the CDI
// specs the daemon keeps in its --cdi-dir. Nothing here links the daemon's
// code; the contract is docs/tree.md.
package accelfs

import (
	"encoding/json"
	"fmt"
)

// Node is /accel/node.json, format 1 (docs/tree.md, "The whole node").
// Keys are only ever added within a format, so unknown keys are ignored.
type Node struct {
	Format     int      `json:"format"`
	Version    string   `json:"version"`
	Generation int64    `json:"generation"`
	Devices    []Device `json:"devices"`
}

// Device is one card: a T-Head PPU (ppuN) or an NVIDIA GPU (gpuN).
type Device struct {
	Name       string     `json:"name"`
	Vendor     string     `json:"vendor"`
	Product    string     `json:"product"`
	UUID       string     `json:"uuid"`
	Minor      *int       `json:"minor"`
	BusID      string     `json:"bus_id"`
	MemoryMiB  *int64     `json:"memory_mib"`
	MigMode    string     `json:"mig_mode"`
	MigPending string     `json:"mig_pending"`
	State      string     `json:"state"`
	Refusal    *string    `json:"refusal"`
	Ordinal    *int       `json:"ordinal"`
	Index      *int       `json:"index"`
	Profiles   []Profile  `json:"profiles"`
	Jobs       []Job      `json:"jobs"`
	Instances  []Instance `json:"instances"`
	// Admits is what the card can take now (absent before accelfs published it).
	Admits *Admits `json:"admits"`
	Cordon bool    `json:"cordon"`
	Health *Health `json:"health"`
}

// Admits is a card's answer to "what can this card take now": false
// NewJobs means mkdir refuses every new job there, Why saying why.
type Admits struct {
	NewJobs   bool    `json:"new_jobs"`
	Condition string  `json:"condition"`
	Why       *string `json:"why"`
}

// Card conditions (node.json's admits.condition), least severe first
// (docs/tree.md, "What a card can take").
const (
	CondOK          = "ok"
	CondDegraded    = "degraded"
	CondCordoned    = "cordoned"
	CondDraining    = "draining"
	CondModePending = "mode-pending"
	CondMigDisabled = "mig-disabled"
	CondFailed      = "failed"
	CondRefused     = "refused"
	CondAbsent      = "absent"
)

// Health is a card's or a job's health file (docs/tree.md).
type Health struct {
	State    string  `json:"state"` // ok, degraded, failed
	Why      *string `json:"why"`
	Xid      *int    `json:"xid"`
	Recovery *string `json:"recovery"`
	Time     *string `json:"time"`
}

// Health states.
const (
	HealthOK       = "ok"
	HealthDegraded = "degraded"
	HealthFailed   = "failed"
)

// Condition is the card's condition: node.json's admits.condition, or, from
// an accelfs that does not publish it yet, what the card's state and health
// say (state refused or absent: that; health failed: failed).
func (d *Device) Condition() string {
	if d.Admits != nil && d.Admits.Condition != "" {
		return d.Admits.Condition
	}
	switch {
	case d.State == CondRefused:
		return CondRefused
	case !d.OK():
		return CondAbsent
	case d.Health != nil && d.Health.State == HealthFailed:
		return CondFailed
	case d.Cordon:
		return CondCordoned
	case d.Health != nil && d.Health.State == HealthDegraded:
		return CondDegraded
	}
	return CondOK
}

// ConditionWhy is the sentence that goes with the condition ("" when none).
func (d *Device) ConditionWhy() string {
	if d.Admits != nil && d.Admits.Why != nil {
		return *d.Admits.Why
	}
	if d.Health != nil && d.Health.Why != nil && d.Health.State != HealthOK {
		return *d.Health.Why
	}
	return ""
}

// Profile is one offered profile of a card with its legal placements.
type Profile struct {
	Name            string `json:"name"`
	DriverName      string `json:"driver_name"`
	ProfileID       int    `json:"profile_id"`
	MemorySlices    int    `json:"memory_slices"`
	MemoryMiB       int64  `json:"memory_mib"`
	ComputeSlices   int    `json:"compute_slices"`
	Multiprocessors int    `json:"multiprocessors"`
	Placements      []Span `json:"placements"`
	Capacity        int    `json:"capacity"`
	Available       int    `json:"available"`
}

// Span is a placement: memory slices [Start, Start+Size).
type Span struct {
	Start int `json:"start"`
	Size  int `json:"size"`
}

// End is one past the last slice of the span.
func (s Span) End() int { return s.Start + s.Size }

// Overlaps says whether two spans share a slice.
func (s Span) Overlaps(o Span) bool { return s.Start < o.End() && o.Start < s.End() }

func (s Span) String() string { return fmt.Sprintf("%d:%d", s.Start, s.Size) }

// Job is one accelfs job of a card (the keys of its status file).
type Job struct {
	Name      string  `json:"name"`
	Profile   string  `json:"profile"`
	State     string  `json:"state"`
	Reason    *string `json:"reason"`
	Device    string  `json:"device"`
	ProfileID int     `json:"profile_id"`
	GI        *int    `json:"gi"`
	CI        *int    `json:"ci"`
	Placement *Span   `json:"placement"`
	UUID      string  `json:"uuid"`
	Created   string  `json:"created"`
	Health    *Health `json:"health"`
}

// Instance is one GPU instance the driver reports on a card, whoever made it.
type Instance struct {
	GI        int     `json:"gi"`
	CI        []int   `json:"ci"`
	Profile   string  `json:"profile"`
	ProfileID int     `json:"profile_id"`
	Placement Span    `json:"placement"`
	UUID      string  `json:"uuid"`
	Job       *string `json:"job"`
	Note      *string `json:"note"`
}

// Job states (docs/tree.md, status).
const (
	StateReady    = "ready"
	StateLost     = "lost"
	StateRemoving = "removing"
)

// ParseNode decodes node.json.
func ParseNode(data []byte) (*Node, error) {
	var n Node
	if err := json.Unmarshal(data, &n); err != nil {
		return nil, fmt.Errorf("node.json: %w", err)
	}
	if n.Format != 1 {
		return nil, fmt.Errorf("node.json: format %d, this program reads format 1", n.Format)
	}
	return &n, nil
}

// Card returns the device of that name, or nil.
func (n *Node) Card(name string) *Device {
	for i := range n.Devices {
		if n.Devices[i].Name == name {
			return &n.Devices[i]
		}
	}
	return nil
}

// FindJob returns the job of that name on any card (job names are unique on
// the node), or nil.
func (n *Node) FindJob(name string) *Job {
	for i := range n.Devices {
		for j := range n.Devices[i].Jobs {
			if n.Devices[i].Jobs[j].Name == name {
				return &n.Devices[i].Jobs[j]
			}
		}
	}
	return nil
}

// Profile returns the card's profile of that name, or nil.
func (d *Device) Profile(name string) *Profile {
	for i := range d.Profiles {
		if d.Profiles[i].Name == name {
			return &d.Profiles[i]
		}
	}
	return nil
}

// Job returns the card's job of that name, or nil.
func (d *Device) Job(name string) *Job {
	for i := range d.Jobs {
		if d.Jobs[i].Name == name {
			return &d.Jobs[i]
		}
	}
	return nil
}

// OK says whether the card is managed now (not refused).
func (d *Device) OK() bool { return d.State == "ok" }

// MigEnabled says whether MIG is on with no change pending: the only state in
// which a card's placements are offered.
func (d *Device) MigEnabled() bool {
	return d.MigMode == "enabled" && (d.MigPending == "" || d.MigPending == "enabled")
}

// Slices is the number of memory slices the card's placements cover (the
// highest end of any legal placement); 0 with the mode off.
func (d *Device) Slices() int {
	n := 0
	for _, p := range d.Profiles {
		for _, pl := range p.Placements {
			n = max(n, pl.End())
		}
	}
	return n
}

// Free says which of the card's slices no GPU instance holds.
func (d *Device) Free() []bool {
	free := make([]bool, d.Slices())
	for i := range free {
		free[i] = true
	}
	for _, in := range d.Instances {
		for s := in.Placement.Start; s < in.Placement.End() && s < len(free); s++ {
			free[s] = false
		}
	}
	return free
}
