package schedq

import "testing"

// TestParkWithHintsOffBacksOff checks Park's documented rule with
// queueing hints off: a rejected item, lone or the creator of its group's
// entity, backs off, whether or not a move request came before, rather
// than parking where only a move request or the leftover flush finds it.
func TestParkWithHintsOffBacksOff(t *testing.T) {
	tests := []struct {
		name      string
		item      job
		moveFirst bool
	}{
		{"lone, no move request yet", mk("a", 1), false},
		{"lone, after a move request", mk("a", 1), true},
		{"group member, no move request yet", gm("g", "a", 1), false},
		{"group member, after a move request", gm("g", "a", 1), true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, groupsOn, func(c *Config[string, job]) { c.DisableQueueingHints = true })
			h.setGroup("g", 1, 1)
			if tc.moveFirst {
				h.move(evMachineAdd, nil)
			}
			if err := h.c.Park(tc.item, Failure{RejectedBy: []string{"Fit"}}, h.now); err != nil {
				t.Fatal(err)
			}
			h.check()
			h.want("a", InBackoff)
		})
	}
}
