package app

import (
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/schedq/schedq"
	"github.com/schedq/schedq/kube/scheduler"
)

// FairnessOptions turn on fair sharing between namespaces in the queue
// (scheduler.NamespaceFairness).
type FairnessOptions struct {
	// Namespaces turns it on.
	Namespaces bool
	// Weights of namespaces; a namespace not listed weighs 1.
	Weights map[string]float64
	// HalfLife of usage; 0: the queue's default (1m).
	HalfLife time.Duration
}

// queueConfig is the scheduler's queue configuration as o sets it (with
// the --config file's settings applied by Validate): fairness, the
// backoff and the clock (o.Clock, if set). Run adds the recorder, the
// frameworks' hints and the wake budget.
func (o *Options) queueConfig() schedq.Config[types.NamespacedName, *v1.Pod] {
	qcfg := scheduler.QueueConfig()
	if o.Clock != nil {
		qcfg.Clock = o.Clock // the clock the rest of the scheduler reads the queue's timestamps against
	}
	qcfg.Fairness = o.Fairness.fairness()
	qcfg.InitialBackoff, qcfg.MaxBackoff = o.Config.InitialBackoff, o.Config.MaxBackoff
	return qcfg
}

// fairness returns the queue's Fairness, or nil when off.
func (o FairnessOptions) fairness() *schedq.Fairness[*v1.Pod] {
	if !o.Namespaces {
		return nil
	}
	return scheduler.NamespaceFairness(o.Weights, o.HalfLife)
}

// validate checks the options, naming each by name(flag): the flag, or
// the field of the file that set it.
func (o FairnessOptions) validate(name func(flag string) string) []error {
	var errs []error
	for ns, w := range o.Weights {
		if !(w > 0) || w > 1e9 {
			errs = append(errs, fmt.Errorf("%s: %s=%v: a weight is a number above 0 (and at most 1e9)", name("fair-namespace-weights"), ns, w))
		}
	}
	if o.HalfLife < 0 {
		errs = append(errs, fmt.Errorf("%s: must not be negative, got %v", name("fair-half-life"), o.HalfLife))
	}
	if !o.Namespaces && (len(o.Weights) > 0 || o.HalfLife != 0) {
		errs = append(errs, o.needNamespaces(name))
	}
	return errs
}

// needNamespaces is the error of weights or a half-life without fairness:
// it names those given (not the other), each by name(flag), and what
// turns fairness on, in the file too when they came from it.
func (o FairnessOptions) needNamespaces(name func(flag string) string) error {
	var given []string
	if len(o.Weights) > 0 {
		given = append(given, "fair-namespace-weights")
	}
	if o.HalfLife != 0 {
		given = append(given, "fair-half-life")
	}
	fromFile := false
	for i, flag := range given {
		given[i] = name(flag)
		fromFile = fromFile || given[i] != flagName(flag)
	}
	need := name("fair-namespaces")
	if need == flagName("fair-namespaces") && fromFile {
		need += " (or fairness.namespaces: true in the file)"
	}
	if len(given) == 1 {
		return fmt.Errorf("%s needs %s", given[0], need)
	}
	return fmt.Errorf("%s and %s need %s", given[0], given[1], need)
}

// ParseWeights parses NAMESPACE=WEIGHT[,NAMESPACE=WEIGHT...], the value
// of --fair-namespace-weights: each a namespace name, listed once.
func ParseWeights(s string) (map[string]float64, error) {
	if s == "" {
		return nil, nil
	}
	out := map[string]float64{}
	for _, part := range strings.Split(s, ",") {
		ns, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok || ns == "" {
			return nil, fmt.Errorf("--fair-namespace-weights: %q is not NAMESPACE=WEIGHT", part)
		}
		if msgs := validation.IsDNS1123Label(ns); len(msgs) > 0 {
			return nil, fmt.Errorf("--fair-namespace-weights: %q is not a namespace name: %s", ns, msgs[0])
		}
		if _, dup := out[ns]; dup {
			return nil, fmt.Errorf("--fair-namespace-weights: %s is listed twice", ns)
		}
		w, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return nil, fmt.Errorf("--fair-namespace-weights: %s: %q is not a number", ns, v)
		}
		out[ns] = w
	}
	return out, nil
}

