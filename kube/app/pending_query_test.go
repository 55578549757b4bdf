package app

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
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
