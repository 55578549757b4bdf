package app

import (
	"context"
	"log/slog"
	"os"
	"strings"
	"syscall"
	"testing"
	"testing/synctest"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/schedq/schedq"
	"github.com/schedq/schedq/kube/scheduler"
)

// TestDumpEachLogsTheCacheOnSignal: each signal received logs one dump
// naming the cache's nodes and the queue's counts; none before a signal,
// none after ctx ends.
func TestDumpEachLogsTheCacheOnSignal(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := scheduler.NewCache()
		c.AddNode(&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a"}})
		var out lockedBuffer
		log := slog.New(slog.NewTextHandler(&out, nil))
		sigs := make(chan os.Signal)
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() {
			defer close(done)
			dumpEach(ctx, sigs, c, func() schedq.Counts { return schedq.Counts{Active: 3} }, log)
		}()
		synctest.Wait()
		if all(&out) != "" {
			t.Fatalf("logged before any signal: %q", all(&out))
		}
		sigs <- syscall.SIGUSR2
		synctest.Wait()
		got := all(&out)
		for _, want := range []string{"cache dump (SIGUSR2)", "nodes=1", "active=3", "node node-a"} {
			if !strings.Contains(got, want) {
				t.Errorf("the dump lacks %q:\n%s", want, got)
			}
		}
		sigs <- syscall.SIGUSR2
		synctest.Wait()
		if n := strings.Count(all(&out), "cache dump (SIGUSR2)"); n != 2 {
			t.Errorf("%d dumps after two signals, want 2", n)
		}
		cancel()
		<-done
	})
}

// all is everything l holds.
func all(l *lockedBuffer) string {
	_, s := l.lines("")
	return s
}
