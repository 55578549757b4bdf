package app

import (
	"cmp"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/schedq/schedq"
)

// state is what the health endpoints report.
type state struct {
	synced  atomic.Bool
	leading atomic.Bool
}

func (s *state) ready() (bool, string) {
	switch {
	case !s.synced.Load():
		return false, "informers not synced"
	case s.leading.Load():
		return true, "ok: leading"
	}
	return true, "ok: standby"
}

// The pages of /debug/queue: ?limit= items (default and maximum below),
// then ?continue= the token of the previous page.
const (
	DefaultQueuePageLimit = 500
	MaxQueuePageLimit     = 5000
	// queueSnapshotTTL is how long one dump of the queue, one listing
	// of it in pop order, and one explanation of a pod serve every
	// request: however many clients read /debug/queue (with ?order=pop or
	// without) or a pod's /debug/queue/{namespace}/{name}, the queue's
	// lock is taken for a dump, a listing, and a pod's position in line,
	// at most once per TTL (a pod that moved is explained again).
	queueSnapshotTTL = time.Second
)

// Handler serves /metrics, /healthz, /livez, /readyz, /debug/queue (the
// queue dump, a page at a time) and /debug/queue/{namespace}/{name}
// (Explain). The debug endpoints answer JSON, or text with ?format=text.
// /healthz and /livez answer 503 while live says the process is stuck
// (nil: never), and /readyz while ready or live says no: the liveness
// probe then restarts a leader whose scheduling loop hangs, and its lease
// passes to a standby.
func Handler(reg *prometheus.Registry, q queueView, ready, live func() (bool, string)) http.Handler {
	return handler(reg, q, ready, live, nil)
}

// handler is Handler with forecasts if fc is not nil: the explanation of
// a pending pod and the listing in pop order gain predicted starts, and
// GET /debug/forecast/{namespace}/{name} and POST /debug/whatif are
// served (see docs/forecast.md).
func handler(reg *prometheus.Registry, q queueView, ready, live func() (bool, string), fc *forecaster) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	if live == nil {
		live = func() (bool, string) { return true, "ok" }
	}
	probe := func(checks ...func() (bool, string)) http.HandlerFunc {
		return func(w http.ResponseWriter, _ *http.Request) {
			msg := ""
			for _, check := range checks {
				ok, m := check()
				if !ok {
					http.Error(w, m, http.StatusServiceUnavailable)
					return
				}
				msg = m
			}
			fmt.Fprintln(w, msg)
		}
	}
	mux.HandleFunc("GET /healthz", probe(live))
	mux.HandleFunc("GET /livez", probe(live))
	mux.HandleFunc("GET /readyz", probe(live, ready))
	snap := &snapshots{q: q, ttl: queueSnapshotTTL, now: time.Now}
	pending := &pendingSnapshots{q: q, ttl: queueSnapshotTTL, now: time.Now}
	explains := &explanations{q: q, ttl: queueSnapshotTTL, now: time.Now}
	mux.HandleFunc("GET /debug/queue", func(w http.ResponseWriter, r *http.Request) {
		if wantsPending(r) {
			servePending(w, r, pending, fc)
			return
		}
		queuePages(snap)(w, r)
	})
	mux.HandleFunc("GET /debug/queue/{namespace}/{name}", func(w http.ResponseWriter, r *http.Request) {
		if err := checkQuery(r, "/debug/queue/{namespace}/{name}", "format"); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		key := types.NamespacedName{Namespace: r.PathValue("namespace"), Name: r.PathValue("name")}
		x, at, age, err := explains.explain(key)
		if errors.Is(err, schedq.ErrNotFound) {
			msg, _ := notInQueueMessage(key, err)
			http.Error(w, msg, http.StatusNotFound)
			return
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		a := explainAnswer{Explanation: x, PositionAt: at, PositionAge: age}
		if fc == nil {
			write(w, r, a, a.String)
			return
		}
		if p, err := fc.predict(r.Context(), key); err != nil {
			a.ForecastError = err.Error()
		} else {
			a.PredictedStart = p
		}
		write(w, r, a, a.String)
	})
	if fc != nil {
		mux.HandleFunc("GET /debug/forecast/{namespace}/{name}", serveForecast(fc, q))
		mux.HandleFunc("POST /debug/whatif", serveWhatIf(fc))
	}
	return mux
}

// snapshots shares one dump of the queue between the requests of a TTL,
// and takes at most one at a time.
type snapshots struct {
	q   queueView
	ttl time.Duration
	now func() time.Time

	mu sync.Mutex
	at time.Time
	d  schedq.Dump[types.NamespacedName]
}

func (s *snapshots) get() schedq.Dump[types.NamespacedName] {
	s.mu.Lock()
	defer s.mu.Unlock()
	if now := s.now(); s.at.IsZero() || now.Sub(s.at) >= s.ttl {
		s.d, s.at = s.q.Dump(), now
	}
	return s.d
}

