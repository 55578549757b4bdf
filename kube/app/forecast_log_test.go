package app

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
)

// TestForecastLogsNothing: a forecast with a pod waiting for a missing
// PodGroup does not log for it (the live scheduler forecasts every few
// seconds; its own handlers already logged it once).
func TestForecastLogsNothing(t *testing.T) {
	var logged bytes.Buffer
	prev := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&logged, nil)))
	defer slog.SetDefault(prev)
	l := newLiveCluster(t, 1)
	name := "nope"
	p := l.pod("m", "1", "1h")
	p.Spec.SchedulingGroup = &v1.PodSchedulingGroup{PodGroupName: &name}
	l.pending(p)
	srv, _ := l.server()
	if code, body := get(t, srv.URL+"/debug/forecast/default/m?format=text"); code != 200 || !strings.Contains(body, "not within the horizon") {
		t.Errorf("HTTP %d %s", code, body)
	}
	if strings.Contains(logged.String(), "PodGroup") {
		t.Errorf("the forecast logged:\n%s", logged.String())
	}
}
