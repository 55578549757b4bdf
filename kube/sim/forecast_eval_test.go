package sim

import (
	"bytes"
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
// SCHEDQ_FORECAST_HORIZON sets each forecast's horizon (default 24h) and
// SCHEDQ_FORECAST_EVERY how often the replay is forked (default 1h);
// SCHEDQ_FORECAST_FROM splits the trace at an instant of its own time, a
// duration or "median" (the pods' median creation time), and replays
// only the pods created from then on; SCHEDQ_FORECAST_WARM=1, with it,
// starts the history with the runs before the split (EvalOptions.Warm);
// SCHEDQ_FORECAST_ROWS=main measures only the main methods, =split only
// the rows that split the history's error into parts (EvalOptions.SplitRows),
// =percentiles only the percentiles of the history's ensemble among them,
// =age only those shuffled by class and age, =apart only the history
// stratified apart;
// SCHEDQ_FORECAST_SEED seeds the stratified, Monte Carlo and ensemble
// methods (EvalOptions.Seed, default 1);
// SCHEDQ_FORECAST_PAIRS names a file to write every forecast scored to,
// as CSV (EvalReport.WritePairs).
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
	every := time.Hour
	if v := os.Getenv("SCHEDQ_FORECAST_EVERY"); v != "" {
		if every, err = time.ParseDuration(v); err != nil || every <= 0 {
			t.Fatalf("SCHEDQ_FORECAST_EVERY: %q is not a positive duration", v)
		}
	}
	from, err := evalFrom(dir, os.Getenv("SCHEDQ_FORECAST_FROM"))
	if err != nil {
		t.Fatal(err)
	}
	var seed uint64
	if v := os.Getenv("SCHEDQ_FORECAST_SEED"); v != "" {
		if seed, err = strconv.ParseUint(v, 10, 64); err != nil || seed == 0 {
			t.Fatalf("SCHEDQ_FORECAST_SEED: %q is not a positive integer", v)
		}
	}
	rows := os.Getenv("SCHEDQ_FORECAST_ROWS")
	if rows != "" && rows != "main" && rows != "split" && rows != "percentiles" && rows != "age" && rows != "apart" {
		t.Fatalf("SCHEDQ_FORECAST_ROWS: %q is not main, split, percentiles, age or apart", rows)
	}
	rep, err := Eval(EvalOptions{Dir: dir, Speed: speed, Every: every, NodeEvery: nodes, Horizon: horizon, GPUModel: os.Getenv("SCHEDQ_FORECAST_GPU_MODEL"),
		Arrivals: os.Getenv("SCHEDQ_FORECAST_ARRIVALS") == "1", From: from, Warm: os.Getenv("SCHEDQ_FORECAST_WARM") == "1", MainRows: rows == "main", SplitRows: rows == "split" || rows == "percentiles" || rows == "age" || rows == "apart",
		PercentileRows: rows == "percentiles", AgeRows: rows == "age", ApartRows: rows == "apart", Seed: seed})
	if err != nil {
		t.Fatal(err)
	}
	rep.Write(t.Output())
	if path := os.Getenv("SCHEDQ_FORECAST_PAIRS"); path != "" {
		var b bytes.Buffer
		if err := rep.WritePairs(&b); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
			t.Fatalf("SCHEDQ_FORECAST_PAIRS: %v", err)
		}
	}
}

// evalFrom reads SCHEDQ_FORECAST_FROM: empty (no split), "median" or a
// duration.
func evalFrom(dir, v string) (time.Duration, error) {
	switch v {
	case "":
		return 0, nil
	case "median":
		return MedianCreation(dir)
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return 0, fmt.Errorf("SCHEDQ_FORECAST_FROM: %q is not median or a duration", v)
	}
	return d, nil
}
