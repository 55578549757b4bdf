package app

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/schedq/schedq/kube/sim"
)

// TestForecastPanicFailsTheForecast: a forecast whose run panics (here
// in its copy of the state) answers its requests with an error that says
// so (503 from /debug/forecast and from /debug/whatif, with Retry-After,
// forecastError in the explanation), the
// process goes on, and the next forecast, after the TTL, succeeds.
func TestForecastPanicFailsTheForecast(t *testing.T) {
	l := newLiveCluster(t, 1)
	l.running(l.pod("r", "1", "1h"), "n0", 0)
	l.pending(l.pod("p", "1", "1h"))
	fc := l.forecaster()
	var armed atomic.Bool
	armed.Store(true)
	state := fc.state
	fc.state = func() (*sim.ForecastState, CopyStats) {
		if armed.Load() {
			panic("boom")
		}
		return state()
	}
	srv := httptest.NewServer(handler(prometheus.NewRegistry(), l.queue, func() (bool, string) { return true, "ok" }, nil, fc))
	defer srv.Close()
	code, body := get(t, srv.URL+"/debug/forecast/default/p")
	if code != http.StatusServiceUnavailable || !strings.Contains(body, "forecast: the run panicked: boom") {
		t.Errorf("a forecast that panics: HTTP %d %q, want 503 saying it panicked", code, body)
	}
	if _, body := get(t, srv.URL+"/debug/queue/default/p?format=text"); !strings.Contains(body, "forecast: the run panicked: boom") {
		t.Errorf("the explanation during the failed forecast: %q, want its error", body)
	}
	resp, err := http.Post(srv.URL+"/debug/whatif", "application/yaml", strings.NewReader(strings.Replace(whatIfPod, "%s", "1", 1)))
	code, body = readAnswer(t, resp, err)
	if code != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") != "10" || !strings.Contains(body, "forecast: the run panicked: boom") {
		t.Errorf("a what-if during the failed forecast: HTTP %d (Retry-After %q) %q, want 503 as /debug/forecast answers, Retry-After 10",
			code, resp.Header.Get("Retry-After"), body)
	}
	armed.Store(false)
	l.clk.Step(DefaultForecastTTL)
	if code, body := get(t, srv.URL+"/debug/forecast/default/p"); code != 200 || !strings.Contains(body, `"starts": true`) {
		t.Errorf("the forecast after it: HTTP %d %q, want 200", code, body)
	}
}
