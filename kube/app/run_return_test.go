package app

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestRunReturnsItsErrorWithTheTemplatesWatched: run, watching DRA's
// claims (so the ResourceClaimTemplates' own informer runs), fails after
// the informers have started (here the leader elector refuses a lease
// duration not longer than the renew deadline, which only Options.Validate
// would have caught). It returns that error, with the process's context
// still live: it stops the templates' informer before waiting for it.
// Waiting first, it hung for ever.
func TestRunReturnsItsErrorWithTheTemplatesWatched(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		client := fakeCluster(testNode("n1", "2"), &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "default"}},
			draClass(), draSlice("n1"), draTemplate("one-gpu"))
		o := upstreamOptions(t)
		o.LeaderElect, o.LeaseNamespace, o.LeaseName = true, "kube-system", "schedq"
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		done := make(chan error, 1)
		go func() {
			done <- run(ctx, clients{sched: client, events: client, lease: client}, nil, nil, o, slog.New(slog.NewTextHandler(io.Discard, nil)))
		}()
		time.Sleep(5 * time.Second) // fake time: the caches' sync polls
		synctest.Wait()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), "leader election") {
				t.Errorf("run: %v, want the leader elector's error", err)
			}
		default:
			t.Error("run has not returned: it waits for the templates' informer, which its context keeps running")
			cancel()
			<-done
		}
	})
}
