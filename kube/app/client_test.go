package app

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/schedq/schedq"
	"github.com/schedq/schedq/kube/scheduler"
)

// TestExplainAgainstHandler: Explain understands Handler's answers, in
// text and JSON, and Handler's 404 for a pod the queue does not hold
// (which it must tell from another server's 404).
func TestExplainAgainstHandler(t *testing.T) {
	q, err := schedq.New(scheduler.QueueConfig())
	if err != nil {
		t.Fatal(err)
	}
	q.Add(testPod("waiting", "schedq", "1"))
	srv := httptest.NewServer(Handler(prometheus.NewRegistry(), q, func() (bool, string) { return true, "ok" }, nil))
	defer srv.Close()
	ctx := context.Background()
	for _, tc := range []struct {
		address, name, format, want string
	}{
		{strings.TrimPrefix(srv.URL, "http://"), "waiting", "text", "ready: waiting in activeQ"},
		{srv.URL + "/", "waiting", "json", `"key": "default/waiting"`},
	} {
		body, err := Explain(ctx, srv.Client(), tc.address, "default", tc.name, tc.format)
		if err != nil || !strings.Contains(string(body), tc.want) {
			t.Errorf("%s %s: %q, %v; want %q", tc.address, tc.format, body, err, tc.want)
		}
	}
	_, err = Explain(ctx, srv.Client(), srv.URL, "default", "nobody", "text")
	if err == nil || !strings.HasPrefix(err.Error(), "pod default/nobody "+notInQueue) {
		t.Errorf("unknown pod: %v", err)
	}
	other := httptest.NewServer(http.NotFoundHandler())
	defer other.Close()
	_, err = Explain(ctx, other.Client(), other.URL, "default", "nobody", "text")
	if err == nil || err.Error() != "HTTP 404 from "+other.URL+": is this a schedq scheduler?" {
		t.Errorf("another server: %v", err)
	}
}
