package sim

import (
	"fmt"
	"reflect"
	"testing"
	"time"
)

// TestForecastBasePanicInRun: a run on a base that panics, while it
// builds or while it runs, gives the base back and leaves no trace: the
// next run on the base neither blocks (concurrently, on its own
// goroutine, bounded by a deadline) nor sees the panicked run's
// bindings, and answers as a run that builds the cluster itself.
func TestForecastBasePanicInRun(t *testing.T) {
	st := baseState(40)
	sc := &Scenario{Name: "base", Seed: 1}
	o := ForecastOptions{Horizon: 12 * time.Hour}
	total := 0
	want, err := RunForecast(sc, st, o)
	if err != nil {
		t.Fatal(err)
	}
	counted := o
	counted.Pace = func() { total++ }
	if counted.Base, err = NewForecastBase(st); err != nil {
		t.Fatal(err)
	}
	if _, err := RunForecast(sc, st, counted); err != nil {
		t.Fatal(err)
	}
	// The pace is called before each node is built, then at each
	// operation of the run: the first call panics while the run builds,
	// the last one at the run's last operation, after its bindings.
	for _, at := range []int{1, total} {
		t.Run(fmt.Sprintf("pace call %d", at), func(t *testing.T) {
			base, err := NewForecastBase(st)
			if err != nil {
				t.Fatal(err)
			}
			calls := 0
			bad := o
			bad.Base = base
			bad.Pace = func() {
				if calls++; calls == at {
					panic("boom")
				}
			}
			func() {
				defer func() {
					if r := recover(); r != "boom" {
						t.Fatalf("recovered %v, want the pace's panic", r)
					}
				}()
				RunForecast(sc, st, bad)
			}()
			if calls < at {
				t.Fatalf("the pace was called %d times, never the %d-th: the test no longer panics", calls, at)
			}
			next := o
			next.Base = base
			done := make(chan *Forecast, 1)
			go func() {
				f, err := RunForecast(sc, st, next)
				if err != nil {
					t.Error(err)
				}
				done <- f
			}()
			select {
			case f := <-done:
				if f != nil && !reflect.DeepEqual(f, want) {
					t.Errorf("the run after the panic differs:\n%s\nwant\n%s", forecastText(f), forecastText(want))
				}
			case <-time.After(30 * time.Second):
				t.Fatal("the run after the panic still waits for the base after 30s: the panicked run kept it")
			}
		})
	}
}
