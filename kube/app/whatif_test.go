package app

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/schedq/schedq/kube/sim"
)

func post(t *testing.T, url, body string) (int, string) {
	t.Helper()
	return send(t, http.MethodPost, url, "application/yaml", body)
}

const whatIfPod = `apiVersion: v1
kind: Pod
metadata: {name: w, namespace: default, annotations: {schedq.io/expected-runtime: 1h}}
spec:
  schedulerName: schedq
  containers: [{name: c, image: x, resources: {requests: {cpu: "%s"}}}]
`

// TestWhatIfEndpoint: a pod that fits now is placed where there is room;
// a 4-core one, behind a pending 4-core pod that takes n0 when r ends,
// waits for s's end on n1 and changes no pending pod's start; the
// cluster and the queue are unchanged.
func TestWhatIfEndpoint(t *testing.T) {
	l := newLiveCluster(t, 2)
	l.running(l.pod("r", "4", "20m"), "n0", 0)
	l.running(l.pod("s", "2", "1h"), "n1", 0)
	srv, _ := l.server()
	code, body := post(t, srv.URL+"/debug/whatif", strings.Replace(whatIfPod, "%s", "1", 1))
	var a whatIfAnswer
	if err := json.Unmarshal([]byte(body), &a); code != 200 || err != nil || len(a.Pods) != 1 {
		t.Fatalf("HTTP %d %v: %s", code, err, body)
	}
	if p := a.Pods[0]; !p.FitsNow || p.Node != "n1" || !p.Forecast.Starts || p.Forecast.Wait > time.Second {
		t.Errorf("got %+v, want it to fit now on n1", p)
	}
	// An empty schedulerName is the default profile's: this scheduler's.
	code, text := post(t, srv.URL+"/debug/whatif?format=text", strings.Replace(strings.Replace(whatIfPod, "%s", "1", 1), "  schedulerName: schedq\n", "", 1))
	if code != 200 || !strings.Contains(text, "default/w: fits now on n1") {
		t.Errorf("no schedulerName: HTTP %d %s, want it to fit now on n1", code, text)
	}

	l.pending(l.pod("p", "4", "1h"))
	l.clk.Step(DefaultForecastTTL) // the next forecast sees p
	code, text = post(t, srv.URL+"/debug/whatif?format=text", strings.Replace(whatIfPod, "%s", "4", 1))
	for _, want := range []string{"1 pod pending", "default/w: does not fit now: 0/2 nodes are available: 2 Insufficient cpu.", "predicted start: in 59m50s on n1", "pending pods whose predicted start changes: 0"} {
		if code != 200 || !strings.Contains(text, want) {
			t.Errorf("HTTP %d: no %q in\n%s", code, want, text)
		}
	}
	if n := l.queue.Counts(); n.Active+n.Backoff+n.Unschedulable != 1 || l.cache.NodeCount() != 2 {
		t.Errorf("the what-if changed the queue (%+v) or the cache", n)
	}
	if _, ok := l.cache.NodeOf(types.NamespacedName{Namespace: "default", Name: "w"}); ok {
		t.Error("the what-if's pod is in the live cache")
	}
}

