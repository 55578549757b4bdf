package app

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
)

// TestForecastAndWhatIfConcurrently: forecasts (a new one for each
// listing: the TTL is zero) and what-ifs (on the last forecast and its
// base, with its horizon and with one of their own) run at the same
// time, under -race, from several goroutines: each answers as it would
// alone, and they share nothing that either changes (the scenario, the
// state, the history, the base).
func TestForecastAndWhatIfConcurrently(t *testing.T) {
	l := newLiveCluster(t, 3)
	for i := range 6 {
		l.running(l.pod(fmt.Sprintf("r%d", i), "1", "30m"), fmt.Sprintf("n%d", i%3), 0)
	}
	for i := range 4 {
		l.pending(l.pod(fmt.Sprintf("p%d", i), "3", "1h"))
	}
	srv, fc := l.server()
	fc.ttl = 0
	const rounds = 8
	var wg sync.WaitGroup
	wg.Go(func() {
		for range rounds {
			code, body := get(t, srv.URL+"/debug/queue?order=pop&format=text")
			if code != 200 || strings.Contains(body, "no forecast") {
				t.Errorf("listing: HTTP %d %s", code, body)
				return
			}
		}
	})
	for _, query := range []string{"?format=text", "?format=text&horizon=2h"} {
		wg.Go(func() {
			for range rounds {
				code, body := post(t, srv.URL+"/debug/whatif"+query, strings.Replace(whatIfPod, "%s", "1", 1))
				switch {
				case code == http.StatusTooManyRequests:
				case code != 200 || !strings.Contains(body, "default/w: fits now"):
					t.Errorf("what-if %s: HTTP %d %s", query, code, body)
					return
				}
			}
		})
	}
	wg.Wait()
}
