package app

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestStandbyDebugRefused: a replica that does not lead (informers not
// synced, or on standby) answers its debug endpoints with a 503 saying
// why, not with its own queue, which is not the one being scheduled;
// /metrics and the health endpoints are served as they are. Once it
// leads, the debug endpoints answer.
func TestStandbyDebugRefused(t *testing.T) {
	st := &state{}
	h := leaderOnly(Handler(testRegistry(), newTestQueue(t, 1), st.ready, nil), st.role)
	do := func(method, path string) (int, string) {
		rr := httptest.NewRecorder()
		h.ServeHTTP(rr, httptest.NewRequest(method, path, strings.NewReader("")))
		return rr.Code, rr.Body.String()
	}
	debug := []struct{ name, method, path string }{
		{"dump", "GET", "/debug/queue"},
		{"pop order", "GET", "/debug/queue?order=pop"},
		{"explain", "GET", "/debug/queue/default/p0000"},
		{"forecast", "GET", "/debug/forecast/default/p0000"},
		{"what-if", "POST", "/debug/whatif"},
	}
	for _, phase := range []struct {
		name, why      string
		synced, leader bool
	}{
		{"not synced", "informers have not synced", false, false},
		{"standby", "standby", true, false},
	} {
		st.synced.Store(phase.synced)
		st.leading.Store(phase.leader)
		for _, tc := range debug {
			t.Run(phase.name+"/"+tc.name, func(t *testing.T) {
				code, body := do(tc.method, tc.path)
				if code != http.StatusServiceUnavailable || !strings.Contains(body, phase.why) || strings.Count(strings.TrimSpace(body), "\n") > 0 {
					t.Errorf("HTTP %d %q, want 503 with one line saying %q", code, body, phase.why)
				}
			})
		}
		for _, path := range []string{"/metrics", "/healthz", "/livez"} {
			if code, body := do("GET", path); code != http.StatusOK {
				t.Errorf("%s: %s: HTTP %d %q, want 200", phase.name, path, code, body)
			}
		}
	}
	st.leading.Store(true)
	if code, body := do("GET", "/debug/queue/default/p0000"); code != http.StatusOK {
		t.Errorf("leading: explain: HTTP %d %q, want 200", code, body)
	}
}
