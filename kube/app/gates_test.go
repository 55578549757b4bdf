package app

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/synctest"
)

// TestUpstreamExplainsWhyAPodIsGated: the whole scheduler on a fake
// clientset, with a pod whose ResourceClaim does not exist (gated by
// DynamicResources' PreEnqueue, never tried): its explanation
// (/debug/queue/{namespace}/{name}, what `schedq explain` prints, in
// JSON and text) and its line in the listing in pop order (`schedq
// pending`) give DynamicResources' own reason, not only its name.
func TestUpstreamExplainsWhyAPodIsGated(t *testing.T) {
	const want = `gated by DynamicResources: could not find ResourceClaim "default/gpu-claim"; waiting for `
	synctest.Test(t, func(t *testing.T) {
		client := fakeCluster(testNode("n1", "2"), claimingPod("dra", "gpu-claim"), draClass())
		o := upstreamOptions(t)
		handlers := make(chan http.Handler, 1)
		o.serving = func(h http.Handler) { handlers <- h }
		runUpstream(t, client, o)
		h := <-handlers
		for _, tc := range []struct {
			name, path string
			reason     func(t *testing.T, body string) string // the pod's reason in body
		}{
			{"explain", "/debug/queue/default/dra", func(t *testing.T, body string) string {
				var x struct{ Reason string }
				if err := json.Unmarshal([]byte(body), &x); err != nil {
					t.Fatalf("%v in %s", err, body)
				}
				return x.Reason
			}},
			{"explain as text", "/debug/queue/default/dra?format=text", func(t *testing.T, body string) string {
				for line := range strings.Lines(body) {
					if r, ok := strings.CutPrefix(line, "why:"); ok {
						return strings.TrimSpace(r)
					}
				}
				t.Fatalf("no why: line in %s", body)
				return ""
			}},
			{"pending", "/debug/queue?order=pop", func(t *testing.T, body string) string {
				var p struct {
					Items []struct{ Key, Reason string }
				}
				if err := json.Unmarshal([]byte(body), &p); err != nil {
					t.Fatalf("%v in %s", err, body)
				}
				if len(p.Items) != 1 || p.Items[0].Key != "default/dra" {
					t.Fatalf("listed %+v, want default/dra alone", p.Items)
				}
				return p.Items[0].Reason
			}},
		} {
			// No t.Run inside the bubble: the case is named in each failure.
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, tc.path, nil))
			if rec.Code != http.StatusOK {
				t.Fatalf("%s: GET %s: %d %s", tc.name, tc.path, rec.Code, rec.Body)
			}
			if r := tc.reason(t, rec.Body.String()); !strings.HasPrefix(r, want) {
				t.Errorf("%s: GET %s: reason %q, want it to begin %q", tc.name, tc.path, r, want)
			}
		}
	})
}
