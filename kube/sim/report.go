package sim

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/schedq/schedq"
	"github.com/schedq/schedq/kube/clusterevent"
	"github.com/schedq/schedq/kube/scheduler"
)

var discardLogger = slog.New(slog.DiscardHandler)

// Report is what a run found. Everything but Wall depends only on the
// scenario and its seed.
type Report struct {
	Scenario string   `json:"scenario"`
	Seed     uint64   `json:"seed"`
	Settings Settings `json:"settings"`

	Pods      int `json:"pods"`
	Scheduled int `json:"scheduled"`
	Pending   int `json:"pending"`
	Evicted   int `json:"evicted,omitempty"`
	// TaintEvicted counts the pods recreated after a NoExecute taint
	// evicted them.
	TaintEvicted int `json:"taintEvicted,omitempty"`
	// Of the scheduled pods: Finished ran their lifetime, DeletedBound were
	// deleted while bound, Preempted were evicted to make room for others,
	// Running still run at the end. Withdrawn pods were deleted before
	// they were bound (and are not pending).
	Finished     int `json:"finished,omitempty"`
	DeletedBound int `json:"deletedAfterBinding,omitempty"`
	Preempted    int `json:"preempted,omitempty"`
	Withdrawn    int `json:"deletedWhilePending,omitempty"`
	Running      int `json:"running,omitempty"`
	// Allocation is the cluster's allocated fractions over the run;
	// Production, for a trace, the trace's own figures.
	Allocation *AllocSummary `json:"allocation,omitempty"`
	Production *Production   `json:"production,omitempty"`
	TraceSim   *TraceSim     `json:"traceSimulated,omitempty"`
	// Gangs says how the scenario's gangs fared.
	Gangs *GangSummary `json:"gangs,omitempty"`
	// Snapshot says what the starting snapshot held.
	Snapshot *SnapshotSummary `json:"snapshot,omitempty"`
	// Alloc is the allocated fractions over virtual time; not in the JSON.
	Alloc []AllocSample `json:"-"`
	// Records follow each pod; not in the JSON (see WriteRecords).
	Records []PodRecord `json:"-"`
	// Markers are the scenario's events, for the HTML page's time axis;
	// not in the JSON.
	Markers []Marker `json:"-"`
	// showAlloc prints the allocation in the text report.
	showAlloc bool
	// gpuHours is the GPU capacity bound pods requested over the run, in
	// GPU-hours (PolicyRowOf).
	gpuHours float64
	// PendingReasons groups the pods still pending by where they are and
	// why (the queue's explanation and the last failure message).
	PendingReasons []Count `json:"pendingReasons,omitempty"`
	// ByPriority breaks scheduled and total pods down by priority, when
	// there is more than one.
	ByPriority []PriorityCount `json:"byPriority,omitempty"`
	// ByProfile breaks the pods down by profile, in scheduler.config's
	// order, when the run has several (profiles.go).
	ByProfile []ProfileCount `json:"byProfile,omitempty"`
	// Preemption counts preemptions and victims, when it was on.
	Preemption *PreemptionSummary `json:"preemption,omitempty"`

	// Attempts counts scheduling attempts (cycles): a gang's attempt is
	// one, however many members it tries. PodAttempts counts each pod's
	// own attempts: a gang's attempt counts once for every member it
	// tries. Without gangs the two are equal.
	Attempts    int `json:"attempts"`
	PodAttempts int `json:"podAttempts"`
	// AttemptsPerPod is a histogram of pod attempts: how many pods needed
	// 1, 2, 3, 4-5, 6-10 or more than 10. It sums to PodAttempts.
	AttemptsPerPod []Count `json:"attemptsPerPod"`
	// WastedAttempts failed for the same reasons as the pod's previous
	// failed attempt, or a gang's group attempt as the group's previous
	// one (counted once): nothing that matters to it had changed.
	WastedAttempts int `json:"wastedAttempts"`

	TimeToSchedule Percentiles `json:"timeToSchedule"`
	// ByNamespace breaks the pods and their time to schedule down by
	// namespace, when there is more than one.
	ByNamespace []NamespaceStats `json:"byNamespace,omitempty"`
	// VirtualSeconds is the virtual time from the first arrival to the
	// last binding (or the end); RunSeconds the whole run's.
	VirtualSeconds float64 `json:"virtualSeconds"`
	RunSeconds     float64 `json:"runSeconds"`
	// PodsPerSecond is scheduled pods per virtual second.
	PodsPerSecond float64 `json:"podsPerSecond"`

	Incoming []IncomingCount `json:"incoming"`
	Peak     schedq.Counts   `json:"peak"`

	// Series is each sub-queue's size over virtual time (for the HTML
	// report); not in the JSON.
	Series []Sample `json:"-"`
	// Wall is the wall-clock cost of the run; the only part that changes
	// from run to run.
	Wall *WallClock `json:"wall,omitempty"`
}

