// Package diff replays one random operation sequence on the upstream queue
// and on schedq and reports the first step where they disagree: which
// sub-queue holds each pod, or which pod Pop returns.
package diff

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/schedq/schedq/bench/compare/internal/schedqdrv"
	"github.com/schedq/schedq/bench/compare/internal/upstream"
)

// Pods are named p0..p7 with fixed, distinct priorities, so that the pop
// order is fully defined for both queues.
var names = []string{"p0", "p1", "p2", "p3", "p4", "p5", "p6", "p7"}

func prio(i int) int32 { return int32(i * 10) }

var (
	plugins  = []string{upstream.PluginA, upstream.PluginB, upstream.PluginC}
	evs      = []upstream.Event{upstream.NodeAdd, upstream.NodeUpdateTaint, upstream.AssignedPodDelete, upstream.Wildcard}
	policies = []upstream.HintPolicy{upstream.HintQueueAll, upstream.HintSkipAll, upstream.HintByLabel, upstream.HintError}
	steps    = []time.Duration{0, 100 * time.Millisecond, 500 * time.Millisecond, time.Second, 3 * time.Second, 11 * time.Second, time.Minute, 6 * time.Minute}
)

// backoffs are the backoff settings the runs take in turn: the defaults,
// others that move the exponential curve against the 1s windows of
// pop-from-backoff and the clock steps above, and pop-from-backoff off.
var backoffs = []upstream.Options{
	{},
	{InitialBackoff: 2 * time.Second, MaxBackoff: 8 * time.Second},
	{InitialBackoff: time.Second, MaxBackoff: time.Second},
	{InitialBackoff: 500 * time.Millisecond, MaxBackoff: 3 * time.Second},
	{MaxInUnschedulable: 30 * time.Second},
	{DisablePopFromBackoff: true},
}

// Result is the outcome of one replay.
type Result struct {
	Steps int
	// Mismatch is empty if the queues agreed throughout; else it describes
	// the first disagreement and the operations that led to it.
	Mismatch string
}

