package schedq

import (
	"testing"
	"time"
)

// TestFlushedFlagOnlyWhenFlushedOut checks FlushedFromUnschedulable: the
// leftover flush sets it on the items it brings out of the parking area,
// and not on a gated item that the flush tries and leaves gated, so that
// such an item, ungated later by an event, is not counted as scheduled
// after a flush (upstream v1.37.2 clears the flag there too).
func TestFlushedFlagOnlyWhenFlushedOut(t *testing.T) {
	ungate := func(h *harness, name, group string) {
		h.c.Update(job{name: name, gated: true, group: group}, job{name: name, group: group}, h.now)
		h.check()
	}
	tests := []struct {
		name string
		// setup queues the item (or group) to be flushed; it returns the
		// key to read and, for a group, its name.
		setup func(h *harness) (key, group string)
		// afterFlush runs after the flush: an event, if any, that lifts
		// the gate.
		afterFlush  func(h *harness, key, group string)
		wantAtFlush Location
		wantFlushed bool // at the pop that follows
	}{
		{
			name: "parked item flushed out",
			setup: func(h *harness) (string, string) {
				h.add(mk("a", 1))
				h.attemptFail("a", "Quiet")
				return "a", ""
			},
			wantAtFlush: InActive,
			wantFlushed: true,
		},
		{
			name: "gated item stays gated, then ungated by an event",
			setup: func(h *harness) (string, string) {
				h.add(job{name: "a", gated: true})
				return "a", ""
			},
			afterFlush:  func(h *harness, key, _ string) { ungate(h, key, "") },
			wantAtFlush: InGated,
			wantFlushed: false,
		},
		{
			name: "gated group stays gated, then ungated by an event",
			setup: func(h *harness) (string, string) {
				h.setGroup("g", 2, 0)
				h.add(gm("g", "m1", 0), job{name: "m2", gated: true, group: "g"})
				return "m2", "g"
			},
			afterFlush:  func(h *harness, key, group string) { ungate(h, key, group) },
			wantAtFlush: InGated,
			wantFlushed: false,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, groupsOn)
			key, group := tc.setup(h)
			h.step(defaultMaxInUnschedulable + time.Millisecond)
			h.c.flushLeftover(h.now)
			h.check()
			h.want(key, tc.wantAtFlush)
			if tc.afterFlush != nil {
				tc.afterFlush(h, key, group)
			}
			h.want(key, InActive)
			a := h.pop()
			if a.Group != group {
				t.Fatalf("popped group %q, want %q", a.Group, group)
			}
			if a.FlushedFromUnschedulable != tc.wantFlushed {
				t.Fatalf("popped with FlushedFromUnschedulable %v, want %v", a.FlushedFromUnschedulable, tc.wantFlushed)
			}
		})
	}
}
