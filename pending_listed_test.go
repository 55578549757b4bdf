package schedq

import (
	"fmt"
	"testing"
	"time"
)

// TestExplainListedReentered: ExplainListed keeps an item's listed place
// in activeQ (Position.Ahead) only while the item is still at the activeQ
// entry it was listed at. Each case lists its target first in activeQ (0
// ahead), then x and y, unexplained; the target then leaves activeQ and
// enters it again behind them within the listing's lifetime, or an
// update moves it behind them within activeQ (or it stays).
// Explained, the target is in activeQ with no Position, not with the
// place it left ("0 ahead", where x and y are now ahead of it); x, which
// stayed at its entry, keeps its listed place. A group is listed as its
// member g1 and stamped by its entity, which is where the check looks.
func TestExplainListedReentered(t *testing.T) {
	addLone := func(h *harness) { h.add(mk("a", 0)) }
	addGroup := func(h *harness) {
		h.setGroup("g", 1, 0)
		h.add(gm("g", "g1", 0))
	}
	// backOn waits out the backoff and lets Tick's flush send the items
	// backing off to activeQ.
	backOn := func(h *harness) {
		h.step(20 * time.Second)
		h.c.Tick(h.now)
		h.check()
		h.step(20 * time.Second)
		h.c.Tick(h.now)
		h.check()
	}
	for _, tc := range []struct {
		name   string
		target string
		add    func(h *harness)
		change func(h *harness)
		kept   bool                       // the listed place is still the target's
		config func(*Config[string, job]) // if set, on top of groups
	}{
		{name: "stayed", target: "a", add: addLone, change: func(*harness) {}, kept: true},
		{name: "deleted and added again", target: "a", add: addLone, change: func(h *harness) {
			if err := h.c.Delete("a", h.now); err != nil {
				h.t.Fatal(err)
			}
			h.check()
			h.add(mk("a", 0))
		}},
		{name: "tried, failed and back from backoffQ", target: "a", add: addLone, change: func(h *harness) {
			h.attemptFail("a")
			h.want("a", InBackoff)
			backOn(h)
		}},
		{name: "tried, rejected and moved from unschedulable", target: "a", add: addLone, change: func(h *harness) {
			h.attemptFail("a", "Fit")
			h.want("a", InUnschedulable)
			h.step(20 * time.Second) // past its backoff: the move sends it to activeQ
			h.move(evMachineAdd, nil)
		}},
		{name: "tried, rejected and activated", target: "a", add: addLone, change: func(h *harness) {
			h.attemptFail("a", "Quiet")
			h.want("a", InUnschedulable)
			h.c.Activate([]string{"a"}, h.now)
			h.check()
		}},
		{name: "re-sorted by an update", target: "a", add: addLone, change: func(h *harness) {
			h.c.Update(mk("a", 0), mk("a", -1), h.now)
			h.check()
		}},
		{name: "group stayed", target: "g1", add: addGroup, change: func(*harness) {}, kept: true},
		{name: "group tried, failed and back from backoffQ", target: "g1", add: addGroup, change: func(h *harness) {
			h.requeueGroup(h.popGroup("g"), Failure{})
			h.want("g1", InBackoff)
			backOn(h)
		}},
		{name: "group's member deleted and added again", target: "g1", add: addGroup, change: func(h *harness) {
			if err := h.c.Delete("g1", h.now); err != nil {
				h.t.Fatal(err)
			}
			h.check()
			h.add(gm("g", "g1", 0))
		}},
		{name: "group tried, rejected and moved from unschedulable", target: "g1", add: addGroup, change: func(h *harness) {
			h.requeueGroup(h.popGroup("g"), Failure{RejectedBy: []string{"Fit"}})
			h.want("g1", InUnschedulable)
			h.step(20 * time.Second)
			h.move(evMachineAdd, nil)
		}},
		{name: "deleted and added again, under Config.Priority", target: "a", add: addLone, config: byPriorityField, change: func(h *harness) {
			if err := h.c.Delete("a", h.now); err != nil {
				h.t.Fatal(err)
			}
			h.check()
			h.add(mk("a", 0))
		}},
		{name: "stayed, under Config.Priority", target: "a", add: addLone, config: byPriorityField, change: func(*harness) {}, kept: true},
		{name: "priority lowered by an update, under Config.Priority", target: "a", add: addLone, config: byPriorityField, change: func(h *harness) {
			h.c.Update(mk("a", 0), mk("a", -1), h.now)
			h.check()
		}},
		{name: "group's priority lowered, under Config.Priority", target: "g1", add: addGroup, config: byPriorityField, change: func(h *harness) {
			h.setGroup("g", 1, -1)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mutate := []func(*Config[string, job]){groupsOn}
			if tc.config != nil {
				mutate = append(mutate, tc.config)
			}
			h := newHarness(t, mutate...)
			tc.add(h)
			h.step(time.Second)
			h.add(mk("x", 0), mk("y", 0))
			h.step(time.Second)
			list := h.c.Pending(PendingOptions[job]{Unexplained: true}, h.now)
			if got := pendingKeys(list); len(got) != 3 || got[0] != tc.target || got[1] != "x" ||
				list.Items[0].Position == nil || list.Items[0].Position.Ahead != 0 || list.Items[1].Position.Ahead != 1 {
				t.Fatalf("listed %v (%+v), want %s 0 ahead, x 1, y", got, list.Items, tc.target)
			}
			h.step(time.Second)
			tc.change(h)
			h.want(tc.target, InActive)
			now, err := h.c.Explain(tc.target, h.now)
			if err != nil {
				t.Fatal(err)
			}
			if !tc.kept && now.Position.Ahead == 0 {
				t.Fatalf("%s is 0 ahead again: the case shows nothing", tc.target)
			}
			items := list.Items[:2:2]
			h.c.ExplainListed(items, h.now)
			h.check()
			it := items[0]
			if it.Location != InActive || it.Rank != 0 || it.Reason == "" {
				t.Errorf("%s explained as %+v, want in activeQ, rank 0, with a reason", tc.target, it)
			}
			switch {
			case tc.kept && (it.Position == nil || it.Position.Ahead != 0):
				t.Errorf("%s: %v, want the listing's 0 ahead: it is still where it was listed", tc.target, ahead(it.Position))
			case !tc.kept && it.Position != nil:
				t.Errorf("%s: %v, %d ahead now, want no position: it left the place it was listed at", tc.target, ahead(it.Position), now.Position.Ahead)
			}
			if x := items[1]; x.Location != InActive || x.Position == nil || x.Position.Ahead != 1 {
				t.Errorf("x explained as %+v, want in activeQ at its listed place, 1 ahead", x)
			}
		})
	}
}

// ahead renders a listed position: its Ahead, the one field a listing
// fills in, or none.
func ahead(p *Position) string {
	if p == nil {
		return "no position"
	}
	return fmt.Sprintf("%d ahead", p.Ahead)
}

// byPriorityField orders by Config.Priority (the lazy activeQ), not by
// the test configuration's Less.
func byPriorityField(c *Config[string, job]) { c.Less, c.Priority = nil, jobPrio }
