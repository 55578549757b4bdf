package app

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"sort"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/klog/v2"

	"github.com/schedq/schedq/kube/scheduler"
)

// TestRunSchedulesEachProfilesPods runs the whole scheduler with a
// --config of two profiles, b without TaintToleration's filter, on a
// fake clientset with one tainted node: the pod of b is bound there, the
// pod of a is not (its profile's filter refuses the node), the pod of a
// scheduler of neither is left alone, and each pod's event is reported
// by its own profile, as kube-scheduler's profiles report.
func TestRunSchedulesEachProfilesPods(t *testing.T) {
	o := Options{SchedulerName: "schedq"}
	o.Config.File = configFile(t, cfgHeader+"profiles:\n- schedulerName: a\n- schedulerName: b\n  plugins:\n    filter:\n      disabled:\n      - name: TaintToleration\n")
	if err := o.applyConfig(); err != nil {
		t.Fatal(err)
	}
	synctest.Test(t, func(t *testing.T) {
		tainted := testNode("n1", "2")
		tainted.Spec.Taints = []v1.Taint{{Key: "dedicated", Value: "x", Effect: v1.TaintEffectNoSchedule}}
		client := fakeCluster(tainted, testPod("pa", "a", "100m"), testPod("pb", "b", "100m"), testPod("pc", "c", "100m"))
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			done <- run(ctx, clients{sched: client, events: client, lease: client}, nil, nil, o, slog.New(slog.NewTextHandler(io.Discard, nil)))
		}()
		time.Sleep(time.Second)
		synctest.Wait()

		pods, err := client.CoreV1().Pods("default").List(context.Background(), metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		nodes := map[string]string{}
		for _, p := range pods.Items {
			nodes[p.Name] = p.Spec.NodeName
		}
		if nodes["pb"] != "n1" || nodes["pa"] != "" || nodes["pc"] != "" {
			t.Fatalf("bindings %v, want pb alone on n1", nodes)
		}
		evs, err := client.EventsV1().Events("default").List(context.Background(), metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, e := range evs.Items {
			got = append(got, e.Regarding.Name+" "+e.Reason+" by "+e.ReportingController)
		}
		sort.Strings(got)
		want := []string{"pa FailedScheduling by a", "pb Scheduled by b"}
		if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
			t.Errorf("events %q, want %q", got, want)
		}
		cancel()
		if err := <-done; err != nil {
			t.Fatalf("run: %v", err)
		}
	})
}

// TestUseProfilesNamesEachPluginsProfiles: with two profiles, b without
// PodTopologySpread, the handlers let in the pods of both, and know that
// PodTopologySpread's events are a's alone (the warm start then never
// parks b's pods behind it), NodeResourcesFit's both profiles'.
func TestUseProfilesNamesEachPluginsProfiles(t *testing.T) {
	o := Options{SchedulerName: "schedq"}
	o.Config.File = configFile(t, cfgHeader+"profiles:\n- schedulerName: a\n- schedulerName: b\n  plugins:\n    multiPoint:\n      disabled:\n      - name: PodTopologySpread\n")
	if err := o.applyConfig(); err != nil {
		t.Fatal(err)
	}
	client := fakeCluster()
	qcfg := scheduler.QueueConfig()
	fws, err := upstreamFrameworks(t.Context(), o, &qcfg, client, informers.NewSharedInformerFactory(client, 0), klog.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeAll(fws) })
	h := &scheduler.Handlers{}
	if err := useProfiles(t.Context(), h, o, fws, klog.Background()); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(h.Profiles, []string{"a", "b"}) {
		t.Fatalf("profiles %q, want a, b", h.Profiles)
	}
	for plugin, want := range map[string][]string{"PodTopologySpread": {"a"}, "NodeResourcesFit": {"a", "b"}} {
		if got := h.HintProfiles[plugin]; !slices.Equal(got, want) {
			t.Errorf("%s's events are registered by %q, want %q", plugin, got, want)
		}
	}
}

// TestForecastOfAnotherProfilesPod: the forecasts simulate the first
// profile's pods only, so a pending pod of another profile (b) never has
// a forecast. It is said so, naming its profile, instead of as a pod
// that arrived since the last forecast: /debug/forecast answers 404
// (not 503 with Retry-After, which would have a client ask for ever),
// its explanation's forecastError and its line in the listing name b.
func TestForecastOfAnotherProfilesPod(t *testing.T) {
	l := newLiveCluster(t, 1)
	l.pending(l.pod("p", "1", "1h"))
	other := l.pod("q", "1", "1h")
	other.Spec.SchedulerName = "b"
	l.pending(other)
	srv, _ := l.server()
	if code, body := get(t, srv.URL+"/debug/forecast/default/p"); code != 200 {
		t.Fatalf("the first profile's pod: HTTP %d %s", code, body)
	}
	resp, err := http.Get(srv.URL + "/debug/forecast/default/q")
	retry := ""
	if resp != nil {
		retry = resp.Header.Get("Retry-After")
	}
	code, body := readAnswer(t, resp, err)
	if code != http.StatusNotFound || retry != "" || !strings.Contains(body, `profile "b"`) {
		t.Errorf("b's pod: HTTP %d, Retry-After %q, %q; want 404 naming profile b", code, retry, body)
	}
	if code, body := get(t, srv.URL+"/debug/queue/default/q?format=text"); code != 200 || !strings.Contains(body, `pod default/q is profile "b"'s`) {
		t.Errorf("its explanation: HTTP %d %s, want its profile in forecastError", code, body)
	}
	if code, body := get(t, srv.URL+"/debug/queue?order=pop&format=text"); code != 200 || !strings.Contains(body, `| start: not forecast: profile "b"'s`) {
		t.Errorf("the listing: HTTP %d %s, want q not forecast, of profile b", code, body)
	}
}

// TestWhatIfOfAnotherProfilesPod: a what-if pod of the scheduler's
// second profile is refused as such, naming both profiles, not as a pod
// of a scheduler that has no such profile; the first profile's is
// answered.
func TestWhatIfOfAnotherProfilesPod(t *testing.T) {
	o := Options{SchedulerName: "schedq"}
	o.Config.File = configFile(t, cfgHeader+"profiles:\n- schedulerName: schedq\n- schedulerName: b\n")
	if err := o.applyConfig(); err != nil {
		t.Fatal(err)
	}
	l := newLiveCluster(t, 1)
	srv := l.serverOf(l.forecasterWith(o))
	pod := strings.Replace(whatIfPod, "%s", "1", 1)
	if code, body := post(t, srv.URL+"/debug/whatif", pod); code != 200 {
		t.Fatalf("the first profile's pod: HTTP %d %s", code, body)
	}
	code, body := post(t, srv.URL+"/debug/whatif", strings.Replace(pod, "schedulerName: schedq", "schedulerName: b", 1))
	if want := `pod default/w: schedulerName "b" is another profile's: the what-ifs simulate the first profile, "schedq", and its pods only`; code != 400 || !strings.Contains(body, want) {
		t.Errorf("b's pod: HTTP %d %q, want 400 with %q", code, body, want)
	}
}
