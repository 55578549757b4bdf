package app

import (
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
