// Package metrics exports a schedq queue's metrics to Prometheus, under
// kube-scheduler's metric names and labels, so that existing dashboards and
// alerts work unchanged. It registers on the prometheus.Registerer its
// caller gives it; it keeps no global state.
//
// Counters and histograms are pushed by the queue through the
// schedq.Recorder interface. Levels (items per sub-queue, per plugin,
// in-flight events) are read from the queue when Prometheus scrapes, so
// they always equal the queue's own counts and cannot go negative or leak.
package metrics

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/schedq/schedq"
)

// Options configures the metric names. With the zero value the names and
// labels are exactly kube-scheduler's: scheduler_pending_pods and so on.
type Options struct {
	// Namespace prefixes every name. Default none.
	Namespace string
	// Subsystem follows the namespace. Default "scheduler".
	Subsystem string
	// Profile is the profile label of scheduler_unschedulable_pods.
	// Default "default-scheduler".
	Profile string
	// DisableTenantLabel drops the tenant label of the fair-sharing
	// metrics (queue_tenant_*), which then sum over the tenants: for
	// queues with many tenants, to bound the metrics' cardinality.
	DisableTenantLabel bool
	// EventLabels renames event labels on their way out: the queue names
	// its own events generically ("ItemAdd"), and a Kubernetes scheduler
	// maps them to kube-scheduler's names ("UnscheduledPodAdd"). Labels
	// not in the map pass unchanged.
	EventLabels map[string]string
	// ItemType and GroupType are the type labels of the entity metrics
	// (scheduler_queued_entities, scheduler_queue_incoming_entities_total)
	// for lone items and for groups. Default "pod" and "podgroup".
	ItemType, GroupType string
}

// Source is where levels are read at scrape time. *schedq.Queue
// implements it.
type Source interface {
	Stats() schedq.Stats
}

// Recorder implements schedq.Recorder on Prometheus metrics. Set it as the
// queue's Config.Recorder, then Register it with the queue as its Source.
// It is safe for concurrent use.
type Recorder struct {
	opts  Options
	start time.Time // hint timings count from here, on the monotonic clock

	tenants *tenantMetrics // fair sharing's (tenants.go)

	incoming   *prometheus.CounterVec
	entitiesIn *prometheus.CounterVec
	hints      *prometheus.HistogramVec
	afterFlush prometheus.Counter
	wait       prometheus.Histogram
	inQueue    *prometheus.HistogramVec
	inQueueBy  [schedq.InGated + 1]prometheus.Observer
	examined   *prometheus.CounterVec
	moved      *prometheus.CounterVec

	counters cache[incomingKey, prometheus.Counter]
	entityIn cache[entityKey, prometheus.Counter]
	hintObs  cache[hintKey, prometheus.Observer]
	mu       sync.Mutex
	source   Source
	// shown are the plugins and event labels the level gauges have
	// exported, reported at 0 once the queue has none (guarded by mu).
	shownPlugins, shownEvents map[string]bool

	pending, unschedulable, inflight, entities *prometheus.Desc
}

type entityKey struct {
	q     schedq.Location
	event string
	group bool
}

type incomingKey struct {
	q     schedq.Location
	event string
}

type hintKey struct{ plugin, event, hint string }

// cache maps label values to resolved metrics. It is copy-on-write, so the
// hot path reads it without a lock; a miss resolves the metric once.
type cache[K comparable, V any] struct {
	m       atomic.Pointer[map[K]V]
	mu      sync.Mutex
	resolve func(K) V
}

