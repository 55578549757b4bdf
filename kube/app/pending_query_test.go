package app

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/schedq/schedq"
)

// TestPendingNamespaceChecked: the listing's namespace filter is a
// namespace name; an empty or malformed one is a 400 naming the
// parameter, not a listing of every namespace (empty) or of none (a name
// no pod can have), either of which reads as an answer.
func TestPendingNamespaceChecked(t *testing.T) {
	h := Handler(testRegistry(), newTestQueue(t, 1), func() (bool, string) { return true, "ok" }, nil)
	for _, tc := range []struct {
		name, query string
		code        int
		has         string
	}{
		{"a namespace", "?order=pop&namespace=default", 200, "default/p0000"},
		{"empty", "?order=pop&namespace=", 400, `namespace "": not a namespace name`},
		{"empty without order", "?namespace=", 400, `namespace "": not a namespace name`},
		{"upper case", "?order=pop&namespace=Default", 400, `namespace "Default": not a namespace name`},
		{"a path", "?order=pop&namespace=default/p0000", 400, `namespace "default/p0000"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rr := httptest.NewRecorder()
			h.ServeHTTP(rr, httptest.NewRequest(http.MethodGet, "/debug/queue"+tc.query, nil))
			if rr.Code != tc.code || !strings.Contains(rr.Body.String(), tc.has) {
				t.Errorf("HTTP %d %q, want %d with %q", rr.Code, rr.Body.String(), tc.code, tc.has)
			}
		})
	}
}

// TestPendingOffsetPastTheEnd: a page from past the end of the listing
// is empty, says how many match in JSON, and in text says that the
// offset is past the end rather than showing the count alone, which
// reads as a listing whose pods went missing.
func TestPendingOffsetPastTheEnd(t *testing.T) {
	h := Handler(testRegistry(), newTestQueue(t, 2), func() (bool, string) { return true, "ok" }, nil)
	get := func(query string) (int, string) {
		rr := httptest.NewRecorder()
		h.ServeHTTP(rr, httptest.NewRequest(http.MethodGet, "/debug/queue?order=pop"+query, nil))
		return rr.Code, rr.Body.String()
	}
	if code, body := get("&offset=5&format=text"); code != 200 || !strings.Contains(body, "; none from offset 5: past the end") {
		t.Errorf("text: HTTP %d %q, want that offset 5 is past the end", code, body)
	}
	if code, body := get("&offset=5"); code != 200 || !strings.Contains(body, `"total": 2,`) || !strings.Contains(body, `"offset": 5,`) || !strings.Contains(body, `"items": []`) {
		t.Errorf("json: HTTP %d %q, want total 2, offset 5, no items", code, body)
	}
	if code, body := get("&offset=1&format=text"); code != 200 || strings.Contains(body, "past the end") || !strings.Contains(body, "2 to 2:") {
		t.Errorf("the last item: HTTP %d %q", code, body)
	}
}

// TestPendingTenantNeedsFairness: a tenant exists only under fair sharing
// (--fair-namespaces makes it the pod's namespace); without it no pod
// has one, so ?tenant= is a 400 that says so and points at namespace=,
// not an empty 200 that reads as "nothing of that tenant waits". Under
// fairness an empty tenant is a 400 too, not a listing of every pod.
func TestPendingTenantNeedsFairness(t *testing.T) {
	for _, tc := range []struct {
		name  string
		q     queueView
		query string
		code  int
		has   string
	}{
		{"fairness off", newTestQueue(t, 1), "?tenant=default", 400, "tenant=: tenants exist only with fair sharing on (--fair-namespaces); filter by namespace= instead"},
		{"fairness off, with order", newTestQueue(t, 1), "?order=pop&tenant=default", 400, "--fair-namespaces"},
		{"fairness on", fairQueue(t), "?tenant=team-b&format=text", 200, "team-b/b1"},
		{"fairness on, empty", fairQueue(t), "?tenant=", 400, `tenant "": not a namespace name`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := Handler(testRegistry(), tc.q, func() (bool, string) { return true, "ok" }, nil)
			rr := httptest.NewRecorder()
			h.ServeHTTP(rr, httptest.NewRequest(http.MethodGet, "/debug/queue"+tc.query, nil))
			if rr.Code != tc.code || !strings.Contains(rr.Body.String(), tc.has) {
				t.Errorf("HTTP %d %q, want %d with %q", rr.Code, rr.Body.String(), tc.code, tc.has)
			}
		})
	}
}

// TestPendingListedOncePerTTL: /debug/queue?order=pop takes the queue's
// lock for a listing (and for its tenants) at most once a second,
// however many clients ask and whatever page or filter they ask for, as
// the dump does; each page is cut from that listing, ranked among the
// pods it keeps. Every request took the lock.
func TestPendingListedOncePerTTL(t *testing.T) {
	type request struct {
		query string
		code  int
		has   string
		wait  time.Duration // before the request
	}
	for _, tc := range []struct {
		name     string
		requests []request
		listings int // of the whole queue
		tenants  int
	}{
		{name: "the same page, polled", listings: 1, requests: []request{
			{query: "?order=pop", code: 200, has: "default/p0000"},
			{query: "?order=pop", code: 200, has: "default/p0000"},
			{query: "?order=pop", code: 200, has: "default/p0000"},
		}},
		{name: "other pages and filters within the second", listings: 1, requests: []request{
			{query: "?order=pop&format=text", code: 200, has: "4 pending"},
			{query: "?order=pop&offset=1&limit=1&format=text", code: 200, has: "    2 active        default/p0001"},
			{query: "?order=pop&offset=2&limit=5", code: 200, has: `"rank": 3`},
			{query: "?namespace=default&format=text", code: 200, has: "4 pending"},
			{query: "?order=pop&namespace=other&format=text", code: 200, has: "0 pending"},
			{query: "?order=pop&tenant=default", code: 400, has: "--fair-namespaces", wait: 999 * time.Millisecond},
		}},
		{name: "a second later", listings: 2, requests: []request{
			{query: "?order=pop", code: 200, has: "default/p0000"},
			{query: "?order=pop&limit=1", code: 200, has: "default/p0000", wait: time.Second},
			{query: "?order=pop&limit=2", code: 200, has: "default/p0001", wait: 999 * time.Millisecond},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				// time.Now is the bubble's: it moves only with the waits.
				v := &countingPending{queueView: newTestQueue(t, 4)}
				h := Handler(testRegistry(), v, func() (bool, string) { return true, "ok" }, nil)
				for _, r := range tc.requests {
					time.Sleep(r.wait)
					rr := httptest.NewRecorder()
					h.ServeHTTP(rr, httptest.NewRequest(http.MethodGet, "/debug/queue"+r.query, nil))
					if rr.Code != r.code || !strings.Contains(rr.Body.String(), r.has) {
						t.Errorf("%s: HTTP %d %q, want %d with %q", r.query, rr.Code, rr.Body.String(), r.code, r.has)
					}
				}
				if v.pending != tc.listings || v.tenants > tc.listings {
					t.Errorf("the queue was listed %d times and its tenants read %d times, want %d and at most %d", v.pending, v.tenants, tc.listings, tc.listings)
				}
			})
		})
	}
}

// countingPending counts the queue's listings and tenant reads, each of
// which takes the queue's lock.
type countingPending struct {
	queueView
	pending, tenants int
}

func (c *countingPending) Pending(o schedq.PendingOptions[*v1.Pod]) schedq.PendingPage[types.NamespacedName] {
	c.pending++
	return c.queueView.Pending(o)
}

func (c *countingPending) Tenants() []schedq.TenantStats {
	c.tenants++
	return c.queueView.Tenants()
}

// explainCounting counts the queue's listings and the pods explained
// for them: those a listing explains itself and those ExplainListed
// explains.
type explainCounting struct {
	queueView
	listings, explained int
}

func (c *explainCounting) Pending(o schedq.PendingOptions[*v1.Pod]) schedq.PendingPage[types.NamespacedName] {
	c.listings++
	p := c.queueView.Pending(o)
	for _, it := range p.Items {
		if it.Reason != "" {
			c.explained++
		}
	}
	return p
}

func (c *explainCounting) ExplainListed(items []schedq.PendingItem[types.NamespacedName]) {
	c.explained += len(items)
	c.queueView.ExplainListed(items)
}

// TestPendingExplainsOnlyWhatIsServed: with 2,000 pending pods, a page
// of the listing in pop order costs the explanation of its own pods, not
// of every pending pod: the listing (once a second) is of the order
// alone, and each pod is explained once in that second, whichever pages
// and filters show it. Every pending pod was explained at each listing.
func TestPendingExplainsOnlyWhatIsServed(t *testing.T) {
	type request struct {
		query     string
		has       string
		wait      time.Duration // before the request
		explained int           // pods explained by the request
	}
	for _, tc := range []struct {
		name     string
		requests []request
		listings int
	}{
		{name: "one page", listings: 1, requests: []request{
			{query: "?order=pop&limit=5&format=text", has: "    5 active        default/p0004: ready: waiting in activeQ", explained: 5},
		}},
		{name: "the same page again", listings: 1, requests: []request{
			{query: "?order=pop&limit=5", has: "default/p0004", explained: 5},
			{query: "?order=pop&limit=5", has: "default/p0004"},
		}},
		{name: "overlapping pages and filters", listings: 1, requests: []request{
			{query: "?order=pop&limit=5", has: "default/p0004", explained: 5},
			{query: "?order=pop&offset=3&limit=5", has: "default/p0007", explained: 3},
			{query: "?namespace=default&offset=1990&format=text", has: "2000 pending", explained: 10},
			{query: "?namespace=other&format=text", has: "0 pending"},
		}},
		{name: "a second later, the new listing's", listings: 2, requests: []request{
			{query: "?order=pop&limit=5", has: "default/p0004", explained: 5},
			{query: "?order=pop&limit=5", has: "default/p0004", wait: time.Second, explained: 5},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				v := &explainCounting{queueView: newTestQueue(t, 2000)}
				h := Handler(testRegistry(), v, func() (bool, string) { return true, "ok" }, nil)
				for _, r := range tc.requests {
					time.Sleep(r.wait)
					before := v.explained
					rr := httptest.NewRecorder()
					h.ServeHTTP(rr, httptest.NewRequest(http.MethodGet, "/debug/queue"+r.query, nil))
					if rr.Code != http.StatusOK || !strings.Contains(rr.Body.String(), r.has) {
						t.Errorf("%s: HTTP %d %.300q, want 200 with %q", r.query, rr.Code, rr.Body.String(), r.has)
					}
					if n := v.explained - before; n != r.explained {
						t.Errorf("%s: %d pods explained, want %d", r.query, n, r.explained)
					}
				}
				if v.listings != tc.listings {
					t.Errorf("%d listings, want %d", v.listings, tc.listings)
				}
			})
		})
	}
}

// TestPendingTenantPageKeepsPodsThatLeft: under fair sharing, a page of
// one tenant's pods holds as many pods as asked when the listing has
// them, even if one left the queue between the listing and its
// explanation: the filter is the listing's (the tenant the pod had when
// listed), and the pod keeps its rank, marked as gone, as under a
// namespace filter. A page that dropped it came back shorter than asked,
// and the next page's offset would skip a pod.
func TestPendingTenantPageKeepsPodsThatLeft(t *testing.T) {
	for _, tc := range []struct {
		name, query string
		has         []string
	}{
		{"tenant", "?tenant=team-a&limit=3&format=text", []string{
			"3 pending", "1 to 3:",
			"team-a/a1 [team-a]: left the queue since it was listed",
			"team-a/a2 [team-a]: ready", "team-a/a3 [team-a]: ready"}},
		{"namespace", "?namespace=team-a&limit=3&format=text", []string{
			"3 pending", "1 to 3:", "team-a/a1 [team-a]: left the queue since it was listed"}},
		{"the next page", "?tenant=team-a&offset=1&limit=1&format=text", []string{
			"3 pending", "2 to 2:", "team-a/a2 [team-a]: ready", "... 1 more: offset 2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				q := fairQueue(t)
				h := Handler(testRegistry(), q, func() (bool, string) { return true, "ok" }, nil)
				get := func(query string) (int, string) {
					rr := httptest.NewRecorder()
					h.ServeHTTP(rr, httptest.NewRequest(http.MethodGet, "/debug/queue"+query, nil))
					return rr.Code, rr.Body.String()
				}
				// The listing is taken (and team-b's pods explained), then
				// a1 leaves within the second.
				if code, body := get("?tenant=team-b&format=text"); code != 200 || !strings.Contains(body, "2 pending") {
					t.Fatalf("team-b: HTTP %d %q", code, body)
				}
				if err := q.Delete(types.NamespacedName{Namespace: "team-a", Name: "a1"}); err != nil {
					t.Fatal(err)
				}
				code, body := get(tc.query)
				for _, want := range tc.has {
					if code != 200 || !strings.Contains(body, want) {
						t.Errorf("HTTP %d %q, want %q", code, body, want)
					}
				}
			})
		})
	}
}

// TestPendingPageNotSharedOnceThePodMoved: within the listing's second, a
// pod that a request explained and that moved since (tried and parked,
// deleted, deleted and created again) is explained again where it is now
// at the next request, as a pod that moved between the listing and its
// first explanation is, not served the explanation of the place it left;
// one that stayed is not explained again.
func TestPendingPageNotSharedOnceThePodMoved(t *testing.T) {
	key := types.NamespacedName{Namespace: "default", Name: "p"}
	for _, tc := range []struct {
		name      string
		change    func(l *liveCluster)
		where     schedq.Location
		reason    string
		explained int // by the second request
	}{
		{name: "stayed", change: func(*liveCluster) {}, where: schedq.InActive, reason: "ready"},
		{name: "tried and parked", change: func(l *liveCluster) {
			a, err := l.queue.Pop(context.Background())
			if err != nil {
				l.t.Fatal(err)
			}
			if err := l.queue.Requeue(a, schedq.Failure{RejectedBy: []string{"NodeAffinity"}}); err != nil {
				l.t.Fatal(err)
			}
		}, where: schedq.InUnschedulable, reason: "NodeAffinity", explained: 1},
		{name: "deleted", change: func(l *liveCluster) {
			if err := l.queue.Delete(key); err != nil {
				l.t.Fatal(err)
			}
		}, reason: "left the queue since it was listed", explained: 1},
		{name: "deleted and created again", change: func(l *liveCluster) { l.recreate(key, "p") }, where: schedq.InActive, reason: "ready", explained: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := newLiveCluster(t, 1)
			l.pending(l.pod("p", "1", ""))
			v := &explainCounting{queueView: l.queue}
			s := &pendingSnapshots{q: v, ttl: queueSnapshotTTL, now: l.clk.Now}
			req := func() schedq.PendingItem[types.NamespacedName] {
				p, err := s.serve(httptest.NewRequest(http.MethodGet, "/debug/queue?order=pop", nil))
				if err != nil || len(p.Items) != 1 {
					t.Fatalf("%v: %+v", err, p)
				}
				return p.Items[0]
			}
			req()
			l.clk.Step(10 * time.Millisecond)
			tc.change(l)
			before := v.explained
			it := req()
			if it.Location != tc.where || !strings.Contains(it.Reason, tc.reason) {
				t.Errorf("%v: %q, want %v: %q", it.Location, it.Reason, tc.where, tc.reason)
			}
			if tc.name == "deleted and created again" && !it.Timestamp.Equal(l.clk.Now()) {
				t.Errorf("the pod of %v, want the new one of %v", it.Timestamp, l.clk.Now())
			}
			if n := v.explained - before; n != tc.explained {
				t.Errorf("%d pods explained again, want %d", n, tc.explained)
			}
		})
	}
}

// TestPendingRecreatedPodNotAtItsOldPlace: within the listing's second,
// a pod listed first in activeQ (0 ahead) and then deleted and created
// again is queued behind q. Its page answer, whether a request explained
// it before it was created again or not, is in activeQ with no place
// ("position" absent from the JSON), not the old listing's "0 ahead",
// while q, still where it was listed, keeps its place (1 ahead).
func TestPendingRecreatedPodNotAtItsOldPlace(t *testing.T) {
	key := types.NamespacedName{Namespace: "default", Name: "p"}
	for _, tc := range []struct {
		name  string
		first string // the first request, which takes the listing
	}{
		{name: "explained before it was created again", first: "/debug/queue?order=pop"},
		{name: "not explained before", first: "/debug/queue?order=pop&offset=1&limit=1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := newLiveCluster(t, 1)
			l.pending(l.pod("p", "1", ""))
			l.clk.Step(10 * time.Millisecond)
			l.pending(l.pod("q", "1", ""))
			s := &pendingSnapshots{q: l.queue, ttl: queueSnapshotTTL, now: l.clk.Now}
			serve := func(url string) schedq.PendingPage[types.NamespacedName] {
				p, err := s.serve(httptest.NewRequest(http.MethodGet, url, nil))
				if err != nil {
					t.Fatal(err)
				}
				return p
			}
			if p := serve(tc.first); len(p.Items) == 0 || p.Total != 2 {
				t.Fatalf("first page %+v, want of 2", p)
			}
			l.clk.Step(10 * time.Millisecond)
			l.recreate(key, "p")
			if x, err := l.queue.Explain(key); err != nil || x.Position == nil || x.Position.Ahead != 1 {
				t.Fatalf("the pod created again: %+v, %v; want 1 ahead (q)", x.Position, err)
			}
			p := serve("/debug/queue?order=pop")
			if len(p.Items) != 2 || p.Items[0].Key != key || p.Items[1].Key.Name != "q" {
				t.Fatalf("page %+v, want the listing's p, q", p.Items)
			}
			it := p.Items[0]
			if it.Location != schedq.InActive || !it.Timestamp.Equal(l.clk.Now()) {
				t.Errorf("p explained at %v, of %v; want the new pod's, in activeQ", it.Location, it.Timestamp)
			}
			if it.Position != nil {
				t.Errorf("p served %d ahead, want no place: it left the place it was listed at", it.Position.Ahead)
			}
			b, err := json.Marshal(it)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(string(b), `"position"`) {
				t.Errorf("p's JSON %s, want no position", b)
			}
			if q := p.Items[1]; q.Position == nil || q.Position.Ahead != 1 {
				t.Errorf("q served %+v, want its listed place, 1 ahead", q.Position)
			}
		})
	}
}
