package app

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"

	"github.com/schedq/schedq"
	"github.com/schedq/schedq/kube/scheduler"
)

// newTestQueue returns a queue holding n pending pods.
func newTestQueue(t *testing.T, n int) *podQueue {
	t.Helper()
	q, err := schedq.New(scheduler.QueueConfig())
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if err := q.Add(testPod(fmt.Sprintf("p%04d", i), "schedq", "1")); err != nil {
			t.Fatal(err)
		}
	}
	return q
}

func testRegistry() *prometheus.Registry { return prometheus.NewRegistry() }

func TestPlainHTTPOnlyOnLoopback(t *testing.T) {
	for addr, ok := range map[string]bool{
		"127.0.0.1:10351": true, "[::1]:10351": true, "localhost:0": true, "127.0.0.2:1": true,
		"0.0.0.0:10351": false, ":10351": false, "10.0.0.1:10351": false, "[::]:1": false, "example.com:80": false, "127.0.0.1": false,
	} {
		err := checkLoopback(addr)
		if ok != (err == nil) {
			t.Errorf("%s: %v", addr, err)
		}
		if err != nil && !strings.Contains(err.Error(), "--address") {
			t.Errorf("%s: the error does not name the flag: %v", addr, err)
		}
	}
	err := Run(context.Background(), Options{Address: "0.0.0.0:10351", Kubeconfig: "/no/such/kubeconfig"})
	if err == nil || !strings.Contains(err.Error(), "loopback") {
		t.Fatalf("Run with plain HTTP on all interfaces: %v", err)
	}
}

// fakeAuth authenticates "Bearer good" and "Bearer other" as users good
// and other, anything else as anonymous, as the delegating authenticator
// does; it authorizes user good only.
type fakeAuth struct{ asked []string }

func (f *fakeAuth) AuthenticateRequest(r *http.Request) (*authenticator.Response, bool, error) {
	name := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
	if name != "good" && name != "other" {
		name = user.Anonymous
	}
	return &authenticator.Response{User: &user.DefaultInfo{Name: name}}, true, nil
}

func (f *fakeAuth) Authorize(_ context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
	f.asked = append(f.asked, fmt.Sprintf("%s %s %s", a.GetUser().GetName(), a.GetVerb(), a.GetPath()))
	if a.GetUser().GetName() == "good" {
		return authorizer.DecisionAllow, "", nil
	}
	return authorizer.DecisionNoOpinion, "", nil
}

// ConditionsAwareAuthorize answers as Authorize: the authorizer interface
// of k8s.io/apiserver v0.37 asks every authorizer for it.
func (f *fakeAuth) ConditionsAwareAuthorize(ctx context.Context, a authorizer.Attributes) authorizer.ConditionsAwareDecision {
	return authorizer.ConditionsAwareDecisionFromParts(f.Authorize(ctx, a))
}

// EvaluateConditions fails closed: fakeAuth makes no conditional decisions.
func (f *fakeAuth) EvaluateConditions(context.Context, authorizer.ConditionsAwareDecision, authorizer.ConditionsData) (authorizer.Decision, string, error) {
	return authorizer.DecisionDeny, "", authorizer.ErrorConditionEvaluationNotSupported
}

// TestGuarded: the health paths are open; every other path needs an
// authenticated, authorized user; anonymous is not authenticated.
func TestGuarded(t *testing.T) {
	q := newTestQueue(t, 0)
	auth := &fakeAuth{}
	h := guarded(Handler(testRegistry(), q, func() (bool, string) { return true, "ok" }, nil), refuseAnonymous(auth), auth)
	get := func(path, token string) int {
		r := httptest.NewRequest(http.MethodGet, path, nil)
		if token != "" {
			r.Header.Set("Authorization", "Bearer "+token)
		}
		rr := httptest.NewRecorder()
		h.ServeHTTP(rr, r)
		return rr.Code
	}
	for _, tc := range []struct {
		path, token string
		code        int
	}{
		{"/healthz", "", 200}, {"/livez", "", 200}, {"/readyz", "", 200},
		{"/metrics", "", 401}, {"/debug/queue", "", 401}, {"/debug/queue/ns/p", "", 401},
		{"/metrics", "other", 403}, {"/debug/queue", "other", 403},
		{"/metrics", "good", 200}, {"/debug/queue", "good", 200}, {"/debug/queue/ns/p", "good", 404},
	} {
		if got := get(tc.path, tc.token); got != tc.code {
			t.Errorf("GET %s as %q: %d, want %d", tc.path, tc.token, got, tc.code)
		}
	}
	want := "good get /debug/queue/ns/p"
	if len(auth.asked) == 0 || auth.asked[len(auth.asked)-1] != want {
		t.Errorf("authorizer asked %q, last want %q", auth.asked, want)
	}
}