// queuePage is a page of /debug/queue: the summary of the whole queue,
// and up to limit of its items, in the dump's order (place, then key).
type queuePage struct {
	Time    time.Time                                  `json:"time"`
	Summary []schedq.Summary                           `json:"summary"`
	Items   []schedq.Explanation[types.NamespacedName] `json:"items"`
	// Continue is the token of the next page; empty on the last page.
	Continue  string `json:"continue,omitempty"`
	Remaining int    `json:"remaining"`
}

func (p queuePage) String() string {
	s := schedq.Dump[types.NamespacedName]{Time: p.Time, Summary: p.Summary, Items: p.Items}.String()
	if p.Continue != "" {
		s += fmt.Sprintf("... %d more: ?continue=%s\n", p.Remaining, p.Continue)
	}
	return s
}

// page cuts the page the request asks for out of d.
func page(d schedq.Dump[types.NamespacedName], r *http.Request) (queuePage, error) {
	limit := DefaultQueuePageLimit
	if v := r.URL.Query().Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 || n > MaxQueuePageLimit {
			return queuePage{}, fmt.Errorf("limit %q: want a number from 1 to %d", v, MaxQueuePageLimit)
		}
		limit = n
	}
	start := 0
	if tok := r.URL.Query().Get("continue"); tok != "" {
		loc, key, err := parseToken(tok)
		if err != nil {
			return queuePage{}, err
		}
		// The first item after the last one of the previous page; items
		// that left the queue since are skipped, new ones may appear.
		start, _ = slices.BinarySearchFunc(d.Items, struct{}{}, func(x schedq.Explanation[types.NamespacedName], _ struct{}) int {
			if c := cmp.Or(cmp.Compare(x.Location, loc), cmp.Compare(x.Key.String(), key)); c != 0 {
				return c
			}
			return -1
		})
	}
	end := min(start+limit, len(d.Items))
	p := queuePage{Time: d.Time, Summary: d.Summary, Items: d.Items[start:end], Remaining: len(d.Items) - end}
	if p.Remaining > 0 {
		last := d.Items[end-1]
		p.Continue = base64.RawURLEncoding.EncodeToString(fmt.Appendf(nil, "%d/%s", last.Location, last.Key))
	}
	return p, nil
}

func parseToken(tok string) (schedq.Location, string, error) {
	b, err := base64.RawURLEncoding.DecodeString(tok)
	bad := fmt.Errorf("continue %q: not a token from a previous page", tok)
	if err != nil {
		return 0, "", bad
	}
	locStr, key, ok := strings.Cut(string(b), "/")
	if !ok {
		return 0, "", bad
	}
	loc, err := strconv.ParseUint(locStr, 10, 8)
	if err != nil {
		return 0, "", bad
	}
	return schedq.Location(loc), key, nil
}

// checkQuery refuses, naming it, a query that does not parse, a
// parameter that endpoint does not take, one given twice, or a format
// other than text or json: each would be ignored, and the answer would not
// be the one asked for.
func checkQuery(r *http.Request, endpoint string, allowed ...string) error {
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return fmt.Errorf("query %q: %v", r.URL.RawQuery, err)
	}
	for _, k := range slices.Sorted(maps.Keys(q)) {
		switch {
		case !slices.Contains(allowed, k):
			return fmt.Errorf("parameter %q: not one of %s's (%s)", k, endpoint, strings.Join(allowed, ", "))
		case len(q[k]) > 1:
			return fmt.Errorf("parameter %q: given %d times, want it once", k, len(q[k]))
		}
	}
	if v := q.Get("format"); v != "" && v != "text" && v != "json" {
		return fmt.Errorf("format %q: want text or json", v)
	}
	return nil
}

// write answers v as JSON, or, with ?format=text, text's rendering of
// it. Only the form served is built: text is not called for JSON, which
// for a page of thousands of items would double the work.
func write(w http.ResponseWriter, r *http.Request, v any, text func() string) {
	if r.URL.Query().Get("format") == "text" {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprint(w, text())
		return
	}
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.Encode(v)
}

func metav1ObjectMeta(namespace, name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Namespace: namespace, Name: name}
}

// queuePages serves /debug/queue: one page of the latest snapshot.
func queuePages(snap *snapshots) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if err := checkQuery(r, "/debug/queue", "limit", "continue", "format"); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		p, err := page(snap.get(), r)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		write(w, r, p, p.String)
	}
}

// role says whether the replica leads, and if not why: only the leader's
// queue is the one being scheduled.
func (s *state) role() (bool, string) {
	switch {
	case !s.synced.Load():
		return false, "its informers have not synced, so its queue is not complete"
	case !s.leading.Load():
		return false, "it is on standby: its queue is not the one being scheduled; ask the leader (the holder of the Lease)"
	}
	return true, ""
}

// leaderOnly answers the debug endpoints (the queue, its forecast and
// what-ifs on it) of a replica that does not lead with a 503 saying why:
// a standby fills its queue from the informers, but the leader pops,
// tries and parks the pods, so the standby's answers would be plausible
// and wrong. /metrics and the health endpoints pass as they are.
func leaderOnly(h http.Handler, role func() (bool, string)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/debug/") {
			if ok, why := role(); !ok {
				http.Error(w, "this replica does not lead: "+why, http.StatusServiceUnavailable)
				return
			}
		}
		h.ServeHTTP(w, r)
	})
}
