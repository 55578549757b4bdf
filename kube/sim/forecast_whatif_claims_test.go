package sim

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
)

// draReplayState is the state of testdata/snapshot/dra.yaml at its start
// (namespace ml, its template one-gpu and claim train-0-gpu-x7k2q), and
// the replay run to its end from there.
func draReplayState(t *testing.T) (*Scenario, *Replay, *ForecastState) {
	t.Helper()
	sc := &Scenario{Name: "t", Seed: 1, Snapshot: "testdata/snapshot/dra.yaml", Duration: time.Minute}
	r, err := NewReplay(sc)
	if err != nil {
		t.Fatal(err)
	}
	var st *ForecastState
	r.At(0, func(s *ForecastState) { st = s })
	if err := r.Run(); err != nil {
		t.Fatal(err)
	}
	if st == nil {
		t.Fatal("no state at 0")
	}
	return sc, r, st
}

// claimingWhatIf is a what-if pod ml/w whose claim gpu is claim (a
// PodResourceClaim in flow style).
func claimingWhatIf(claim string) string {
	return "apiVersion: v1\nkind: Pod\nmetadata: {name: w, namespace: ml}\nspec:\n" +
		"  containers: [{name: c, image: x, resources: {requests: {cpu: \"1\"}, claims: [{name: gpu}]}}]\n" +
		"  resourceClaims: [" + claim + "]\n"
}

// TestWhatIfRefusesMissingClaims: in a state with DRA's objects, a
// what-if pod whose ResourceClaim or ResourceClaimTemplate the state does
// not have is refused, naming it, as a missing PodGroup is: nothing would
// ever make it (a what-if adds Pods and PodGroups only), so the pod could
// never start, and the answer "does not fit now" would blame the devices.
// So is a claim entry the API server would refuse: without a name, or
// with neither or both of a claim and a template. One whose claim or
// template exists is answered.
func TestWhatIfRefusesMissingClaims(t *testing.T) {
	for _, tc := range []struct {
		name, claim, want string
	}{
		{"missing claim", "{name: gpu, resourceClaimName: nope}", "pod ml/w: ResourceClaim ml/nope (spec.resourceClaims gpu) does not exist"},
		{"missing template", "{name: gpu, resourceClaimTemplateName: nope}", "pod ml/w: ResourceClaimTemplate ml/nope (spec.resourceClaims gpu) does not exist"},
		{"neither claim nor template", "{name: gpu}", "pod ml/w: spec.resourceClaims gpu: needs exactly one of resourceClaimName and resourceClaimTemplateName"},
		{"both claim and template", "{name: gpu, resourceClaimName: train-0-gpu-x7k2q, resourceClaimTemplateName: one-gpu}",
			"pod ml/w: spec.resourceClaims gpu: needs exactly one of resourceClaimName and resourceClaimTemplateName"},
		{"no name", "{resourceClaimName: train-0-gpu-x7k2q}", "pod ml/w: spec.resourceClaims[0]: no name"},
		{"claim", "{name: gpu, resourceClaimName: train-0-gpu-x7k2q}", ""},
		{"template", "{name: gpu, resourceClaimTemplateName: one-gpu}", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc, _, st := draReplayState(t)
			w, err := RunWhatIf(sc, st, whatIfPod(t, claimingWhatIf(tc.claim)), ForecastOptions{Horizon: time.Hour})
			switch {
			case tc.want == "" && (err != nil || !w.Pods[0].FitsNow):
				t.Errorf("got %+v, %v; want it to fit now", w, err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("got %+v, %v; want an error containing %q", w, err, tc.want)
			}
		})
	}
}

