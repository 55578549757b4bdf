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
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/clock"
	testingclock "k8s.io/utils/clock/testing"
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

// passedOn records what the fence's wrappers pass on to the binder and
// the reporter underneath.
type passedOn struct {
	started, recorded bool
	warned            string
}

func (p *passedOn) Bind(_ context.Context, _ *v1.Pod, _ string, start func() bool, done func(error)) {
	p.started = start != nil
	if scheduler.Started(start, done) {
		done(nil)
	}
}

func (p *passedOn) Unschedulable(_ context.Context, _ *v1.Pod, _, _ string, record func() scheduler.FailureRecord) {
	p.recorded = record != nil
}

func (p *passedOn) Scheduled(context.Context, *v1.Pod, string) {}

func (p *passedOn) Warn(_ context.Context, _ runtime.Object, reason, _ string) { p.warned = reason }

// TestGuardsPassOnWhatTheSchedulerGives: the fence's wrappers, open, pass
// on to what they wrap everything the scheduler gives: the binder's start
// guard (checked once its slot is free, that the node still exists), the
// failure record a new leader parks pods from, and warnings.
func TestGuardsPassOnWhatTheSchedulerGives(t *testing.T) {
	ctx := context.Background()
	under := &passedOn{}
	b := guardedBinder{next: under, backoff: newOutageBackoff(testingclock.NewFakeClock(time.Unix(0, 0)))} // nil fence: open
	var got error
	b.Bind(ctx, &v1.Pod{}, "n", func() bool { return false }, func(err error) { got = err })
	if !under.started || !errors.Is(got, scheduler.ErrNodeDeleted) {
		t.Errorf("start passed on %v, binding ended with %v, want start passed on and %v", under.started, got, scheduler.ErrNodeDeleted)
	}
	r := guardedReporter{next: under, log: slog.New(slog.DiscardHandler)}
	r.Unschedulable(ctx, &v1.Pod{}, v1.PodReasonUnschedulable, "m", func() scheduler.FailureRecord { return scheduler.FailureRecord{} })
	if !under.recorded {
		t.Error("the failure record was not passed on")
	}
	r.Warn(ctx, &v1.Pod{}, "PriorityMismatch", "m")
	if under.warned != "PriorityMismatch" {
		t.Errorf("warning passed on as %q", under.warned)
	}
	if unavailable(scheduler.ErrNodeDeleted) {
		t.Error("a deleted node counts as an outage")
	}
}
