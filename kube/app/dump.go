package app

import (
	"context"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/schedq/schedq"
	"github.com/schedq/schedq/kube/scheduler"
)

// dumpOnSignal logs the scheduler cache's whole state (Cache.StateDump)
// and the queue's counts each time SIGUSR2 arrives, until ctx ends, as
// kube-scheduler writes its cache and queue to its log on SIGUSR2. It
// starts one goroutine; the dump takes the cache's read lock for
// O(nodes + pods) and the queue's lock for O(1), one after the other.
func dumpOnSignal(ctx context.Context, c *scheduler.Cache, counts func() schedq.Counts, log *slog.Logger) {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGUSR2)
	go func() {
		defer signal.Stop(sigs)
		dumpEach(ctx, sigs, c, counts, log)
	}()
}

// dumpEach is dumpOnSignal's loop: one dump per value received from
// sigs, until ctx ends.
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