// TestReplayStateHasSnapshotNamespaces: a replay's state has the
// snapshot's namespaces, with their labels, even one that holds no pod,
// as docs/forecast.md says: a what-if pod of such a namespace is
// answered, where it was refused for a namespace that "does not exist".
func TestReplayStateHasSnapshotNamespaces(t *testing.T) {
	path := filepath.Join(t.TempDir(), "snap.yaml")
	snap := "apiVersion: v1\nkind: Namespace\nmetadata: {name: team, labels: {tier: gold}}\n---\n" +
		"apiVersion: v1\nkind: Node\nmetadata: {name: n1}\nstatus: {allocatable: {cpu: \"8\", memory: 32Gi, pods: \"110\"}}\n"
	if err := os.WriteFile(path, []byte(snap), 0o644); err != nil {
		t.Fatal(err)
	}
	sc := &Scenario{Name: "t", Seed: 1, Snapshot: path, Duration: time.Minute}
	r, err := NewReplay(sc)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Until(0); err != nil {
		t.Fatal(err)
	}
	st := r.State()
	labels := map[string]string{}
	for _, ns := range st.Namespaces {
		labels[ns.Name] = ns.Labels["tier"]
	}
	if l, ok := labels["team"]; !ok || l != "gold" {
		t.Errorf("the state's namespaces (and their tier) %v, want team (gold)", labels)
	}
	in := whatIfPod(t, "apiVersion: v1\nkind: Pod\nmetadata: {name: w, namespace: team}\nspec: {containers: [{name: c, image: x}]}\n")
	if w, err := RunWhatIf(sc, st, in, ForecastOptions{Horizon: time.Hour}); err != nil || !w.Pods[0].FitsNow {
		t.Errorf("a pod of team: got %+v, %v; want it to fit now", w, err)
	}
}

// TestWhatIfTemplatesUnlisted: a state whose templates were not listed
// (the live scheduler's, before its list or without the right to it)
// refuses a what-if pod that claims from a template, saying why, even
// when the state holds no other DRA object: the cluster has none yet,
// but the scheduler watches DRA's claims, or it would not list templates.
func TestWhatIfTemplatesUnlisted(t *testing.T) {
	st := whatIfState()
	st.TemplatesUnlisted = true
	pod := strings.ReplaceAll(claimingWhatIf("{name: gpu, resourceClaimTemplateName: one-gpu}"), "namespace: ml", "namespace: default")
	_, err := RunWhatIf(&Scenario{Name: "t", Seed: 1}, st, whatIfPod(t, pod), ForecastOptions{Horizon: time.Hour})
	if want := "pod default/w: claims from ResourceClaimTemplate default/one-gpu (spec.resourceClaims gpu), but the scheduler has not listed the templates"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("got %v, want an error containing %q", err, want)
	}
}

// TestForecastRunningPodHoldsItsClaims: a running pod whose claim is
// allocated but not yet reserved for it (the live scheduler's state
// while the pod's binding is under way: DynamicResources reserves at
// PreBind) holds the claim in the forecast, and frees its device when it
// ends. Without its reservation the claim, named (not made for the pod),
// stayed allocated after the pod's end, and the GPU pod waiting for the
// device never started.
func TestForecastRunningPodHoldsItsClaims(t *testing.T) {
	st := draState(t) // train-0 ends in an hour; three GPUs free for four pods
	for i, obj := range st.Objects {
		if c, ok := obj.(*resourceapi.ResourceClaim); ok && c.Name == "train-0-gpu-x7k2q" {
			c = c.DeepCopy()
			c.OwnerReferences, c.Status.ReservedFor = nil, nil
			st.Objects[i] = c
		}
	}
	train := st.Running[0].Pod.DeepCopy()
	name := "train-0-gpu-x7k2q"
	train.Spec.ResourceClaims = []v1.PodResourceClaim{{Name: "gpu", ResourceClaimName: &name}}
	train.Status.ResourceClaimStatuses = nil
	st.Running[0].Pod = train
	f, err := RunForecast(&Scenario{Name: "t", Seed: 1}, st, ForecastOptions{Horizon: 3 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	later := 0
	for _, pf := range f.Pods {
		if strings.HasPrefix(pf.Pod.Name, "infer-") && pf.Starts && pf.Wait > time.Hour && pf.Wait < time.Hour+time.Second {
			later++
		}
	}
	if later != 1 {
		t.Errorf("%d GPU pods start when train-0 ends in 1h, want 1: %+v", later, f.Pods)
	}
}