func (c *cache[K, V]) get(k K) V {
	if m := c.m.Load(); m != nil {
		if v, ok := (*m)[k]; ok {
			return v
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	old := map[K]V{}
	if m := c.m.Load(); m != nil {
		old = *m
	}
	if v, ok := old[k]; ok {
		return v
	}
	v := c.resolve(k)
	next := make(map[K]V, len(old)+1)
	for kk, vv := range old {
		next[kk] = vv
	}
	next[k] = v
	c.m.Store(&next)
	return v
}

var _ schedq.Recorder = (*Recorder)(nil)

// New returns a Recorder with the given names. Register it to export.
func New(o Options) *Recorder {
	if o.Subsystem == "" {
		o.Subsystem = "scheduler"
	}
	if o.Profile == "" {
		o.Profile = "default-scheduler"
	}
	if o.ItemType == "" {
		o.ItemType = "pod"
	}
	if o.GroupType == "" {
		o.GroupType = "podgroup"
	}
	name := func(n string) string { return prometheus.BuildFQName(o.Namespace, o.Subsystem, n) }
	r := &Recorder{
		opts:  o,
		start: time.Now(),
		incoming: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: o.Namespace, Subsystem: o.Subsystem, Name: "queue_incoming_pods_total",
			Help: "Number of pods added to scheduling queues by event and queue type.",
		}, []string{"queue", "event"}),
		entitiesIn: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: o.Namespace, Subsystem: o.Subsystem, Name: "queue_incoming_entities_total",
			Help: "Number of queue entities (lone pods and pod groups) added to scheduling queues by event, queue type and entity type.",
		}, []string{"queue", "event", "type"}),
		hints: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: o.Namespace, Subsystem: o.Subsystem, Name: "queueing_hint_execution_duration_seconds",
			Help:    "Duration for running a queueing hint function of a plugin.",
			Buckets: prometheus.ExponentialBuckets(0.000001, 1.5, 21),
		}, []string{"plugin", "event", "hint"}),
		afterFlush: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: o.Namespace, Subsystem: o.Subsystem, Name: "pod_scheduled_after_flush_total",
			Help: "Number of pods that were scheduled after being flushed from the unschedulable pods by the timeout.",
		}),
		wait: prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: o.Namespace, Subsystem: o.Subsystem, Name: "queue_wait_duration_seconds",
			Help:    "Time from an item's first entry into activeQ to the pop of its successful attempt.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 20),
		}),
		inQueue: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: o.Namespace, Subsystem: o.Subsystem, Name: "queue_subqueue_duration_seconds",
			Help:    "Time an item spent in a sub-queue before leaving it, by sub-queue.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 20),
		}, []string{"queue"}),
		examined: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: o.Namespace, Subsystem: o.Subsystem, Name: "queue_move_examined_pods_total",
			Help: "Parked items a move request looked at (after the plugin index), by event.",
		}, []string{"event"}),
		moved: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: o.Namespace, Subsystem: o.Subsystem, Name: "queue_move_woken_pods_total",
			Help: "Parked items a move request moved to activeQ or backoffQ, by event.",
		}, []string{"event"}),
		pending: prometheus.NewDesc(name("pending_pods"),
			"Number of pending pods, by the queue type. 'active' means number of pods in activeQ; 'backoff' means number of pods in backoffQ; 'unschedulable' means number of pods in unschedulablePods that the scheduler attempted to schedule and failed; 'gated' is the number of unschedulable pods that the scheduler never attempted to schedule because they are gated.",
			[]string{"queue"}, nil),
		unschedulable: prometheus.NewDesc(name("unschedulable_pods"),
			"The number of unschedulable pods broken down by plugin name. A pod will increment the gauge for all plugins that caused it to not schedule and so this metric have meaning only when broken down by plugin.",
			[]string{"plugin", "profile"}, nil),
		entities: prometheus.NewDesc(name("queued_entities"),
			"Number of queue entities (lone pods and pod groups, a group counting once), by queue type and entity type.",
			[]string{"queue", "type"}, nil),
		inflight: prometheus.NewDesc(name("inflight_events"),
			"Number of events currently tracked in the scheduling queue.",
			[]string{"event"}, nil),
	}
	r.tenants = newTenantMetrics(o, name)
	for q := schedq.InActive; q <= schedq.InGated; q++ {
		r.inQueueBy[q] = r.inQueue.WithLabelValues(q.String())
	}
	r.counters.resolve = func(k incomingKey) prometheus.Counter {
		return r.incoming.WithLabelValues(k.q.String(), r.event(k.event))
	}
	r.entityIn.resolve = func(k entityKey) prometheus.Counter {
		t := o.ItemType
		if k.group {
			t = o.GroupType
		}
		return r.entitiesIn.WithLabelValues(k.q.String(), r.event(k.event), t)
	}
	r.hintObs.resolve = func(k hintKey) prometheus.Observer {
		return r.hints.WithLabelValues(k.plugin, r.event(k.event), k.hint)
	}
	return r
}

// ErrRegistered is returned by a second Register.
var ErrRegistered = errors.New("metrics: recorder already registered")

