package driver

import "sync"

// partLocks serializes what is done to one claim (its prepare, its
// unprepare, the reconcile giving back its jobs) and nothing else: claims on
// any cards are prepared at the same time, each waiting for its own CDI
// spec, and the reconcile lists the cluster's claims holding no lock.
type partLocks struct {
	mu sync.Mutex
	m  map[string]*partLock
}

type partLock struct {
	sync.Mutex
	users int
}

// lock takes the claim part's lock and returns its release.
func (l *partLocks) lock(part string) func() {
	l.mu.Lock()
	if l.m == nil {
		l.m = map[string]*partLock{}
	}
	pl := l.m[part]
	if pl == nil {
		pl = &partLock{}
		l.m[part] = pl
	}
	pl.users++
	l.mu.Unlock()
	pl.Lock()
	return func() {
		pl.Unlock()
		l.mu.Lock()
		if pl.users--; pl.users == 0 {
			delete(l.m, part)
		}
		l.mu.Unlock()
	}
}
