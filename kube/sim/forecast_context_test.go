package sim

import (
	"context"
	"errors"
	"reflect"
	"sync/atomic"
	"testing"
	"time"
)

// stepCtx is a context whose Err is nil for its first n calls and
// context.Canceled after: a caller that goes away at a given step.
type stepCtx struct {
	context.Context
	left, calls atomic.Int64
}

func (c *stepCtx) Err() error {
	c.calls.Add(1)
	if c.left.Add(-1) >= 0 {
		return nil
	}
	return context.Canceled
}

// TestForecastContextEndsTheRun: a run whose Context is done ends at its
// next step with the context's error, and gives its base back rolled
// back, not broken: the base is not built again, and the next run on it
// answers as a run that builds the cluster itself.
func TestForecastContextEndsTheRun(t *testing.T) {
	st := baseState(40)
	sc := &Scenario{Name: "base", Seed: 1}
	o := ForecastOptions{Horizon: 12 * time.Hour}
	want, err := RunForecast(sc, st, o)
	if err != nil {
		t.Fatal(err)
	}
	full := &stepCtx{Context: context.Background()}
	full.left.Store(1 << 40)
	counted := o
	counted.Context = full
	if _, err := RunForecast(sc, st, counted); err != nil {
		t.Fatal(err)
	}
	steps := full.calls.Load()
	if steps < 4 {
		t.Fatalf("the run took %d steps: too few to end one midway", steps)
	}
	for _, tc := range []struct {
		name string
		at   int64 // steps before the context is done
	}{
		{name: "done before the run", at: 0},
		{name: "done midway", at: steps / 2},
		{name: "done at the last step", at: steps - 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base, err := NewForecastBase(st)
			if err != nil {
				t.Fatal(err)
			}
			built := base.cache
			ctx := &stepCtx{Context: context.Background()}
			ctx.left.Store(tc.at)
			cut := o
			cut.Base, cut.Context = base, ctx
			if _, err := RunForecast(sc, st, cut); !errors.Is(err, context.Canceled) {
				t.Fatalf("RunForecast: %v, want context.Canceled", err)
			}
			if n := ctx.calls.Load(); n != tc.at+1 {
				t.Errorf("the context was asked %d times, want %d: the run went on after it was done", n, tc.at+1)
			}
			if base.cache != built {
				t.Error("the base was given back broken: the next run builds the cluster again")
			}
			next := o
			next.Base = base
			f, err := RunForecast(sc, st, next)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(f, want) {
				t.Errorf("the run after the cancelled one differs:\n%s\nwant\n%s", forecastText(f), forecastText(want))
			}
		})
	}
}
