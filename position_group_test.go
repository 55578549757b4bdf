package schedq

import "testing"

// TestPositionOfGroupOutsideActiveQ checks that, under Config.Priority,
// the position Explain gives counts a group entity outside activeQ by its
// GroupSpec.Priority, not by the priority of the member it carries: both
// for the group's own place in line and for the items it stands before.
func TestPositionOfGroupOutsideActiveQ(t *testing.T) {
	h := newHarness(t, groupsOn, func(c *Config[string, job]) { c.Less, c.Priority = nil, jobPrio })
	h.setGroup("g", 1, 100)
	h.add(gm("g", "m", 0))
	h.requeueGroup(h.popGroup("g"), Failure{}) // error backoff
	h.add(mk("x1", 50), mk("x2", 50))
	if err := h.c.Park(mk("y", 10), Failure{RejectedBy: []string{"Fit"}}, h.now); err != nil {
		t.Fatal(err)
	}
	h.want("m", InBackoff)
	tests := []struct {
		name                   string
		key                    string
		ahead, backoff, parked int
	}{
		{"the group backing off: nothing of priority 100 or more ahead", "m", 0, 0, 0},
		{"a parked item of priority 10: x1, x2 and the group ahead", "y", 2, 1, 0},
		{"an item in activeQ of priority 50: the group ahead, backing off", "x2", 1, 1, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			x, err := h.c.Explain(tc.key, h.now)
			if err != nil {
				t.Fatal(err)
			}
			p := x.Position
			if p == nil || p.Ahead != tc.ahead || p.BackoffAhead != tc.backoff || p.ParkedAhead != tc.parked {
				t.Fatalf("position %+v, want %d ahead, %d backing off ahead, %d parked ahead", p, tc.ahead, tc.backoff, tc.parked)
			}
		})
	}
}
