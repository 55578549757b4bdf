package app

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// stalledWriter is a ResponseWriter whose client does not read: its
// first Write says so on writing and waits for release.
type stalledWriter struct {
	*httptest.ResponseRecorder
	writing, release chan struct{}
}

func (s *stalledWriter) Write(b []byte) (int, error) {
	close(s.writing)
	<-s.release
	return s.ResponseRecorder.Write(b)
}

// TestWhatIfSlowReaderHoldsNoSlot: a what-if whose client reads its
// answer slowly has finished its run; another what-if meanwhile runs
// (200), not 429.
func TestWhatIfSlowReaderHoldsNoSlot(t *testing.T) {
	l := newLiveCluster(t, 1)
	_, fc := l.server()
	h := serveWhatIf(fc)
	req := func() *http.Request {
		return httptest.NewRequest(http.MethodPost, "/debug/whatif", strings.NewReader(strings.Replace(whatIfPod, "%s", "1", 1)))
	}
	slow := &stalledWriter{ResponseRecorder: httptest.NewRecorder(), writing: make(chan struct{}), release: make(chan struct{})}
	done := make(chan struct{})
	go func() {
		defer close(done)
		h(slow, req())
	}()
	select {
	case <-slow.writing:
	case <-time.After(30 * time.Second):
		close(slow.release)
		t.Fatal("the first what-if wrote nothing in 30s")
	}
	rr := httptest.NewRecorder()
	h(rr, req())
	close(slow.release)
	<-done
	if rr.Code != http.StatusOK {
		t.Errorf("a what-if while another's client reads slowly: HTTP %d %q, want 200", rr.Code, rr.Body.String())
	}
	if slow.Code != http.StatusOK {
		t.Errorf("the slow client's what-if: HTTP %d %q, want 200", slow.Code, slow.Body.String())
	}
}

// TestDebugQueryChecked: a parameter the endpoint does not take (one of
// another mode, a misspelt one), one given twice, a malformed query or an
// unknown format is a 400 naming it, not ignored; the parameters each
// endpoint takes still work.
func TestDebugQueryChecked(t *testing.T) {
	l := newLiveCluster(t, 1)
	l.pending(l.pod("p", "1", "1h"))
	srv, _ := l.server()
	for _, tc := range []struct {
		name, method, path string
		code               int
		has                string
	}{
		{"dump", "GET", "/debug/queue?limit=1&continue=&format=text", 200, "activeQ"},
		{"offset of the dump", "GET", "/debug/queue?offset=5", 400, `parameter "offset": not one of /debug/queue's (limit, continue, format)`},
		{"limit twice", "GET", "/debug/queue?limit=1&limit=2", 400, `parameter "limit": given 2 times`},
		{"malformed query", "GET", "/debug/queue?limit=%zz", 400, "query"},
		{"format yaml", "GET", "/debug/queue?format=yaml", 400, `format "yaml": want text or json`},
		{"pop order", "GET", "/debug/queue?order=pop&namespace=default&offset=0&limit=5&format=json", 200, "default/p"},
		{"tenant without fairness", "GET", "/debug/queue?order=pop&tenant=", 400, "tenants exist only with fair sharing on"},
		{"continue of the pop order", "GET", "/debug/queue?order=pop&continue=abc", 400, `parameter "continue": not one of /debug/queue?order=pop's`},
		{"misspelt offset", "GET", "/debug/queue?order=pop&ofset=5", 400, `parameter "ofset"`},
		{"explain", "GET", "/debug/queue/default/p?format=text", 200, "default/p"},
		{"explain misspelt format", "GET", "/debug/queue/default/p?fromat=text", 400, `parameter "fromat"`},
		{"forecast format txt", "GET", "/debug/forecast/default/p?format=txt", 400, `format "txt"`},
		{"forecast offset", "GET", "/debug/forecast/default/p?offset=1", 400, `parameter "offset"`},
		{"what-if horizon twice", "POST", "/debug/whatif?horizon=1h&horizon=2h", 400, `parameter "horizon": given 2 times`},
		{"what-if limit", "POST", "/debug/whatif?limit=1", 400, `parameter "limit"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, body := send(t, tc.method, srv.URL+tc.path, "", strings.Replace(whatIfPod, "%s", "1", 1))
			if code != tc.code || !strings.Contains(body, tc.has) {
				t.Errorf("HTTP %d %q, want %d with %q", code, body, tc.code, tc.has)
			}
		})
	}
}

// TestWhatIfContentType: manifests come as YAML or JSON (or untyped, or
// as curl --data-binary types them); a body of another type, such as a
// form upload, is a 415 naming the type, not a parse error of its bytes.
func TestWhatIfContentType(t *testing.T) {
	l := newLiveCluster(t, 1)
	srv, _ := l.server()
	pod := strings.Replace(whatIfPod, "%s", "1", 1)
	for _, tc := range []struct {
		name, contentType string
		code              int
		has               string
	}{
		{"yaml", "application/yaml", 200, "fitsNow"},
		{"yaml with charset", "application/yaml; charset=utf-8", 200, "fitsNow"},
		{"x-yaml", "application/x-yaml", 200, "fitsNow"},
		{"json type", "application/json", 200, "fitsNow"}, // YAML is parsed whatever it says
		{"text", "text/plain", 200, "fitsNow"},
		{"curl --data-binary", "application/x-www-form-urlencoded", 200, "fitsNow"},
		{"none", "", 200, "fitsNow"},
		{"form upload", "multipart/form-data; boundary=x", 415, `Content-Type "multipart/form-data; boundary=x": want application/yaml or application/json`},
		{"protobuf", "application/vnd.kubernetes.protobuf", 415, `Content-Type "application/vnd.kubernetes.protobuf"`},
		{"malformed", "application/", 415, `Content-Type "application/"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, body := send(t, http.MethodPost, srv.URL+"/debug/whatif", tc.contentType, pod)
			if code != tc.code || !strings.Contains(body, tc.has) {
				t.Errorf("HTTP %d %q, want %d with %q", code, body, tc.code, tc.has)
			}
		})
	}
}

