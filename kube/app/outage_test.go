package app

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/schedq/schedq/kube/scheduler"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/clock"
)

// TestOutageBackoff: failures for want of a server make the loop wait,
// doubling up to the cap; failures during a wait count once; a success
// ends it; errors about the binding itself do not count.
func TestOutageBackoff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newOutageBackoff(clock.RealClock{})
		down := errors.New("dial tcp 127.0.0.1:6443: connect: connection refused")
		waited := func() time.Duration {
			start := time.Now()
			if err := b.wait(context.Background()); err != nil {
				t.Fatal(err)
			}
			return time.Since(start)
		}
		if d := waited(); d != 0 {
			t.Fatalf("no outage, waited %v", d)
		}
		var got []time.Duration
		for range 7 {
			b.observe(down)
			b.observe(down) // a second binding of the same spell
			got = append(got, waited())
		}
		want := []time.Duration{100, 200, 400, 800, 1600, 2000, 2000}
		for i := range want {
			want[i] *= time.Millisecond
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("waits %v, want %v", got, want)
		}
		b.observe(nil)
		if d := waited(); d != 0 {
			t.Fatalf("after a success, waited %v", d)
		}
		conflict := apierrors.NewConflict(schema.GroupResource{Resource: "pods"}, "p", errors.New("already assigned"))
		for _, err := range []error{conflict, fmt.Errorf("refused: %w", ErrFenced), context.Canceled} {
			b.observe(err)
			if d := waited(); d != 0 {
				t.Fatalf("%v made the loop wait %v", err, d)
			}
		}
		b.observe(apierrors.NewServiceUnavailable("etcd is down"))
		if d := waited(); d != 100*time.Millisecond {
			t.Fatalf("503: waited %v", d)
		}
		// The wait ends with its context.
		b.observe(down)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if err := b.wait(ctx); !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled wait: %v", err)
		}
	})
}

// TestQuietHandler: one warning per message and interval, then the count
// of the others, in the next one and in flush's summary.
func TestQuietHandler(t *testing.T) {
	var buf bytes.Buffer
	h := newQuietHandler(slog.NewTextHandler(&buf, &slog.HandlerOptions{
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		},
	}), 10*time.Second)
	log := func(at time.Duration, level slog.Level, msg string) {
		r := slog.NewRecord(t0.Add(at), level, msg, 0)
		if err := h.Handle(context.Background(), r); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 100 {
		log(time.Duration(i)*50*time.Millisecond, slog.LevelWarn, "binding failed")
	}
	log(time.Second, slog.LevelInfo, "caches synced")
	log(2*time.Second, slog.LevelInfo, "caches synced")
	log(6*time.Second, slog.LevelWarn, "binding failed")
	h.flush(t0.Add(11 * time.Second))
	log(12*time.Second, slog.LevelWarn, "binding failed")
	h.flush(t0.Add(30 * time.Second))
	want := `level=WARN msg="binding failed"
level=INFO msg="caches synced"
level=INFO msg="caches synced"
level=WARN msg="binding failed" suppressed=100 in=11s
level=WARN msg="binding failed" suppressed=1 in=19s
`
	if buf.String() != want {
		t.Fatalf("got\n%s\nwant\n%s", buf.String(), want)
	}
	if strings.Count(buf.String(), "\n") != 5 {
		t.Fatal("line count")
	}
}

// TestGuardsKeepTheSchedulersInterfaces: the fence's wrappers must not
// hide what the scheduler looks for in the binder and the reporter: the
// binder's check, once its slot is free, that the node still exists, and
// the failure records a new leader parks pods from.
func TestGuardsKeepTheSchedulersInterfaces(t *testing.T) {
	var b scheduler.Binder = guardedBinder{}
	if _, ok := b.(scheduler.GuardedBinder); !ok {
		t.Error("guardedBinder hides GuardedBinder")
	}
	var r scheduler.Reporter = guardedReporter{}
	if _, ok := r.(scheduler.RecordingReporter); !ok {
		t.Error("guardedReporter hides RecordingReporter")
	}
	if unavailable(scheduler.ErrNodeDeleted) {
		t.Error("a deleted node counts as an outage")
	}
}
