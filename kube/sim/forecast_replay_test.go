package sim

import (
	"strings"
	"testing"
	"time"
)

// TestReplayStateWindowIsWhatWasSeen: early in a replay the recent
// arrivals span only the time replayed, not Replay.Window's hour, so a
// forecast that assumes arrivals repeats them at the rate seen: 20 pods
// a second from 2 s on are 20 a second, not 1,200 an hour spread over an
// hour's last minutes.
func TestReplayStateWindowIsWhatWasSeen(t *testing.T) {
	for _, tc := range []struct {
		name   string
		at     time.Duration
		window time.Duration
	}{
		{name: "before the hour", at: 3 * time.Second, window: 3 * time.Second},
		{name: "at the start", at: 0, window: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc, err := Parse([]byte(smallArrival))
			if err != nil {
				t.Fatal(err)
			}
			rp, err := NewReplay(sc)
			if err != nil {
				t.Fatal(err)
			}
			if err := rp.Until(tc.at); err != nil {
				t.Fatal(err)
			}
			st := rp.State()
			if st.Window != tc.window {
				t.Fatalf("window %v, want %v", st.Window, tc.window)
			}
			f, err := RunForecast(sc, st, ForecastOptions{Horizon: time.Minute, Arrivals: true})
			if err != nil {
				t.Fatal(err)
			}
			if tc.window > 0 && !strings.Contains(f.Arrivals, "in the last 3s") {
				t.Errorf("arrivals %q", f.Arrivals)
			}
		})
	}
}

// TestReplayEndsAtTheScenariosEnd: End names the replay's last instant
// and what sets it, and Until past it stops there, as its comment says,
// instead of running the scenario on past its duration (a state the
// scenario does not describe, stamped with the time asked).
func TestReplayEndsAtTheScenariosEnd(t *testing.T) {
	for _, tc := range []struct {
		name    string
		yaml    string
		until   time.Duration
		end     time.Duration
		because string
	}{
		{name: "its duration", yaml: smallArrival + "duration: 90s\n", until: 2 * time.Minute, end: 90 * time.Second, because: "the scenario's duration"},
		{name: "the default", yaml: smallArrival, until: time.Hour, end: 15 * time.Minute, because: "the default duration"},
		{name: "before the end", yaml: smallArrival + "duration: 90s\n", until: 80 * time.Second, end: 90 * time.Second, because: "the scenario's duration"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc, err := Parse([]byte(tc.yaml))
			if err != nil {
				t.Fatal(err)
			}
			rp, err := NewReplay(sc)
			if err != nil {
				t.Fatal(err)
			}
			end, why := rp.End()
			if end != tc.end || !strings.Contains(why, tc.because) {
				t.Errorf("End: %v, %q; want %v, %q", end, why, tc.end, tc.because)
			}
			if err := rp.Until(tc.until); err != nil {
				t.Fatal(err)
			}
			if got, want := rp.State().Now.Sub(rp.Epoch()), min(tc.until, tc.end); got != want {
				t.Errorf("state at %v after Until(%v), want %v", got, tc.until, want)
			}
		})
	}
}
