package scheduler

import (
	"context"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

// held is how many entries the gang release state holds, over all its
// maps.
func (r *gangRelease) held() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.below) + len(r.warned) + len(r.releasing)
}

// hookReporter is warnReporter that runs on before it reports a pod
// unschedulable: a group attempt reports its members before it decides
// about release, so on runs during the attempt.
type hookReporter struct {
	warnReporter
	on func()
}

func (r hookReporter) Unschedulable(ctx context.Context, p *v1.Pod, reason, msg string, record func() FailureRecord) {
	if r.on != nil {
		r.on()
	}
	r.warnReporter.Unschedulable(ctx, p, reason, msg, record)
}

// TestGangReleaseForgetsDeletedGroups: the release state keeps an entry
// for a gang below its minCount (when it was first seen so, or that it was
// told it cannot be released) only while its PodGroup exists and the gang
// is short: a PodGroup deleted while its gang is below minCount (even
// during the gang's failing attempt) leaves nothing behind, nor does a
// gang that is completed. Before, each such PodGroup left its entries
// for the whole term.
func TestGangReleaseForgetsDeletedGroups(t *testing.T) {
	del := func(f *fixture) { f.h.DeletePodGroup(podGroup("train", 4, 0)) }
	for _, tc := range []struct {
		name       string
		controlled bool
		run        func(f *fixture, now *time.Time)
		want       int
	}{
		{name: "kept while the PodGroup exists", controlled: true, want: 1,
			run: func(f *fixture, _ *time.Time) { f.once() }},
		{name: "deleted below minCount", controlled: true,
			run: func(f *fixture, _ *time.Time) { f.once(); del(f) }},
		{name: "deleted once told it cannot be released", controlled: false,
			run: func(f *fixture, now *time.Time) {
				f.once()
				*now = now.Add(time.Minute)
				f.wake("small")
				f.once()
				del(f)
			}},
		{name: "deleted during its failing attempt", controlled: true,
			run: func(f *fixture, _ *time.Time) {
				first := true
				f.s.reporter = hookReporter{warnReporter: f.s.reporter.(warnReporter), on: func() {
					if first {
						first = false
						del(f)
					}
				}}
				f.once()
			}},
		{name: "deleted during its failing attempt, past the grace", controlled: false,
			run: func(f *fixture, now *time.Time) {
				f.once()
				*now = now.Add(time.Minute)
				f.wake("small")
				f.s.reporter = hookReporter{warnReporter: f.s.reporter.(warnReporter), on: func() { del(f) }}
				f.once()
			}},
		{name: "completed", controlled: true,
			run: func(f *fixture, _ *time.Time) {
				f.once()
				f.h.AddNode(node("n3", 2000))
				if out := f.once(); out.Result != Scheduled {
					t.Fatalf("the gang with room for its missing members: %+v", out)
				}
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, _, _, now := partialGang(t, tc.controlled)
			tc.run(f, now)
			if got := f.s.release.held(); got != tc.want {
				t.Fatalf("gang release holds %d entries, want %d", got, tc.want)
			}
		})
	}
}

// TestReleasedSchedulerLeavesTheCachesGangRelease: the cache, which
// outlives the term, points at the gang release state of the scheduler
// that enabled it until that scheduler is released, and no longer after.
func TestReleasedSchedulerLeavesTheCachesGangRelease(t *testing.T) {
	f, _, _, _ := partialGang(t, true)
	if f.c.release.Load() != f.s.release {
		t.Fatal("the cache does not point at the term's gang release")
	}
	f.s.Release()
	if r := f.c.release.Load(); r != nil {
		t.Fatalf("a released scheduler's gang release is still the cache's: %p", r)
	}
}
