package sim

import (
	"fmt"
	"os"
	"strconv"
	"sync/atomic"
	"testing"
	"time"
)

const accuracySkip = "TestForecastAccuracy skipped: set SCHEDQ_FORECAST_EVAL to the Alibaba GPU trace's directory to measure the forecasts' accuracy"

// accuracySkipped is set when TestForecastAccuracy skipped, for TestMain.
var accuracySkipped atomic.Bool

// TestMain says on stderr, after the tests, that the accuracy was not
// measured: a t.Skip's message shows only with -v. (The go command still
// hides the output of a passing package when given package paths; it
// shows it for go test in the package's directory, with -v, or on a
// failure.)
func TestMain(m *testing.M) {
	code := m.Run()
	if accuracySkipped.Load() {
		fmt.Fprintln(os.Stderr, accuracySkip)
	}
	os.Exit(code)
}

// TestForecastAccuracy measures the forecast on the Alibaba GPU trace. It
// is long, so it runs only when SCHEDQ_FORECAST_EVAL names the trace's
// directory:
//
//	SCHEDQ_FORECAST_EVAL=/work/shared/traces/alibaba-gpu-v2023 go test -run TestForecastAccuracy ./kube/sim -v
//
// SCHEDQ_FORECAST_SPEED sets the trace's speed (default 1000) and
// SCHEDQ_FORECAST_NODES keeps every n-th node (default 10);
// SCHEDQ_FORECAST_GPU_MODEL sets the replay's GPU model (default device);
// SCHEDQ_FORECAST_ARRIVALS=1 has the forecasts assume the recent arrivals;
// SCHEDQ_FORECAST_HORIZON sets each forecast's horizon (default 24h).
func TestForecastAccuracy(t *testing.T) {
	dir := os.Getenv("SCHEDQ_FORECAST_EVAL")
	if dir == "" {
		accuracySkipped.Store(true)
		t.Skip(accuracySkip)
	}
	speed, nodes := 1000.0, 10
	var err error
	if v := os.Getenv("SCHEDQ_FORECAST_SPEED"); v != "" {
		if speed, err = strconv.ParseFloat(v, 64); err != nil {
			t.Fatal(err)
		}
	}
	if v := os.Getenv("SCHEDQ_FORECAST_NODES"); v != "" {
		if nodes, err = strconv.Atoi(v); err != nil {
			t.Fatal(err)
		}
	}
	var horizon time.Duration
	if v := os.Getenv("SCHEDQ_FORECAST_HORIZON"); v != "" {
		if horizon, err = time.ParseDuration(v); err != nil {
			t.Fatal(err)
		}
	}
	rep, err := Eval(EvalOptions{Dir: dir, Speed: speed, Every: time.Hour, NodeEvery: nodes, Horizon: horizon, GPUModel: os.Getenv("SCHEDQ_FORECAST_GPU_MODEL"),
		Arrivals: os.Getenv("SCHEDQ_FORECAST_ARRIVALS") == "1"})
	if err != nil {
		t.Fatal(err)
	}
	rep.Write(t.Output())
}