// Pending lists the current queue's pods in the order they wait.
func (s *switchQueue) Pending(o schedq.PendingOptions[*v1.Pod]) schedq.PendingPage[types.NamespacedName] {
	return s.get().Pending(o)
}

// Tenants reports the current queue's tenants (metrics.TenantSource).
func (s *switchQueue) Tenants() []schedq.TenantStats { return s.get().Tenants() }

// wantsPending reports whether a /debug/queue request asks for the
// listing in pop order (?order=, or a namespace or tenant filter)
// rather than the dump.
func wantsPending(r *http.Request) bool {
	q := r.URL.Query()
	return q.Has("order") || q.Has("namespace") || q.Has("tenant")
}

// pendingQuery is a listing's filter and page: namespace and tenant
// (empty: any), offset and limit.
type pendingQuery struct {
	namespace, tenant string
	offset, limit     int
}

// pendingOptions reads the listing's filter and page from a request:
// ?namespace= (a namespace name: an empty one would list them all),
// ?tenant= (only if fair is set, see tenantFilter), ?offset=, ?limit=.
func pendingOptions(r *http.Request, fair bool) (pendingQuery, error) {
	q := r.URL.Query()
	o := pendingQuery{limit: DefaultQueuePageLimit}
	if v := q.Get("order"); v != "" && v != "pop" {
		return o, fmt.Errorf("order %q: the only order is pop", v)
	}
	if q.Has("tenant") {
		t, err := tenantFilter(q.Get("tenant"), fair)
		if err != nil {
			return o, err
		}
		o.tenant = t
	}
	if q.Has("namespace") {
		ns := q.Get("namespace")
		if msgs := validation.IsDNS1123Label(ns); len(msgs) > 0 {
			return o, fmt.Errorf("namespace %q: not a namespace name: %s", ns, msgs[0])
		}
		o.namespace = ns
	}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 || n > MaxQueuePageLimit {
			return o, fmt.Errorf("limit %q: want a number from 1 to %d", v, MaxQueuePageLimit)
		}
		o.limit = n
	}
	if v := q.Get("offset"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return o, fmt.Errorf("offset %q: want a number from 0", v)
		}
		o.offset = n
	}
	return o, nil
}

// page cuts o's page out of all, the unexplained listing of the whole
// queue: the items of o's namespace and tenant (as listed), ranked among
// themselves, from o.offset, at most o.limit, as the queue's Pending
// would list them (an activeQ item's Position.Ahead is its place among
// all of activeQ, whatever the filter). The items are still to explain.
func (o pendingQuery) page(all schedq.PendingPage[types.NamespacedName]) schedq.PendingPage[types.NamespacedName] {
	p := schedq.PendingPage[types.NamespacedName]{Time: all.Time, Offset: o.offset, Items: []schedq.PendingItem[types.NamespacedName]{}}
	for _, it := range all.Items {
		if (o.namespace != "" && it.Key.Namespace != o.namespace) || (o.tenant != "" && it.Tenant != o.tenant) {
			continue
		}
		rank := p.Total
		p.Total++
		if rank < o.offset || len(p.Items) >= o.limit {
			continue
		}
		it.Rank = rank
		p.Items = append(p.Items, it)
	}
	return p
}

