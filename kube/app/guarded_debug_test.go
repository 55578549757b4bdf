package app

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// TestGuardedDebugEndpoints: every endpoint that shows pods (the dump,
// the pop-order listing, the explanation, the forecast and the what-if)
// refuses the anonymous (401) and the unauthorized (403) as /debug/queue
// does, asking the authorizer about its own path and the request's verb
// (post for the what-if); a replica that does not lead tells only an
// authorized caller so.
func TestGuardedDebugEndpoints(t *testing.T) {
	l := newLiveCluster(t, 1)
	l.pending(l.pod("p", "1", "1h"))
	st := &state{}
	st.synced.Store(true)
	st.leading.Store(true)
	auth := &fakeAuth{}
	inner := leaderOnly(handler(prometheus.NewRegistry(), l.queue, st.ready, nil, l.forecaster()), st.role)
	h := guarded(inner, refuseAnonymous(auth), auth)
	do := func(method, path, token string) int { return whatIfCode(h, method, path, token) }
	for _, tc := range []struct{ name, method, path, verb string }{
		{"dump", "GET", "/debug/queue", "get"},
		{"pop order", "GET", "/debug/queue?order=pop&namespace=default", "get"},
		{"explain", "GET", "/debug/queue/default/p", "get"},
		{"forecast", "GET", "/debug/forecast/default/p", "get"},
		{"what-if", "POST", "/debug/whatif", "post"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st.leading.Store(true)
			if code := do(tc.method, tc.path, ""); code != http.StatusUnauthorized {
				t.Errorf("anonymous: HTTP %d, want 401", code)
			}
			if code := do(tc.method, tc.path, "other"); code != http.StatusForbidden {
				t.Errorf("unauthorized: HTTP %d, want 403", code)
			}
			path, _, _ := strings.Cut(tc.path, "?")
			if want := fmt.Sprintf("other %s %s", tc.verb, path); auth.asked[len(auth.asked)-1] != want {
				t.Errorf("authorizer asked %q, want %q", auth.asked[len(auth.asked)-1], want)
			}
			if code := do(tc.method, tc.path, "good"); code != http.StatusOK {
				t.Errorf("authorized: HTTP %d, want 200", code)
			}
			st.leading.Store(false)
			if code := do(tc.method, tc.path, ""); code != http.StatusUnauthorized {
				t.Errorf("anonymous, on standby: HTTP %d, want 401", code)
			}
			if code := do(tc.method, tc.path, "good"); code != http.StatusServiceUnavailable {
				t.Errorf("authorized, on standby: HTTP %d, want 503", code)
			}
		})
	}
}

// TestOtherMethodsRefused: each endpoint answers only its documented
// method (GET, HEAD with it; POST for the what-if); any other is a 405
// that names the allowed ones.
func TestOtherMethodsRefused(t *testing.T) {
	l := newLiveCluster(t, 1)
	srv, _ := l.server()
	for _, tc := range []struct{ method, path, allow string }{
		{"POST", "/debug/queue", "GET, HEAD"},
		{"DELETE", "/debug/queue/default/p", "GET, HEAD"},
		{"PUT", "/debug/forecast/default/p", "GET, HEAD"},
		{"GET", "/debug/whatif", "POST"},
		{"POST", "/metrics", "GET, HEAD"},
		{"POST", "/healthz", "GET, HEAD"},
	} {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			req, err := http.NewRequest(tc.method, srv.URL+tc.path, nil)
			if err != nil {
				t.Fatal(err)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != tc.allow {
				t.Errorf("HTTP %d, Allow %q; want 405, %q", resp.StatusCode, resp.Header.Get("Allow"), tc.allow)
			}
		})
	}
}