// Settings are the effective settings of a run.
type Settings struct {
	PopFromBackoff     bool   `json:"popFromBackoff"`
	QueueingHints      bool   `json:"queueingHints"`
	InitialBackoff     string `json:"initialBackoff"`
	MaxBackoff         string `json:"maxBackoff"`
	MaxInUnschedulable string `json:"maxInUnschedulable"`
	AttemptCost        string `json:"attemptCost"`
	BindLatency        string `json:"bindLatency"`
	Scoring            string `json:"scoring"`
	Fairness           bool   `json:"fairness,omitempty"`
}

// PriorityCount is how many pods of one priority were scheduled.
type PriorityCount struct {
	Priority  int32 `json:"priority"`
	Scheduled int   `json:"scheduled"`
	Pods      int   `json:"pods"`
}

// Count is a labelled count.
type Count struct {
	Label string `json:"label"`
	Count int    `json:"count"`
}

// IncomingCount is scheduler_queue_incoming_pods_total for one label pair.
type IncomingCount struct {
	Queue string `json:"queue"`
	Event string `json:"event"`
	Count int    `json:"count"`
}

// Percentiles of a virtual duration, in seconds.
type Percentiles struct {
	P50 float64 `json:"p50"`
	P90 float64 `json:"p90"`
	P99 float64 `json:"p99"`
	Max float64 `json:"max"`
}

// WallClock is what the run cost in real time.
type WallClock struct {
	Seconds         float64 `json:"seconds"`
	CyclesPerSecond float64 `json:"cyclesPerSecond"`
}

func (s *sim) report() *Report {
	sc := s.sc
	r := &Report{Scenario: sc.Name, Seed: sc.Seed, Pods: len(s.order), Attempts: s.attempts, WastedAttempts: s.wasted,
		Evicted: s.evicted, TaintEvicted: s.taintEvicted, Peak: s.peak, Series: s.series, Preemption: s.pre.summary()}
	r.Settings = s.settings()
	first, last := s.reportPods(r)
	r.ByProfile = s.profileCounts()
	if last.IsZero() {
		last = s.now
	}
	if first.IsZero() {
		first = last // no pod arrived: the span is empty
	}
	r.VirtualSeconds = last.Sub(first).Seconds()
	r.RunSeconds = s.now.Sub(epoch).Seconds()
	if r.VirtualSeconds > 0 {
		r.PodsPerSecond = float64(r.Scheduled) / r.VirtualSeconds
	}
	r.Incoming = s.rec.counts()
	s.reportNamespaces(r)
	s.reportExtras(r)
	s.gangReport(r)
	return r
}

// settings are the queue's and the scheduler's settings the run used,
// defaults filled in.
func (s *sim) settings() Settings {
	sc := s.sc
	st := Settings{
		PopFromBackoff:     sc.Queue.PopFromBackoff == nil || *sc.Queue.PopFromBackoff,
		QueueingHints:      sc.Queue.QueueingHints == nil || *sc.Queue.QueueingHints,
		InitialBackoff:     orDefault(sc.Queue.InitialBackoff, defaultInitialBackoff).String(),
		MaxBackoff:         orDefault(deref(sc.Queue.MaxBackoff), defaultMaxBackoff).String(),
		MaxInUnschedulable: orDefault(sc.Queue.MaxInUnschedulable, defaultMaxInUnschedulable).String(),
		AttemptCost:        orDefault(sc.Scheduler.AttemptCost, 5*time.Millisecond).String(),
		BindLatency:        orDefault(sc.Scheduler.BindLatency, defaultBindLatency).String(),
		Scoring:            sc.Scheduler.scoringLabel(),
		Fairness:           sc.Queue.Fairness,
	}
	if sc.Queue.backoffOff() {
		st.InitialBackoff, st.MaxBackoff = "off", "off"
	}
	return st
}

