package sim

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
)

// TestSoftConstraintsCountedNotLogged: pods with a soft constraint schedq
// does not score are counted in the report, and nothing is logged per
// pod (the simulator used to write one line per pod on stderr).
func TestSoftConstraintsCountedNotLogged(t *testing.T) {
	var logged bytes.Buffer
	prev := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&logged, nil)))
	defer slog.SetDefault(prev)
	sc, err := Parse([]byte(`name: soft
scheduler: {plugins: schedq}
nodes: [{name: n, count: 2, capacity: {cpu: "8", memory: 16Gi}}]
pods:
- {name: p, count: 5, requests: {cpu: "1"}, tolerations: [{key: k, operator: Exists, effect: PreferNoSchedule}]}
`))
	if err != nil {
		t.Fatal(err)
	}
	r, err := Run(sc, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.SoftConstraints) != 1 || r.SoftConstraints[0].Pods != 5 || !strings.Contains(r.SoftConstraints[0].Constraint, "PreferNoSchedule") {
		t.Errorf("soft constraints %+v, want 5 pods without the PreferNoSchedule toleration", r.SoftConstraints)
	}
	if strings.Contains(logged.String(), "soft constraints") {
		t.Errorf("logged per pod:\n%s", logged.String())
	}
	var text bytes.Buffer
	r.WriteText(&text, false)
	if !strings.Contains(text.String(), "soft constraints scheduled without (schedq does not score them yet): spec.tolerations (PreferNoSchedule) (TaintToleration): 5 pods") {
		t.Errorf("report:\n%s", text.String())
	}
}
