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