// attemptBuckets are the report's classes of attempts per pod.
var attemptBuckets = []struct {
	label  string
	lo, hi int
}{{"1", 1, 1}, {"2", 2, 2}, {"3", 3, 3}, {"4-5", 4, 5}, {"6-10", 6, 10}, {">10", 11, 1 << 62}, {"0 (never tried)", 0, 0}}

// reportPods fills r's per-pod figures (attempts, scheduled and pending
// pods with their reasons, counts by priority, time to schedule) and
// returns the first arrival and the last binding, zero if none. O(pods).
func (s *sim) reportPods(r *Report) (first, last time.Time) {
	hist := make([]int, len(attemptBuckets))
	var waits []time.Duration
	pending := map[string]int{}
	byPrio := map[int32]*PriorityCount{}
	for _, st := range s.order {
		pc := byPrio[st.priority]
		if pc == nil {
			pc = &PriorityCount{Priority: st.priority}
			byPrio[st.priority] = pc
		}
		pc.Pods++
		r.PodAttempts += st.attempts
		if !st.bound.IsZero() {
			pc.Scheduled++
		}
		if first.IsZero() || st.arrived.Before(first) {
			first = st.arrived
		}
		for i, b := range attemptBuckets {
			if st.attempts >= b.lo && st.attempts <= b.hi {
				hist[i]++
				break
			}
		}
		if !st.bound.IsZero() {
			r.Scheduled++
			waits = append(waits, st.bound.Sub(st.arrived))
			if st.bound.After(last) {
				last = st.bound
			}
			continue
		}
		if _, alive := s.cl.pods[st.key]; !alive {
			continue // deleted before it was bound
		}
		r.Pending++
		pending[s.pendingReason(st)]++
	}
	for i, b := range attemptBuckets {
		if hist[i] > 0 {
			r.AttemptsPerPod = append(r.AttemptsPerPod, Count{b.label, hist[i]})
		}
	}
	r.PendingReasons = sortedCounts(pending)
	if len(byPrio) > 1 {
		for _, pc := range byPrio {
			r.ByPriority = append(r.ByPriority, *pc)
		}
		sort.Slice(r.ByPriority, func(i, j int) bool { return r.ByPriority[i].Priority > r.ByPriority[j].Priority })
	}
	if len(waits) > 0 {
		slices.Sort(waits)
		pct := func(p float64) float64 { return waits[min(len(waits)-1, int(p*float64(len(waits))))].Seconds() }
		r.TimeToSchedule = Percentiles{P50: pct(0.50), P90: pct(0.90), P99: pct(0.99), Max: waits[len(waits)-1].Seconds()}
	}
	return first, last
}

// pendingReason names why a pod is still pending: its place, the plugins
// holding it, and its last failure message.
func (s *sim) pendingReason(st *podStat) string {
	x, err := s.explainAtEnd(st.key)
	if err != nil {
		return "unknown to the queue"
	}
	switch x.Location {
	case schedq.InGated:
		return s.gateReason(st, x.GatedBy)
	case schedq.InActive, schedq.InFlight:
		return x.Location.String() + ": " + unfinished(st, x.Location)
	}
	msg := st.lastMessage
	if msg == "" {
		msg = x.Reason
	}
	return fmt.Sprintf("%s: %s", x.Location, msg)
}

// gateReason names the plugin that holds a gated pod back and, as
// schedq explain does (scheduler.GateReasons), its own reason: which
// claim is missing, which gates are left.
func (s *sim) gateReason(st *podStat, plugin string) string {
	head := "gated by " + plugin
	p := s.cl.pods[st.key]
	if p == nil || len(s.fws) == 0 {
		return head
	}
	if s.gates == nil {
		s.gates = scheduler.NewGateReasons(context.Background(), s.fws...).WithGangGate(s.h.Cache)
	}
	if msg := s.gates.Of(plugin, p); msg != "" {
		return head + ": " + msg
	}
	return head
}

