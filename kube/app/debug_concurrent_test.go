package app

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/schedq/schedq"
)

// TestDebugCachesUnderConcurrentRequests drives the per-second caches of
// the debug endpoints (a pod's explanation; the listing in pop order and
// the explanations of its pages) from several goroutines at once, on a
// clock that a scheduler goroutine steps over their TTL while it pops,
// parks, wakes, deletes and creates pods again: run with -race, it finds
// any field of a cache read or written outside its lock, and any
// explanation shared between requests that one of them changes. Once all
// have finished, a pod's shared answer is the queue's own (not that of a
// place it left), and the real handler answers the same pods meanwhile.
func TestDebugCachesUnderConcurrentRequests(t *testing.T) {
	const pods, rounds, readers = 12, 60, 4
	l := newLiveCluster(t, 1)
	key := func(i int) types.NamespacedName {
		return types.NamespacedName{Namespace: "default", Name: fmt.Sprintf("p%d", i)}
	}
	keys := make([]types.NamespacedName, pods)
	for i := range pods {
		keys[i] = key(i)
		l.pending(l.pod(keys[i].Name, "1", ""))
	}
	e := &explanations{q: l.queue, ttl: queueSnapshotTTL, now: l.clk.Now}
	s := &pendingSnapshots{q: l.queue, ttl: queueSnapshotTTL, now: l.clk.Now}
	srv := l.serverOf(nil)
	queries := []string{"", "&offset=3&limit=4", "&namespace=default&limit=2", "&offset=10"}

	done := make(chan struct{})
	// served paces the scheduler: each of its rounds waits for a request
	// of each reader, so that the requests run among its changes.
	served := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // the scheduler
		defer wg.Done()
		defer close(done)
		for r := range rounds {
			for range readers {
				<-served
			}
			a, err := l.queue.Pop(context.Background())
			if err != nil {
				t.Error(err)
				return
			}
			plugin := []string{"NodeResourcesFit", "NodeAffinity"}[r%2]
			if err := l.queue.Requeue(a, schedq.Failure{RejectedBy: []string{plugin}}); err != nil {
				t.Error(err)
				return
			}
			if r%5 == 0 {
				k := key(r % pods)
				if err := l.queue.Delete(k); err != nil {
					t.Error(err)
					return
				}
				p := l.pod(k.Name, "1", "")
				p.UID = types.UID(fmt.Sprintf("%s-%d", p.UID, r))
				l.pending(p)
			}
			if err := l.queue.Activate(keys...); err != nil {
				t.Error(err)
				return
			}
			l.clk.Step(300 * time.Millisecond)
		}
	}()
	for g := range readers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-done:
					return
				default:
				}
				k := key((g + i) % pods)
				if x, _, _, err := e.explain(k); err == nil {
					_ = fmt.Sprint(x.RejectedBy, x.Position, x.Reason) // read what is shared
				}
				req := httptest.NewRequest(http.MethodGet, "/debug/queue?order=pop"+queries[(g+i)%len(queries)], nil)
				p, err := s.serve(req) // an error is reported; the reader goes on, as the scheduler waits for it
				if err != nil {
					t.Error(err)
				}
				for _, it := range p.Items {
					_ = fmt.Sprint(it.RejectedBy, it.Position, it.Reason)
				}
				if code, body := get(t, srv.URL+"/debug/queue/default/"+k.Name); code != http.StatusOK {
					t.Errorf("%v: %d %s", k, code, body)
				}
				if code, body := get(t, srv.URL+"/debug/queue?order=pop"+queries[(g+i)%len(queries)]); code != http.StatusOK {
					t.Errorf("listing: %d %s", code, body)
				}
				select {
				case served <- struct{}{}:
				case <-done:
					return
				}
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	// Every pod's answer shared, then one tried, parked and woken again
	// within the second: back in activeQ, but not where it was answered.
	for _, k := range keys {
		if _, _, _, err := e.explain(k); err != nil {
			t.Fatal(err)
		}
	}
	a, err := l.queue.Pop(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if err := l.queue.Requeue(a, schedq.Failure{RejectedBy: []string{"TaintToleration"}}); err != nil {
		t.Fatal(err)
	}
	if err := l.queue.Activate(a.Key); err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		x, _, _, err := e.explain(k)
		want, werr := l.queue.Explain(k)
		if err != nil || werr != nil {
			t.Fatalf("%v: %v, the queue's %v", k, err, werr)
		}
		if x.Location != want.Location || x.Attempts != want.Attempts || !x.Timestamp.Equal(want.Timestamp) || !slices.Equal(x.RejectedBy, want.RejectedBy) {
			t.Errorf("%v: answered %v after %d attempts since %v, rejected by %v; the queue: %v after %d since %v, by %v",
				k, x.Location, x.Attempts, x.Timestamp, x.RejectedBy, want.Location, want.Attempts, want.Timestamp, want.RejectedBy)
		}
	}
}
