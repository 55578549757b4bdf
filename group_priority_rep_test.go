package schedq

import "testing"

// TestGroupPriorityKeptWhenRepresentativeChanges checks that a group
// entity keeps its GroupSpec.Priority in activeQ under Config.Priority
// when the member whose item it carries is updated or deleted: the
// members' own priorities do not count.
func TestGroupPriorityKeptWhenRepresentativeChanges(t *testing.T) {
	tests := []struct {
		name   string
		change func(h *harness)
	}{
		{"representative updated", func(h *harness) {
			old := gm("g", "m1", 0)
			nu := old
			nu.label = "new"
			h.c.Update(old, nu, h.now)
		}},
		{"representative deleted", func(h *harness) {
			if err := h.c.Delete("m1", h.now); err != nil {
				h.t.Fatal(err)
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, groupsOn, func(c *Config[string, job]) {
				c.Less, c.Priority = nil, jobPrio
			})
			h.setGroup("g", 1, 100)
			h.add(gm("g", "m1", 0), gm("g", "m2", 0))
			h.add(mk("x", 50))
			tc.change(h)
			h.check()
			if a := h.pop(); a.Group != "g" {
				t.Fatalf("popped %q (group %q) first, want group g (priority 100 over x's 50)", a.Key, a.Group)
			}
		})
	}
}
