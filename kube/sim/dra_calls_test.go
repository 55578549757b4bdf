package sim

import "testing"

// TestDRAClientKeepsNoCalls: the plugins' fake clientset, which records a
// copy of every call it is given, holds after a run only the calls made
// since the last attempt (forgetCalls), not every claim write of the run.
func TestDRAClientKeepsNoCalls(t *testing.T) {
	s, err := newSim(load(t, "DeviceClaims"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.close()
	if err := s.loop(); err != nil {
		t.Fatal(err)
	}
	bound := 0
	for _, st := range s.order {
		if !st.bound.IsZero() {
			bound++
		}
	}
	if bound < 4 {
		t.Fatalf("%d pods bound, want the scenario's", bound)
	}
	// Each bound pod's claim was written at its PreBind; what is held
	// is what came after the last attempt: at most one pod's writes and
	// the ends' since.
	if n := len(s.x.client.Actions()); n >= bound {
		t.Errorf("the clientset holds %d calls after %d pods bound, want fewer than one per pod", n, bound)
	}
}