// unfinished says what was happening to a pod in activeQ or in flight
// when the run ended: its binding or its attempt under way, or its wait
// for a first or another attempt.
func unfinished(st *podStat, loc schedq.Location) string {
	switch {
	case st.bindingTo != "":
		return "its binding to " + st.bindingTo + " was under way when the run ended"
	case loc == schedq.InFlight:
		return "its scheduling attempt was under way when the run ended"
	case st.attempts > 0:
		return "tried before, waiting for another attempt when the run ended"
	}
	return "not tried yet when the run ended"
}

func sortedCounts(m map[string]int) []Count {
	out := make([]Count, 0, len(m))
	for k, v := range m {
		out = append(out, Count{k, v})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Count != out[j].Count {
			return out[i].Count > out[j].Count
		}
		return out[i].Label < out[j].Label
	})
	return out
}

// The queue's defaults, which are kube-scheduler's, as the report states
// them for a scenario that leaves them unset.
const (
	defaultInitialBackoff     = time.Second
	defaultMaxBackoff         = 10 * time.Second
	defaultMaxInUnschedulable = 5 * time.Minute
)

func orDefault(d, def time.Duration) time.Duration {
	if d == 0 {
		return def
	}
	return d
}

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// WriteText writes the report for people. With wall false, the wall-clock
// line is left out, so that two runs of one seed print the same bytes.
func (r *Report) WriteText(w io.Writer, wall bool) {
	p := func(format string, args ...any) { fmt.Fprintf(w, format+"\n", args...) }
	p("scenario %s (seed %d)", r.Scenario, r.Seed)
	st := r.Settings
	p("  queue: popFromBackoff=%v hints=%v backoff %s..%s maxInUnschedulable=%s; scheduler: attempt %s, bind %s, %s",
		st.PopFromBackoff, st.QueueingHints, st.InitialBackoff, st.MaxBackoff, st.MaxInUnschedulable, st.AttemptCost, st.BindLatency, st.Scoring)
	p("")
	p("pods             %d scheduled, %d pending, of %d%s%s", r.Scheduled, r.Pending, r.Pods, evicted(r.Evicted), taintEvicted(r.TaintEvicted))
	for _, c := range r.PendingReasons {
		p("  %6d  %s", c.Count, c.Label)
	}
	for _, c := range r.ByPriority {
		p("  priority %-6d %d of %d scheduled", c.Priority, c.Scheduled, c.Pods)
	}
	for _, c := range r.ByProfile {
		p("  profile %s: %d scheduled, %d pending, of %d", c.Profile, c.Scheduled, c.Pending, c.Pods)
	}
	r.writeEndings(p)
	r.writePreemption(p)
	r.writeAttempts(p)
	t := r.TimeToSchedule
	if r.Scheduled == 0 {
		p("time to schedule no pod was scheduled")
	} else {
		p("time to schedule p50 %s, p90 %s, p99 %s, max %s (virtual)", secs(t.P50), secs(t.P90), secs(t.P99), secs(t.Max))
	}
	r.writeNamespaces(p)
	r.writeThroughput(p)
	r.writeGangs(p)
	if wall && r.Wall != nil {
		p("wall clock       %.2fs, %.0f scheduling cycles/s", r.Wall.Seconds, r.Wall.CyclesPerSecond)
	}
	p("peak sizes       active %d, backoff %d, unschedulable %d, gated %d, in flight %d",
		r.Peak.Active, r.Peak.Backoff, r.Peak.Unschedulable, r.Peak.Gated, r.Peak.InFlight)
	p("incoming (scheduler_queue_incoming_pods_total)")
	for _, c := range r.Incoming {
		p("  %-14s %-24s %d", c.Queue, c.Event, c.Count)
	}
	r.writeExtras(p, r.showAlloc)
}