// Run replays n random operations, drawn from seed, on both queues.
// check, if not nil, runs after every step on the schedq side (for its
// invariants) and stops the run with its error.
func Run(seed uint64, n int, check func(*schedqdrv.Driver) error) Result {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	opts := backoffs[seed%uint64(len(backoffs))]
	up := upstream.New(opts)
	defer up.Close()
	sq := schedqdrv.New(opts)

	known := map[string]bool{}
	inflight := map[string]bool{}
	labels := map[string]map[string]string{}
	// erred marks pods whose last attempt failed with an error. Upstream
	// records a gate as a rejecting plugin, so an errored pod that is gated
	// and later released moves to the unschedulable backoff heap, where Pop
	// may take it before its error backoff ends. schedq keeps it in error
	// backoff (a deliberate divergence, see the README), so the generator
	// does not gate errored pods.
	erred := map[string]bool{}
	gated := func(name string) bool { _, g := labels[name][upstream.LabelGated]; return g }
	var log []string

	randLabels := func() map[string]string {
		l := map[string]string{}
		if r.IntN(4) == 0 {
			l[upstream.LabelGated] = "true"
		}
		var wake []string
		for _, p := range plugins {
			if r.IntN(2) == 0 {
				wake = append(wake, p)
			}
		}
		if len(wake) > 0 {
			l[upstream.LabelWake] = strings.Join(wake, ",")
		}
		return l
	}
	randPlugins := func() []string {
		var out []string
		for _, p := range plugins {
			if r.IntN(2) == 0 {
				out = append(out, p)
			}
		}
		if len(out) == 0 {
			out = []string{plugins[r.IntN(len(plugins))]}
		}
		return out
	}
	for step := range n {
		i := r.IntN(len(names))
		name := names[i]
		var op string
		switch k := r.IntN(14); {
		case k < 2:
			// A name is reused only once its last attempt has ended: the
			// upstream driver names UIDs after pods, and upstream drops a
			// pod popped while its UID is in flight (a known divergence).
			if known[name] || inflight[name] {
				continue
			}
			l := randLabels()
			op = fmt.Sprintf("Add %s %v", name, l)
			known[name], labels[name], erred[name] = true, l, false
			up.AddLabeled(name, prio(i), l)
			sq.AddLabeled(name, prio(i), l)
		case k < 5:
			a, okA := up.Pop()
			b, okB := sq.Pop()
			op = fmt.Sprintf("Pop -> upstream %q, schedq %q", a, b)
			if okA != okB || a != b {
				log = append(log, op)
				return Result{step, fmt.Sprintf("step %d: Pop differs: upstream %q, schedq %q\n%s", step, a, b, tail(log))}
			}
			if okA {
				inflight[a] = true
			}
		case k < 7:
			if !inflight[name] {
				continue
			}
			delete(inflight, name)
			if r.IntN(3) == 0 && !gated(name) {
				erred[name] = true
				op = "FailError " + name
				up.FailError(name)
				sq.FailError(name)
			} else {
				ps := randPlugins()
				erred[name] = false
				op = fmt.Sprintf("FailUnschedulable %s %v", name, ps)
				up.FailUnschedulable(name, ps)
				sq.FailUnschedulable(name, ps)
			}
		case k < 8:
			if !inflight[name] {
				continue
			}
			delete(inflight, name)
			delete(known, name)
			op = "Done " + name
			up.Done(name)
			sq.Done(name)
		case k < 9:
			if !known[name] {
				continue
			}
			l := randLabels()
			if erred[name] {
				delete(l, upstream.LabelGated)
			}
			op = fmt.Sprintf("Update %s %v", name, l)
			labels[name] = l
			up.Update(name, prio(i), l)
			sq.Update(name, prio(i), l)
		case k < 10:
			if !known[name] || r.IntN(2) == 0 {
				continue
			}
			delete(known, name)
			op = "Delete " + name
			up.Delete(name)
			sq.Delete(name)
		case k < 11:
			e, p := evs[r.IntN(len(evs))], policies[r.IntN(len(policies))]
			op = fmt.Sprintf("MoveAll %s %s", e, p)
			up.MoveAll(e, p)
			sq.MoveAll(e, p)
		case k < 12:
			op = "Activate " + name
			up.Activate(name)
			sq.Activate(name)
		case k < 13:
			d := steps[r.IntN(len(steps))]
			op = fmt.Sprintf("Step %v", d)
			up.Step(d)
			sq.Step(d)
		default:
			// schedq's Tick runs the backoff flush, then the leftover flush;
			// upstream runs the same two. Since v1.37 upstream ages a flushed
			// entity from its last flush, so a gated pod is re-flushed once
			// per MaxInUnschedulable, as schedq re-checks it; v1.36.3
			// re-flushed it at every leftover flush (#139331), and the
			// generator then skipped the flush while a pod was gated and
			// another in flight. The flush now runs in every state.
			op = stepFlush(up, sq, steps[r.IntN(len(steps))])
		}
		log = append(log, op)
		if msg := compare(up, sq, names, check); msg != "" {
			return Result{step, fmt.Sprintf("step %d: %s\n%s", step, msg, tail(log))}
		}
	}
	return Result{Steps: n}
}

// stepFlush advances both queues' clocks by d and runs both flushes
// (schedq's Flush is upstream's backoff flush, then its leftover flush).
func stepFlush(up *upstream.Driver, sq *schedqdrv.Driver, d time.Duration) string {
	up.Step(d)
	sq.Step(d)
	up.FlushBackoff()
	up.FlushUnschedulable()
	sq.Flush()
	return fmt.Sprintf("Step %v, Flush", d)
}

// compare says where the two queues first disagree on where one of names
// is, or what check finds wrong with schedq; "" if nothing.
func compare(up *upstream.Driver, sq *schedqdrv.Driver, names []string, check func(*schedqdrv.Driver) error) string {
	for _, n := range names {
		if a, b := up.Where(n), sq.Where(n); a != b {
			return fmt.Sprintf("%s is %s upstream, %s in schedq", n, a, b)
		}
	}
	if check != nil {
		if err := check(sq); err != nil {
			return fmt.Sprintf("schedq check: %v", err)
		}
	}
	return ""
}

func tail(log []string) string {
	if len(log) > 40 {
		log = log[len(log)-40:]
	}
	return "  " + strings.Join(slices.Clone(log), "\n  ")
}
