package app

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/schedq/schedq"
	"github.com/schedq/schedq/kube/scheduler"
)

func nsPod(ns, name string) *v1.Pod {
	p := testPod(name, "schedq", "1")
	p.Namespace = ns
	return p
}

// fairQueue is the scheduler's queue with fairness between namespaces,
// holding a flood of team-a's pods and two of team-b's, added later.
func fairQueue(t *testing.T) *podQueue {
	t.Helper()
	cfg := scheduler.QueueConfig()
	cfg.Fairness = FairnessOptions{Namespaces: true}.fairness()
	q, err := schedq.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"a1", "a2", "a3"} {
		q.Add(nsPod("team-a", n))
	}
	q.Add(nsPod("team-b", "b1"))
	q.Add(nsPod("team-b", "b2"))
	return q
}

func TestDebugQueuePending(t *testing.T) {
	h := Handler(prometheus.NewRegistry(), fairQueue(t), func() (bool, string) { return true, "ok" }, nil)
	get := func(path string) (int, string) {
		rr := httptest.NewRecorder()
		h.ServeHTTP(rr, httptest.NewRequest(http.MethodGet, path, nil))
		return rr.Code, rr.Body.String()
	}
	for _, tc := range []struct {
		path string
		code int
		has  []string
	}{
		// Fair: team-b's pods interleave with team-a's flood.
		{"/debug/queue?order=pop&format=text", 200, []string{"1 active        team-a/a1 [team-a]", "2 active        team-b/b1", "3 active        team-a/a2", "4 active        team-b/b2"}},
		{"/debug/queue?namespace=team-b&format=text", 200, []string{"2 pending", "1 active        team-b/b1", "2 active        team-b/b2"}},
		{"/debug/queue?tenant=team-a&offset=1&limit=1", 200, []string{`"key": "team-a/a2"`, `"ahead": 2`, `"total": 3`}},
		{"/debug/queue?order=pop&limit=0", 400, []string{"limit"}},
		{"/debug/queue?order=pop&offset=-1", 400, []string{"offset"}},
		{"/debug/queue?order=priority", 400, []string{"the only order is pop"}},
		{"/debug/queue/team-b/b2?format=text", 200, []string{"position:", "3 ahead of 5 in activeQ"}},
	} {
		code, body := get(tc.path)
		for _, want := range tc.has {
			if code != tc.code || !strings.Contains(body, want) {
				t.Errorf("GET %s: %d\n%s\nwant %d containing %q", tc.path, code, body, tc.code, want)
			}
		}
	}
}

func TestPendingAgainstHandler(t *testing.T) {
	srv := httptest.NewServer(Handler(prometheus.NewRegistry(), fairQueue(t), func() (bool, string) { return true, "ok" }, nil))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	body, err := Pending(ctx, srv.Client(), srv.URL, "team-b", 1, 5, "text")
	if err != nil || !strings.Contains(string(body), "team-b/b2") || strings.Contains(string(body), "team-b/b1") {
		t.Errorf("Pending: %q, %v", body, err)
	}
	if _, err := Pending(ctx, srv.Client(), srv.URL, "", 0, MaxQueuePageLimit+1, "text"); err == nil || !strings.Contains(err.Error(), "limit") {
		t.Errorf("too large a limit: %v", err)
	}
}

func TestFairnessOptions(t *testing.T) {
	w, err := ParseWeights("team-a=2, team-b=0.5")
	if err != nil || w["team-a"] != 2 || w["team-b"] != 0.5 {
		t.Fatalf("ParseWeights: %v, %v", w, err)
	}
	for _, bad := range []struct{ name, in, want string }{
		{"no weight", "team-a", `"team-a" is not NAMESPACE=WEIGHT`},
		{"no namespace", "=2", `"=2" is not NAMESPACE=WEIGHT`},
		{"not a number", "team-a=two", `team-a: "two" is not a number`},
		{"not a namespace name", "Team A=2", `"Team A" is not a namespace name`},
		{"listed twice", "team-a=1,team-a=2", "team-a is listed twice"},
	} {
		if _, err := ParseWeights(bad.in); err == nil || !strings.Contains(err.Error(), "--fair-namespace-weights: "+bad.want) {
			t.Errorf("%s: ParseWeights(%q): %v, want %q", bad.name, bad.in, err, bad.want)
		}
	}
	for _, tc := range []struct {
		o    FairnessOptions
		want string
	}{
		{FairnessOptions{Namespaces: true, Weights: map[string]float64{"x": 0}}, "x=0"},
		{FairnessOptions{Namespaces: true, HalfLife: -time.Second}, "--fair-half-life"},
		{FairnessOptions{Weights: map[string]float64{"x": 1}}, "--fair-namespace-weights needs --fair-namespaces"},
		{FairnessOptions{Weights: map[string]float64{"x": 1}, HalfLife: time.Minute}, "--fair-namespace-weights and --fair-half-life need --fair-namespaces"},
	} {
		errs := tc.o.validate(flagName)
		if len(errs) != 1 || !strings.Contains(errs[0].Error(), tc.want) {
			t.Errorf("%+v: %v, want one error containing %q", tc.o, errs, tc.want)
		}
	}
	if errs := (FairnessOptions{Namespaces: true, Weights: map[string]float64{"x": 3}}).validate(flagName); errs != nil {
		t.Errorf("valid options: %v", errs)
	}
}
