package accelfs

import "testing"

func TestLastErrorReasonDropsTheTime(t *testing.T) {
	for in, want := range map[string]string{
		"2026-12-02T02:31:56.912Z a job named 'a1' already exists on this node\n": "a job named 'a1' already exists on this node",
		"no free placement\n":   "no free placement",
		"":                      "",
		"2026-12-02 not a time": "2026-12-02 not a time",
	} {
		if got := lastErrorReason(in); got != want {
			t.Errorf("lastErrorReason(%q) = %q, want %q", in, got, want)
		}
	}
}