// TestWhatIfBadInput: each bad request gets a 4xx naming the problem.
func TestWhatIfBadInput(t *testing.T) {
	l := newLiveCluster(t, 1)
	l.groups.Add(&schedulingv1beta1.PodGroup{ObjectMeta: metav1ObjectMeta("default", "taken"),
		Spec: schedulingv1beta1.PodGroupSpec{SchedulingPolicy: schedulingv1beta1.PodGroupSchedulingPolicy{Gang: &schedulingv1beta1.GangSchedulingPolicy{MinCount: 1}}}})
	srv, _ := l.server()
	pod := strings.Replace(whatIfPod, "%s", "1", 1)
	group := func(name string) string {
		return "apiVersion: scheduling.k8s.io/v1beta1\nkind: PodGroup\nmetadata: {name: " + name + ", namespace: default}\nspec: {schedulingPolicy: {gang: {minCount: 1}}}\n---\n"
	}
	for _, tc := range []struct {
		name, query, body string
		code              int
		has               string
	}{
		{"unparsable", "", "kind: [", 400, "manifests: document 1"},
		{"other kind", "", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n", 400, "kind ConfigMap is not a Pod or a PodGroup"},
		{"empty", "", "", 400, "no Pod or PodGroup"},
		{"missing namespace", "", strings.Replace(pod, "namespace: default", "namespace: nowhere", 1), 400, `namespace "nowhere" does not exist`},
		{"missing PodGroup", "", pod + "  schedulingGroup: {podGroupName: nog}\n", 400, "PodGroup default/nog does not exist"},
		{"PodGroup name taken", "", group("taken") + pod, 400, "PodGroup default/taken: a PodGroup of that name exists already"},
		{"PodGroup twice", "", group("g2") + group("g2") + pod, 400, "PodGroup default/g2: a PodGroup of that name exists already"},
		{"PodGroup without a name", "", group(`""`) + pod, 400, "PodGroup 1: no name"},
		{"a name the API server refuses", "", strings.Replace(pod, "name: w,", `name: "W W",`, 1), 400, "pod default/W W: the name is not one the API server takes"},
		{"not pending: succeeded", "", pod + "status: {phase: Succeeded}\n", 400, "pod default/w: status.phase Succeeded; a what-if pod is one not yet scheduled"},
		{"not pending: being deleted", "", strings.Replace(pod, "metadata: {", `metadata: {deletionTimestamp: "2026-01-01T00:00:00Z", `, 1), 400, "pod default/w: has a deletionTimestamp"},
		{"zero horizon", "?horizon=0s", pod, 400, "horizon 0s: want more than 0"},
		{"negative horizon", "?horizon=-1h", pod, 400, "horizon -1h0m0s: want more than 0"},
		{"horizon not a duration", "?horizon=soon", pod, 400, `horizon "soon": not a duration`},
		{"too large", "", pod + "#" + strings.Repeat("x", sim.MaxWhatIfBytes), 413, "larger than the limit of 1048576 bytes"},
		{"other scheduler", "", strings.Replace(pod, "schedulerName: schedq", "schedulerName: other", 1), 400,
			`pod default/w: schedulerName "other" is not one of the scheduler's profiles ("schedq")`},
		{"the default scheduler, not this one", "", strings.Replace(pod, "schedulerName: schedq", "schedulerName: default-scheduler", 1), 400,
			`schedulerName "default-scheduler" is not one of the scheduler's profiles ("schedq")`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, body := post(t, srv.URL+"/debug/whatif"+tc.query, tc.body)
			if code != tc.code || !strings.Contains(body, tc.has) {
				t.Errorf("HTTP %d %q, want %d with %q", code, body, tc.code, tc.has)
			}
		})
	}
	if code, _ := get(t, srv.URL+"/debug/whatif"); code != http.StatusMethodNotAllowed {
		t.Errorf("GET /debug/whatif: HTTP %d, want 405", code)
	}
}

// TestWhatIfBadInputWithoutAForecast: what the manifests say wrong alone
// is a 400 naming it, before the what-if waits for a forecast, and so
// even when there is none to run from (a cluster without nodes, whose
// forecast fails: a good pod gets 503).
func TestWhatIfBadInputWithoutAForecast(t *testing.T) {
	l := newLiveCluster(t, 0)
	srv, _ := l.server()
	pod := strings.Replace(whatIfPod, "%s", "1", 1)
	for _, tc := range []struct {
		name, body string
		code       int
		has        string
	}{
		{"good pod", pod, 503, ""},
		{"a name the API server refuses", strings.Replace(pod, "name: w,", `name: "W W",`, 1), 400, "pod default/W W: the name is not one the API server takes"},
		{"negative request", strings.Replace(whatIfPod, "%s", "-1", 1), 400, "pod default/w: containers c requests cpu must not be negative, got -1"},
		{"other scheduler", strings.Replace(pod, "schedulerName: schedq", "schedulerName: other", 1), 400, `schedulerName "other" is not one of the scheduler's profiles`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, body := post(t, srv.URL+"/debug/whatif", tc.body)
			if code != tc.code || !strings.Contains(body, tc.has) {
				t.Errorf("HTTP %d %q, want %d with %q", code, body, tc.code, tc.has)
			}
		})
	}
}

// whatIfCode is the status h answers a request of method to path, with
// a what-if pod as its body and token, if any, as its bearer token.
func whatIfCode(h http.Handler, method, path, token string) int {
	r := httptest.NewRequest(method, path, strings.NewReader(strings.Replace(whatIfPod, "%s", "1", 1)))
	if token != "" {
		r.Header.Set("Authorization", "Bearer "+token)
	}
	rr := httptest.NewRecorder()
	h.ServeHTTP(rr, r)
	return rr.Code
}

