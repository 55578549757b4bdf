package scheduler

import (
	"context"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
)

// recordedWrites records the nominations written, in order.
type recordedWrites struct {
	mu  sync.Mutex
	got []string
}

func (r *recordedWrites) write(node string) func() error {
	return func() error {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.got = append(r.got, node)
		return nil
	}
}

func (r *recordedWrites) list() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.got)
}

// TestNomWritesSkipsASupersededWrite: a nomination claimed, then cleared
// by a later claim whose write goes first, is not written at all.
func TestNomWritesSkipsASupersededWrite(t *testing.T) {
	var w nomWrites
	var r recordedWrites
	ctx := context.Background()
	first := w.claim("u")
	second := w.claim("u")
	if err := w.write(ctx, second, r.write("")); err != nil {
		t.Fatal(err)
	}
	if err := w.write(ctx, first, r.write("a")); err != nil {
		t.Fatal(err)
	}
	if got := r.list(); !slices.Equal(got, []string{""}) {
		t.Fatalf("written %q, want only the clear", got)
	}
	if len(w.pods) != 0 {
		t.Fatalf("entries left: %v", w.pods)
	}
}

// TestNomWritesOrdersAWriteUnderWay: a nomination being written when a
// later preemption clears it is written first; the clear waits for it,
// so that the clear is what the pod's status keeps.
func TestNomWritesOrdersAWriteUnderWay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var w nomWrites
		var r recordedWrites
		ctx := context.Background()
		release := make(chan struct{})
		first := w.claim("u")
		go w.write(ctx, first, func() error {
			<-release // the API server is slow to answer
			return r.write("a")()
		})
		synctest.Wait()
		second := w.claim("u")
		done := make(chan error, 1)
		go func() { done <- w.write(ctx, second, r.write("")) }()
		synctest.Wait()
		if got := r.list(); len(got) != 0 {
			t.Fatalf("written %q while the first write was under way", got)
		}
		close(release)
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if got := r.list(); !slices.Equal(got, []string{"a", ""}) {
			t.Fatalf("written %q, want the nomination then its clear", got)
		}
		synctest.Wait()
		if len(w.pods) != 0 {
			t.Fatalf("entries left: %v", w.pods)
		}
	})
}

// TestNomWritesGivesUpWhenTheContextEnds: a write waiting for its turn
// ends with its context.
func TestNomWritesGivesUpWhenTheContextEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var w nomWrites
		release := make(chan struct{})
		first := w.claim("u")
		go w.write(context.Background(), first, func() error { <-release; return nil })
		synctest.Wait()
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- w.write(ctx, w.claim("u"), func() error { return nil }) }()
		synctest.Wait()
		cancel()
		if err := <-done; err != context.Canceled {
			t.Fatalf("err %v, want context.Canceled", err)
		}
		close(release)
		synctest.Wait()
		if len(w.pods) != 0 {
			t.Fatalf("entries left: %v", w.pods)
		}
	})
}