// TestDebugQueuePages: /debug/queue comes a page at a time, in the dump's
// order; the continue tokens walk all of it once; bad limits and tokens
// are refused with a reason; one dump serves all the requests of a TTL.
func TestDebugQueuePages(t *testing.T) {
	q := newTestQueue(t, 1203)
	counting := &countingView{queueView: q}
	now := t0
	snap := &snapshots{q: counting, ttl: time.Second, now: func() time.Time { return now }}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /debug/queue", queuePages(snap))
	type decoded struct {
		Summary   []struct{ Count int }
		Items     []struct{ Key string }
		Continue  string
		Remaining int
	}
	fetch := func(query string) (int, decoded, string) {
		rr := httptest.NewRecorder()
		mux.ServeHTTP(rr, httptest.NewRequest(http.MethodGet, "/debug/queue"+query, nil))
		var p decoded
		if rr.Code == 200 && rr.Header().Get("Content-Type") == "application/json" {
			if err := json.Unmarshal(rr.Body.Bytes(), &p); err != nil {
				t.Fatal(err)
			}
		}
		return rr.Code, p, rr.Body.String()
	}
	_, p, _ := fetch("")
	if len(p.Items) != DefaultQueuePageLimit || p.Remaining != 1203-DefaultQueuePageLimit || p.Continue == "" {
		t.Fatalf("first page: %d items, %d remaining, continue %q", len(p.Items), p.Remaining, p.Continue)
	}
	if total := p.Summary[0].Count; total != 1203 {
		t.Fatalf("summary counts %d active, want the whole queue (1203)", total)
	}
	seen := map[string]bool{}
	tok, pages := "", 0
	for {
		q := "?limit=100"
		if tok != "" {
			q += "&continue=" + tok
		}
		code, p, body := fetch(q)
		if code != 200 {
			t.Fatalf("page %d: %d %s", pages, code, body)
		}
		for _, x := range p.Items {
			if seen[x.Key] {
				t.Fatalf("%s on two pages", x.Key)
			}
			seen[x.Key] = true
		}
		pages++
		if tok = p.Continue; tok == "" {
			break
		}
	}
	if len(seen) != 1203 || pages != 13 {
		t.Fatalf("%d items on %d pages, want 1203 on 13", len(seen), pages)
	}
	if counting.dumps != 1 {
		t.Fatalf("%d dumps for 15 requests within the TTL, want 1", counting.dumps)
	}
	now = now.Add(time.Second)
	fetch("?limit=1")
	if counting.dumps != 2 {
		t.Fatalf("%d dumps after the TTL, want 2", counting.dumps)
	}
	for _, bad := range []string{"?limit=0", "?limit=-1", "?limit=5001", "?limit=x", "?continue=!!!", "?continue=bm90LWEtdG9rZW4"} {
		if code, _, body := fetch(bad); code != 400 || !strings.Contains(body, strings.SplitN(bad[1:], "=", 2)[0]) {
			t.Errorf("%s: %d %q, want 400 naming the parameter", bad, code, body)
		}
	}
	if _, _, body := fetch("?limit=2&format=text"); !strings.Contains(body, "1201 more: ?continue=") {
		t.Errorf("text page does not say how to go on:\n%s", body)
	}
}

type countingView struct {
	queueView
	dumps int
}

func (c *countingView) Dump() schedq.Dump[types.NamespacedName] {
	c.dumps++
	return c.queueView.Dump()
}

// BenchmarkDebugQueue20k measures /debug/queue on a queue of 20,000
// pending pods: "dump" is what an expired snapshot costs (its collection
// holds the queue's lock), at most once a second however many clients
// ask; "page" is a request served from the snapshot (default page).
func BenchmarkDebugQueue20k(b *testing.B) {
	q, err := schedq.New(scheduler.QueueConfig())
	if err != nil {
		b.Fatal(err)
	}
	for i := range 20000 {
		q.Add(testPod(fmt.Sprintf("p%05d", i), "schedq", "1"))
	}
	b.Run("dump", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			q.Dump()
		}
	})
	b.Run("page", func(b *testing.B) {
		h := Handler(testRegistry(), q, func() (bool, string) { return true, "ok" }, nil)
		b.ReportAllocs()
		var size int
		for b.Loop() {
			rr := httptest.NewRecorder()
			h.ServeHTTP(rr, httptest.NewRequest(http.MethodGet, "/debug/queue", nil))
			size = rr.Body.Len()
		}
		b.ReportMetric(float64(size), "bytes/page")
	})
}
