package scheduler

import (
	"testing"

	"github.com/schedq/schedq/kube/plugins"
)

// TestDriversShareHandlersAndBudget: what both drivers take from
// NewHandlers and EquipQueue, so that neither can drop it alone (the
// simulator once ran without the handlers' Hints).
func TestDriversShareHandlersAndBudget(t *testing.T) {
	for _, tc := range []struct {
		name  string
		check func(t *testing.T)
	}{
		{name: "handlers get the queue's hints and the affinity match", check: func(t *testing.T) {
			cfg := QueueConfig()
			h := NewHandlers(nil, NewCache(), "s", cfg)
			if len(h.Hints) == 0 || len(h.Hints) != len(cfg.Hints) {
				t.Errorf("Hints: got %d plugins, want the config's %d", len(h.Hints), len(cfg.Hints))
			}
			if h.AffinityMatch == nil || h.SchedulerName != "s" {
				t.Errorf("got AffinityMatch set %v, SchedulerName %q; want set, s", h.AffinityMatch != nil, h.SchedulerName)
			}
		}},
		{name: "the wake budget is by hint class", check: func(t *testing.T) {
			cfg := QueueConfig()
			EquipQueue(&cfg, NewCache(), true, nil)
			if cfg.Budget == nil || !cfg.ClassBudget {
				t.Errorf("got Budget set %v, ClassBudget %v; want both", cfg.Budget != nil, cfg.ClassBudget)
			}
		}},
		{name: "no wake budget when it is off", check: func(t *testing.T) {
			cfg := QueueConfig()
			EquipQueue(&cfg, NewCache(), false, nil)
			if cfg.Budget != nil || cfg.ClassBudget {
				t.Errorf("got Budget set %v, ClassBudget %v; want neither", cfg.Budget != nil, cfg.ClassBudget)
			}
		}},
		{name: "the gang gate, once, whether or not the budget is on", check: func(t *testing.T) {
			for _, budget := range []bool{true, false} {
				cfg := QueueConfig()
				EquipQueue(&cfg, NewCache(), budget, nil)
				EquipQueue(&cfg, NewCache(), budget, nil)
				n := 0
				for _, g := range cfg.PreEnqueue {
					if g.Name == plugins.GangSchedulingName {
						n++
					}
				}
				if n != 1 {
					t.Errorf("budget %v: %d gates named %s, want 1", budget, n, plugins.GangSchedulingName)
				}
			}
		}},
	} {
		t.Run(tc.name, tc.check)
	}
}