// Register exports the metrics on reg, reading levels from src at every
// scrape. A Recorder can be registered once.
func (r *Recorder) Register(reg prometheus.Registerer, src Source) error {
	if reg == nil || src == nil {
		return fmt.Errorf("metrics: Register needs a Registerer and a Source")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.source != nil {
		return ErrRegistered
	}
	for _, c := range []prometheus.Collector{r.incoming, r.entitiesIn, r.hints, r.afterFlush, r.wait, r.inQueue, r.examined, r.moved, levels{r}} {
		if err := reg.Register(c); err != nil {
			return fmt.Errorf("metrics: %w", err)
		}
	}
	if err := r.tenants.register(reg, r); err != nil {
		return err
	}
	r.source = src
	return nil
}

// event renames an event label as Options.EventLabels says.
func (r *Recorder) event(label string) string {
	if l, ok := r.opts.EventLabels[label]; ok {
		return l
	}
	return label
}

// Incoming implements schedq.Recorder.
func (r *Recorder) Incoming(q schedq.Location, event string) {
	r.counters.get(incomingKey{q, event}).Inc()
	r.entityIn.get(entityKey{q, event, false}).Inc()
}

// IncomingGroup implements schedq.Recorder: a group entity counts
// once among entities and as its members among pods.
func (r *Recorder) IncomingGroup(q schedq.Location, event string, size int) {
	r.counters.get(incomingKey{q, event}).Add(float64(size))
	r.entityIn.get(entityKey{q, event, true}).Inc()
}

// JoinedGroup implements schedq.Recorder: members joining a queued
// group count among pods only.
func (r *Recorder) JoinedGroup(q schedq.Location, event string, n int) {
	r.counters.get(incomingKey{q, event}).Add(float64(n))
}

// Left implements schedq.Recorder.
func (r *Recorder) Left(q schedq.Location, d time.Duration) {
	r.inQueueBy[q].Observe(d.Seconds())
}

// Scheduled implements schedq.Recorder.
func (r *Recorder) Scheduled(wait time.Duration, flushed bool) {
	r.wait.Observe(wait.Seconds())
	if flushed {
		r.afterFlush.Inc()
	}
}

// HintStart implements schedq.Recorder: a monotonic reading.
func (r *Recorder) HintStart() int64 { return int64(time.Since(r.start)) }

// HintDone implements schedq.Recorder.
func (r *Recorder) HintDone(token int64, plugin, event string, h schedq.Hint, err error) {
	label := "QueueSkip"
	switch {
	case err != nil:
		label = "Error"
	case h == schedq.HintQueue:
		label = "Queue"
	}
	d := time.Since(r.start) - time.Duration(token)
	r.hintObs.get(hintKey{plugin, event, label}).Observe(d.Seconds())
}

// Moved implements schedq.Recorder.
func (r *Recorder) Moved(event string, examined, moved int) {
	r.examined.WithLabelValues(r.event(event)).Add(float64(examined))
	r.moved.WithLabelValues(r.event(event)).Add(float64(moved))
}

// levels is the collector of the gauges read from the source.
type levels struct{ r *Recorder }

func (l levels) Describe(ch chan<- *prometheus.Desc) {
	ch <- l.r.pending
	ch <- l.r.unschedulable
	ch <- l.r.inflight
	ch <- l.r.entities
}

func (l levels) Collect(ch chan<- prometheus.Metric) {
	l.r.mu.Lock()
	src := l.r.source
	l.r.mu.Unlock()
	if src == nil {
		return
	}
	s := src.Stats()
	c := s.Counts
	for _, v := range []struct {
		q string
		n int
	}{{"active", c.Active}, {"backoff", c.Backoff}, {"unschedulable", c.Unschedulable}, {"gated", c.Gated},
		{"incomplete", c.Incomplete}, {"pending", c.Pending}} {
		ch <- prometheus.MustNewConstMetric(l.r.pending, prometheus.GaugeValue, float64(v.n), v.q)
	}
	for _, t := range []struct {
		name string
		n    schedq.Counts
	}{{l.r.opts.ItemType, s.Entities.Lone}, {l.r.opts.GroupType, s.Entities.Groups}} {
		for _, v := range []struct {
			q string
			n int
		}{{"active", t.n.Active}, {"backoff", t.n.Backoff}, {"unschedulable", t.n.Unschedulable}, {"gated", t.n.Gated}} {
			ch <- prometheus.MustNewConstMetric(l.r.entities, prometheus.GaugeValue, float64(v.n), v.q, t.name)
		}
	}
	l.r.mu.Lock()
	held := withShown(s.HeldBy, &l.r.shownPlugins)
	events := withShown(s.InFlightEvents, &l.r.shownEvents)
	l.r.mu.Unlock()
	for plugin, n := range held {
		ch <- prometheus.MustNewConstMetric(l.r.unschedulable, prometheus.GaugeValue, float64(n), plugin, l.r.opts.Profile)
	}
	for event, n := range events {
		ch <- prometheus.MustNewConstMetric(l.r.inflight, prometheus.GaugeValue, float64(n), l.r.event(event))
	}
}

// withShown returns levels with a 0 for every label in shown it lacks, and
// adds its labels to shown: a gauge once exported reads 0 when its level
// is gone, as kube-scheduler's gauges do, instead of vanishing. The labels
// are plugin names and event labels, so shown stays small.
func withShown(levels map[string]int, shown *map[string]bool) map[string]int {
	if *shown == nil {
		*shown = map[string]bool{}
	}
	out := make(map[string]int, len(*shown))
	for label := range *shown {
		out[label] = 0
	}
	for label, n := range levels {
		out[label] = n
		(*shown)[label] = true
	}
	return out
}