// writeAttempts prints the attempts: with gangs, both the scheduling
// attempts (a gang's counting once) and the pod attempts (counting once
// per member), which the per-pod histogram sums to.
func (r *Report) writeAttempts(p func(string, ...any)) {
	if r.PodAttempts == r.Attempts {
		p("attempts         %d (%.2f per pod), %d wasted (failed again for the same reasons)", r.Attempts, perPod(r.Attempts, r.Pods), r.WastedAttempts)
	} else {
		p("attempts         %d scheduling attempts (a gang's attempt counts once); %d pod attempts (%.2f per pod; a gang's attempt counts once per member); %d wasted (failed again for the same reasons)",
			r.Attempts, r.PodAttempts, perPod(r.PodAttempts, r.Pods), r.WastedAttempts)
	}
	var hist []string
	for _, c := range r.AttemptsPerPod {
		hist = append(hist, fmt.Sprintf("%s: %d", c.Label, c.Count))
	}
	p("attempts per pod %s", strings.Join(hist, ", "))
}

// rateText prints a throughput in pods/s (or a difference of two): to
// one decimal, or, under 0.05 pods/s (a trace's months), to two
// significant digits, where one
// decimal would print 0.0, as for a run that scheduled nothing.
func rateText(v float64) string {
	if v == 0 || math.Abs(v) >= 0.05 || math.IsNaN(v) || math.IsInf(v, 0) {
		return fmt.Sprintf("%.1f", v)
	}
	digits := 1 - int(math.Floor(math.Log10(math.Abs(v))))
	return fmt.Sprintf("%.*f", digits, v)
}

// writeThroughput prints the throughput over its span, from the first
// arrival to the last binding, and the run's length when it differs:
// the one run length of the report.
func (r *Report) writeThroughput(p func(string, ...any)) {
	if time.Duration(math.Abs(r.RunSeconds-r.VirtualSeconds)*float64(time.Second)) < time.Millisecond {
		p("throughput       %s pods/s over %s of virtual time", rateText(r.PodsPerSecond), secs(r.VirtualSeconds))
		return
	}
	p("throughput       %s pods/s over %s, from the first arrival to the last binding; the run lasted %s of virtual time",
		rateText(r.PodsPerSecond), secs(r.VirtualSeconds), secs(r.RunSeconds))
}

func taintEvicted(n int) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprintf(" (%d recreated after a NoExecute taint evicted them)", n)
}

func evicted(n int) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprintf(" (%d recreated after their node was removed)", n)
}

func perPod(n, pods int) float64 {
	if pods == 0 {
		return 0
	}
	return float64(n) / float64(pods)
}

func secs(s float64) string {
	return time.Duration(s * float64(time.Second)).Round(time.Millisecond).String()
}

// countingRecorder counts the queue's incoming events, by sub-queue and
// event, for the report.
type countingRecorder struct {
	n    map[[2]string]int
	left func(time.Duration) // a stay ended (places.go)
}

func newCountingRecorder() *countingRecorder { return &countingRecorder{n: map[[2]string]int{}} }

func (r *countingRecorder) Incoming(q schedq.Location, event string) {
	if l, ok := clusterevent.QueueLabels[event]; ok {
		event = l // kube-scheduler's name for it
	}
	r.n[[2]string{q.String(), event}]++
}
func (r *countingRecorder) Left(_ schedq.Location, d time.Duration) {
	if r.left != nil {
		r.left(d)
	}
}
func (r *countingRecorder) Scheduled(time.Duration, bool)                      {}
func (r *countingRecorder) HintStart() int64                                   { return 0 }
func (r *countingRecorder) HintDone(int64, string, string, schedq.Hint, error) {}
func (r *countingRecorder) Moved(string, int, int)                             {}
func (r *countingRecorder) Popped(string)                                      {}

// IncomingGroup counts a group's entity entering q as one arrival, as
// Incoming does an item; JoinedGroup counts nothing: the report counts
// what enters each sub-queue, and a member joining an entity already
// there enters none.
func (r *countingRecorder) IncomingGroup(q schedq.Location, event string, _ int) {
	r.Incoming(q, event)
}
func (r *countingRecorder) JoinedGroup(schedq.Location, string, int) {}

func (r *countingRecorder) counts() []IncomingCount {
	out := make([]IncomingCount, 0, len(r.n))
	for k, v := range r.n {
		out = append(out, IncomingCount{k[0], k[1], v})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Queue != out[j].Queue {
			return out[i].Queue < out[j].Queue
		}
		return out[i].Event < out[j].Event
	})
	return out
}