// pendingSnapshots shares one listing of the whole queue in pop order
// between the requests of a TTL, as snapshots shares the dump: each
// request of /debug/queue?order=pop filters and pages it, and the
// queue's lock is taken for a listing (and for its tenants) at most once
// per TTL, one listing at a time, however many clients ask. The listing
// is unexplained (the order, each pod's place and tenant): a request
// explains the pods of its page that no request explained since the
// listing, under the queue's lock once, and the explanations are kept
// with the listing. So a second's work is the listing and the pods
// served, not an explanation of every pending pod, and a pod reads the
// same on every page and filter of that second while it stays where it
// was explained: each request asks the queue where its page's pods are
// (Get, O(1) each), and one that moved since (popped, parked, deleted,
// created again) is explained again, as explanations does. A pod's place
// in activeQ (Position.Ahead) is the listing's, kept only while the pod
// is at the activeQ entry it was listed at: one that left activeQ and
// came back within the TTL (created again, tried and back, moved back
// from unschedulable) is served with no Position (ExplainListed), not
// the place it left.
type pendingSnapshots struct {
	q   queueView
	ttl time.Duration
	now func() time.Time

	mu        sync.Mutex
	at        time.Time
	all       schedq.PendingPage[types.NamespacedName] // unexplained
	fair      bool                                     // the queue shares fairly: Tenants is not nil
	explained map[types.NamespacedName]listedExplained
}

// listedExplained is a listed pod's explanation and the place it was
// made for (queued: whether Get found the pod then).
type listedExplained struct {
	x      schedq.Explanation[types.NamespacedName]
	place  place
	queued bool
}

// serve returns r's page of the listing, taken at most once per TTL,
// its pods explained; an error is the request's, a 400.
func (s *pendingSnapshots) serve(r *http.Request) (schedq.PendingPage[types.NamespacedName], error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if now := s.now(); s.at.IsZero() || now.Sub(s.at) >= s.ttl {
		s.all = s.q.Pending(schedq.PendingOptions[*v1.Pod]{Limit: math.MaxInt, Unexplained: true})
		s.fair = s.q.Tenants() != nil
		s.explained = map[types.NamespacedName]listedExplained{}
		s.at = now
	}
	o, err := pendingOptions(r, s.fair)
	if err != nil {
		return schedq.PendingPage[types.NamespacedName]{}, err
	}
	p := o.page(s.all)
	// Where each pod is now, read before any explanation: a pod that
	// moves between the two is explained again at the next request.
	var todo []schedq.PendingItem[types.NamespacedName]
	var places []listedExplained
	for _, it := range p.Items {
		info, loc, queued := s.q.Get(it.Key)
		now := listedExplained{queued: queued}
		if queued {
			now.place = placeOf(info, loc)
		}
		if c, ok := s.explained[it.Key]; !ok || c.queued != now.queued || c.place != now.place {
			todo = append(todo, it)
			places = append(places, now)
		}
	}
	if len(todo) > 0 {
		s.q.ExplainListed(todo)
		for i, it := range todo {
			places[i].x = it.Explanation
			s.explained[it.Key] = places[i]
		}
	}
	for i := range p.Items {
		p.Items[i].Explanation = s.explained[p.Items[i].Key].x
	}
	return p, nil
}

// tenantFilter checks the value of ?tenant=. A tenant exists only under
// fair sharing, where it is the pod's namespace: without it no pod has
// one, and a filter by tenant would answer an empty listing that reads as
// "nothing of that tenant waits". Under it, an empty tenant would list
// every pod.
func tenantFilter(t string, fair bool) (string, error) {
	if !fair {
		return "", fmt.Errorf("tenant=: tenants exist only with fair sharing on (--fair-namespaces); filter by namespace= instead")
	}
	if msgs := validation.IsDNS1123Label(t); len(msgs) > 0 {
		return "", fmt.Errorf("tenant %q: not a namespace name (under --fair-namespaces the tenant is the namespace): %s", t, msgs[0])
	}
	return t, nil
}

// servePending serves /debug/queue?order=pop: one page of the pending
// pods in the order they wait, each with its reason.
// The page is cut from the listing snap shares between the requests of
// a second, and its pods explained once in that second while they stay
// where they were explained.
func servePending(w http.ResponseWriter, r *http.Request, snap *pendingSnapshots, fc *forecaster) {
	if err := checkQuery(r, "/debug/queue?order=pop", "order", "namespace", "tenant", "offset", "limit", "format"); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	p, err := snap.serve(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if fc != nil {
		a := withStarts(r.Context(), p, fc)
		write(w, r, a, a.String)
		return
	}
	write(w, r, p, p.String)
}
