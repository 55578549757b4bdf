package sim

import (
	"strings"
	"testing"
	"time"
)

// draReplayState is the state of testdata/snapshot/dra.yaml at its start:
// namespace ml, its template one-gpu and claim train-0-gpu-x7k2q.
func draReplayState(t *testing.T) (*Scenario, *ForecastState) {
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
	return sc, st
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
// One whose claim or template exists is answered.
func TestWhatIfRefusesMissingClaims(t *testing.T) {
	for _, tc := range []struct {
		name, claim, want string
	}{
		{"missing claim", "{name: gpu, resourceClaimName: nope}", "pod ml/w: ResourceClaim ml/nope (spec.resourceClaims gpu) does not exist"},
		{"missing template", "{name: gpu, resourceClaimTemplateName: nope}", "pod ml/w: ResourceClaimTemplate ml/nope (spec.resourceClaims gpu) does not exist"},
		{"claim", "{name: gpu, resourceClaimName: train-0-gpu-x7k2q}", ""},
		{"template", "{name: gpu, resourceClaimTemplateName: one-gpu}", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc, st := draReplayState(t)
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
