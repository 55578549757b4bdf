package app

import (
	"context"
	"log/slog"
	"os"

	"github.com/schedq/schedq"
	"github.com/schedq/schedq/kube/scheduler"
)

// dumpEach logs the scheduler cache's whole state (Cache.StateDump) and
// the queue's counts once per value received from sigs (Options.Dump),
// until ctx ends. Each dump takes the cache's read lock for O(nodes +
// pods), then the queue's for O(1), one after the other.
func dumpEach(ctx context.Context, sigs <-chan os.Signal, c *scheduler.Cache, counts func() schedq.Counts, log *slog.Logger) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-sigs:
			n := counts()
			log.Info("cache dump (SIGUSR2)", "nodes", c.NodeCount(),
				"active", n.Active, "backoff", n.Backoff, "unschedulable", n.Unschedulable, "gated", n.Gated,
				"cache", c.StateDump())
		}
	}
}