// TestForecastEndpointsGuarded: the forecast and the what-if need the
// same authentication and authorization as /debug/queue; the what-if is
// authorized as the verb post.
func TestForecastEndpointsGuarded(t *testing.T) {
	l := newLiveCluster(t, 1)
	l.pending(l.pod("p", "1", "1h"))
	auth := &fakeAuth{}
	h := guarded(handler(testRegistry(), l.queue, func() (bool, string) { return true, "ok" }, nil, l.forecaster()), refuseAnonymous(auth), auth)
	do := func(method, path, token string) int { return whatIfCode(h, method, path, token) }
	for _, tc := range []struct {
		method, path, token string
		code                int
	}{
		{"GET", "/debug/forecast/default/p", "", 401}, {"POST", "/debug/whatif", "", 401},
		{"GET", "/debug/forecast/default/p", "other", 403}, {"POST", "/debug/whatif", "other", 403},
		{"GET", "/debug/forecast/default/p", "good", 200}, {"POST", "/debug/whatif", "good", 200},
	} {
		if got := do(tc.method, tc.path, tc.token); got != tc.code {
			t.Errorf("%s %s as %q: %d, want %d", tc.method, tc.path, tc.token, got, tc.code)
		}
	}
	if want := "good post /debug/whatif"; auth.asked[len(auth.asked)-1] != want {
		t.Errorf("authorizer asked %q, last want %q", auth.asked, want)
	}
}

// TestWhatIfGang: a PodGroup and its two members, sent together, start
// together when the second node frees.
func TestWhatIfGang(t *testing.T) {
	l := newLiveCluster(t, 2)
	l.running(l.pod("a", "4", "10m"), "n0", 0)
	l.running(l.pod("b", "4", "30m"), "n1", 0)
	srv, _ := l.server()
	body := `apiVersion: scheduling.k8s.io/v1beta1
kind: PodGroup
metadata: {name: g, namespace: default}
spec: {schedulingPolicy: {gang: {minCount: 2}}}
`
	for _, n := range []string{"m0", "m1"} {
		body += "---\n" + strings.Replace(strings.Replace(whatIfPod, "%s", "4", 1), "name: w,", "name: "+n+",", 1) + "  schedulingGroup: {podGroupName: g}\n"
	}
	code, out := post(t, srv.URL+"/debug/whatif", body)
	var a whatIfAnswer
	if err := json.Unmarshal([]byte(out), &a); code != 200 || err != nil || len(a.Pods) != 2 {
		t.Fatalf("HTTP %d %v: %s", code, err, out)
	}
	for _, p := range a.Pods {
		if p.FitsNow || !p.Forecast.Starts || p.Forecast.Gang != "default/g" || !about(p.Forecast.Wait, 30*time.Minute) {
			t.Errorf("%s: %+v, want the gang's one start in 30m", p.Pod, p)
		}
	}
}

// TestWhatIfPanicFailsTheRequest: a what-if whose run panics is answered
// 500 with an error that says so, and the next what-if, on the same
// forecast and its base, is answered as usual. Each request runs on its
// own goroutine, bounded by a deadline: a run that kept the base would
// block the next one.
func TestWhatIfPanicFailsTheRequest(t *testing.T) {
	l := newLiveCluster(t, 2)
	l.running(l.pod("r", "4", "20m"), "n0", 0)
	srv, fc := l.server()
	var armed atomic.Bool
	fc.o.Pace = func() { // what-ifs run with fc.o; forecasts set their own
		if armed.Load() {
			panic("boom")
		}
	}
	type answer struct {
		code int
		body string
		err  error
	}
	ask := func(query string) answer {
		t.Helper()
		ch := make(chan answer, 1)
		go func() {
			resp, err := http.Post(srv.URL+"/debug/whatif"+query, "application/yaml", strings.NewReader(strings.Replace(whatIfPod, "%s", "1", 1)))
			if err != nil {
				ch <- answer{err: err}
				return
			}
			defer resp.Body.Close()
			b, err := io.ReadAll(resp.Body)
			ch <- answer{resp.StatusCode, string(b), err}
		}()
		select {
		case a := <-ch:
			return a
		case <-time.After(30 * time.Second):
			t.Fatal("no answer after 30s")
		}
		return answer{}
	}
	for _, query := range []string{"", "?horizon=2h"} { // from the forecast, and a run of its own
		armed.Store(true)
		if a := ask(query); a.err != nil || a.code != http.StatusInternalServerError || !strings.Contains(a.body, "what-if: the run panicked: boom") {
			t.Errorf("%q: a what-if that panics: HTTP %d %q %v, want 500 saying it panicked", query, a.code, a.body, a.err)
		}
		armed.Store(false)
		if a := ask(query); a.err != nil || a.code != 200 || !strings.Contains(a.body, `"fitsNow": true`) {
			t.Errorf("%q: the what-if after it: HTTP %d %q %v, want 200", query, a.code, a.body, a.err)
		}
	}
}
