package schedq

import (
	"testing"
	"time"
)

// TestGroupJoinKeepsBackoffExpiry checks that a member joining a group
// entity in backoffQ is judged against the entity's backoff expiry as it
// was computed when the entity entered backoffQ (at its size then), as
// upstream caches it: a join that grows the group, and so its backoff cap
// (MaxBackoff·√size), does not make an entity whose backoff has ended
// back off longer. The backoff flush frees it by that expiry too.
//
// Backoff 1s/1s; two errors give 2s capped at 1s·√2 ≈ 1.414s for two
// members, but 1s·√3 ≈ 1.732s for three.
func TestGroupJoinKeepsBackoffExpiry(t *testing.T) {
	tests := []struct {
		name           string
		popFromBackoff bool
		failAt         time.Duration // the second failure, from t0
		joinAt         time.Duration // the third member, from t0
	}{
		// Expiry t0+2s+1.414s is over at 3.5s; the grown cap's (3.732s) is not.
		{name: "pop-from-backoff off", popFromBackoff: false, failAt: 2 * time.Second, joinAt: 3500 * time.Millisecond},
		// Expiry t0+2.5s+1.414s ends its window at 4s; the grown cap's
		// (4.232s) ends at 5s.
		{name: "pop-from-backoff on", popFromBackoff: true, failAt: 2500 * time.Millisecond, joinAt: 4100 * time.Millisecond},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, groupsOn, func(c *Config[string, job]) {
				c.InitialBackoff, c.MaxBackoff = time.Second, time.Second
				c.DisablePopFromBackoff = !tc.popFromBackoff
			})
			h.setGroup("g", 1, 0)
			h.add(gm("g", "m1", 0), gm("g", "m2", 0))
			h.requeueGroup(h.popGroup("g"), Failure{}) // error 1: 1s
			h.now = t0.Add(2 * time.Second)
			h.c.flushBackoff(h.now)
			h.check()
			h.want("m1", InActive)
			a := h.popGroup("g")
			h.now = t0.Add(tc.failAt)
			h.requeueGroup(a, Failure{}) // error 2: 2s, capped at 1.414s
			h.want("m1", InBackoff)
			h.now = t0.Add(tc.joinAt)
			h.add(gm("g", "m3", 0))
			h.want("m3", InActive)
			h.want("m1", InActive)
		})
	}
}
