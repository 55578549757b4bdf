package scheduler

import "testing"

// TestDriversShareHandlersAndBudget: what both drivers take from
// NewHandlers and UseWakeBudget, so that neither can drop it alone (the
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
			UseWakeBudget(&cfg, NewCache(), nil)
			if cfg.Budget == nil || !cfg.ClassBudget {
				t.Errorf("got Budget set %v, ClassBudget %v; want both", cfg.Budget != nil, cfg.ClassBudget)
			}
		}},
	} {
		t.Run(tc.name, tc.check)
	}
}