// TestForecastOfPodArrivedSince: a pod that is pending but arrived after
// the forecast is not missing (404 means not pending): its forecast is a
// TTL away, a 503 with Retry-After; the explanation of the same pod says
// so in forecastError, and the listing "not yet forecast".
func TestForecastOfPodArrivedSince(t *testing.T) {
	l := newLiveCluster(t, 1)
	l.pending(l.pod("p", "1", "1h"))
	srv, _ := l.server()
	if code, body := get(t, srv.URL+"/debug/forecast/default/p"); code != 200 {
		t.Fatalf("the pod of the forecast: HTTP %d %s", code, body)
	}
	l.pending(l.pod("q", "1", "1h")) // within the forecast's TTL
	resp, err := http.Get(srv.URL + "/debug/forecast/default/q")
	retry := ""
	if resp != nil {
		retry = resp.Header.Get("Retry-After")
	}
	code, body := readAnswer(t, resp, err)
	if code != http.StatusServiceUnavailable || retry != "10" || !strings.Contains(body, "arrived since") {
		t.Errorf("a pod pending since the forecast: HTTP %d, Retry-After %q, %q; want 503, 10 and why", code, retry, body)
	}
	if code, body := get(t, srv.URL+"/debug/queue/default/q"); code != 200 || !strings.Contains(body, "arrived since") {
		t.Errorf("its explanation: HTTP %d %s, want 200 with forecastError", code, body)
	}
	if code, body := get(t, srv.URL+"/debug/queue?order=pop&format=text"); code != 200 || !strings.Contains(body, "default/q: ready: waiting in activeQ for its turn | start: not yet forecast") {
		t.Errorf("the listing: HTTP %d %s, want q not yet forecast", code, body)
	}
	if code, body := get(t, srv.URL+"/debug/forecast/default/gone"); code != http.StatusNotFound || !strings.Contains(body, "not pending") {
		t.Errorf("a pod that is not pending: HTTP %d %s, want 404", code, body)
	}
}
