package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/schedq/schedq"
	"github.com/schedq/schedq/kube/sim"
)

// explainAnswer is /debug/queue/{namespace}/{name}'s answer: the queue's
// explanation, and the pod's predicted start when the scheduler forecasts
// (ForecastError says why there is none).
type explainAnswer struct {
	schedq.Explanation[types.NamespacedName]
	// PositionAt is when the explanation, its position in line with it,
	// was made: up to a second before the answer (see explanations).
	PositionAt time.Time `json:"positionAt"`
	// PositionAge is how old it was when answered.
	PositionAge    time.Duration `json:"positionAge"`
	PredictedStart *Prediction   `json:"predictedStart,omitempty"`
	ForecastError  string        `json:"forecastError,omitempty"`
}

// MarshalJSON writes the explanation's fields (schedq.Explanation has
// its own MarshalJSON, which an embedding struct would otherwise inherit,
// dropping the fields below) followed by the forecast's.
func (a explainAnswer) MarshalJSON() ([]byte, error) {
	x, err := json.Marshal(a.Explanation)
	if err != nil {
		return nil, err
	}
	f, err := json.Marshal(struct {
		PositionAt     time.Time     `json:"positionAt"`
		PositionAge    time.Duration `json:"positionAge"`
		PredictedStart *Prediction   `json:"predictedStart,omitempty"`
		ForecastError  string        `json:"forecastError,omitempty"`
	}{a.PositionAt, a.PositionAge, a.PredictedStart, a.ForecastError})
	if err != nil {
		return x, err
	}
	// Both are JSON objects: x's fields, then f's.
	return append(append(x[:len(x)-1:len(x)-1], ','), f[1:]...), nil
}

func (a explainAnswer) String() string {
	s := a.Explanation.String()
	if x := a.Explanation; x.Position != nil && x.Location != schedq.InActive {
		s = strings.Replace(s, fmt.Sprintf("%-22s %s\n", "position:", x.Position), fmt.Sprintf("%-22s %s\n", "position:", notActiveText(x)), 1)
	}
	if !a.PositionAt.IsZero() {
		s += fmt.Sprintf("%-22s %s, %v ago (one explanation serves the requests of a second while the pod stays where it is)\n", "explained at:", a.PositionAt.UTC().Format(time.RFC3339Nano), a.PositionAge.Round(time.Millisecond))
	}
	switch {
	case a.PredictedStart != nil:
		s += fmt.Sprintf("%-22s %s\n", "forecast:", a.PredictedStart)
	case a.ForecastError != "":
		s += fmt.Sprintf("%-22s %s\n", "forecast:", a.ForecastError)
	}
	return s
}

// notActiveText says where an item that is not in activeQ (backing off,
// parked, gated) would stand: the queue's Position counts the items ahead
// of it as if it were in activeQ, which "0 ahead of 1 in activeQ" would
// misstate as its being in line there.
func notActiveText(x schedq.Explanation[types.NamespacedName]) string {
	p := x.Position
	s := fmt.Sprintf("not in activeQ (%s); it would have %d of activeQ's %d ahead of it if it entered now (and %d backing off, %d parked, ahead in order)",
		x.Location, p.Ahead, p.Active, p.BackoffAhead, p.ParkedAhead)
	if p.Estimated {
		s += fmt.Sprintf("; next attempt in about %v (estimate)", p.EstimatedWait.Round(time.Millisecond))
	}
	return s
}

// predict returns key's prediction from the shared forecast, or why there
// is none.
func (f *forecaster) predict(ctx context.Context, key types.NamespacedName) (*Prediction, error) {
	lf, err := f.get(ctx)
	if err != nil {
		return nil, err
	}
	p, err := lf.of(key)
	if err != nil {
		return nil, fmt.Errorf("pod %s is not in the forecast of %s: it is not pending, or it arrived since (the next forecast is at most %v away)",
			key, lf.F.At.UTC().Format(time.RFC3339), f.ttl)
	}
	return p, nil
}

// serveForecast answers GET /debug/forecast/{namespace}/{name}: the pod's
// predicted start, 404 if it is not in the queue (saying so when it is
// held as a binding in doubt or apart with its group, as
// /debug/queue/{namespace}/{name} does), 503 with Retry-After (the
// forecast's TTL) if there is no forecast of it yet.
func serveForecast(f *forecaster, q queueView) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if err := checkQuery(r, "/debug/forecast/{namespace}/{name}", "format"); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		key := types.NamespacedName{Namespace: r.PathValue("namespace"), Name: r.PathValue("name")}
		// Whether the pod is queued is Get's O(1) answer, not Explain's,
		// whose position in line holds the queue's lock for O(queued
		// pods) and is not part of this answer. Explain (O(1) for a pod
		// not queued) says why it is not.
		var err error
		if _, _, queued := q.Get(key); !queued {
			_, err = q.Explain(key)
		}
		if errors.Is(err, schedq.ErrNotFound) {
			// As /debug/queue/{namespace}/{name} answers: a binding in
			// doubt or a member held apart says why it is not in the
			// queue, rather than "unknown, bound, or not ours".
			msg, held := notInQueueMessage(key, err)
			if held {
				msg += "; a forecast is only of pods in the queue"
			} else {
				msg = fmt.Sprintf("pod %s is not pending in schedq's queue (unknown, bound, or not ours): a forecast is only of pending pods", key)
			}
			http.Error(w, msg, http.StatusNotFound)
			return
		}
		p, err := f.predict(r.Context(), key)
		if err != nil {
			// The pod is pending: the forecast is under way or failed,
			// there are no nodes, or the pod arrived after it.
			w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(f.ttl.Seconds()))))
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		write(w, r, p, func() string { return p.String() + "\n" })
	}
}

// pendingAnswer is /debug/queue?order=pop's answer when the scheduler
// forecasts: the page, each item's predicted start (Starts, in the
// order of Items), and the forecast's basis.
type pendingAnswer struct {
	schedq.PendingPage[types.NamespacedName]
	Starts   []itemStart `json:"starts"`
	Forecast *basis      `json:"forecast,omitempty"`
	// ForecastError says why there are no predicted starts.
	ForecastError string `json:"forecastError,omitempty"`
}

// itemStart is one listed item's predicted start.
type itemStart struct {
	Key    string        `json:"key"`
	Starts bool          `json:"starts"`
	Start  time.Time     `json:"start,omitzero"`
	Wait   time.Duration `json:"wait,omitempty"`
	Gang   string        `json:"gang,omitempty"`
	// Missing says why the item has no forecast (it arrived since).
	Missing string `json:"missing,omitempty"`
}

// basis is what a whole forecast rests on.
type basis struct {
	At       time.Time         `json:"at"`
	Horizon  time.Duration     `json:"horizon"`
	Arrivals string            `json:"arrivals"`
	Ends     []sim.SourceCount `json:"ends"`
	Unknown  int               `json:"unknown"`
	Copy     CopyStats         `json:"copy"`
	Took     time.Duration     `json:"took"`
	// Waited is how much of Took the forecast yielded to scheduling.
	Waited time.Duration `json:"waited,omitempty"`
}

func withStarts(ctx context.Context, p schedq.PendingPage[types.NamespacedName], f *forecaster) pendingAnswer {
	a := pendingAnswer{PendingPage: p, Starts: []itemStart{}}
	lf, err := f.get(ctx)
	if err != nil {
		a.ForecastError = err.Error()
		return a
	}
	a.Forecast = &basis{At: lf.F.At, Horizon: lf.F.Horizon, Arrivals: lf.F.Arrivals, Ends: lf.F.Ends, Unknown: lf.F.Unknown, Copy: lf.Copy, Took: lf.Took, Waited: lf.Waited}
	for _, it := range p.Items {
		s := itemStart{Key: it.Key.String()}
		if pf, err := lf.F.Of(it.Key); err != nil {
			s.Missing = "not yet forecast"
		} else {
			s.Starts, s.Start, s.Wait, s.Gang = pf.Starts, pf.Start, pf.Wait, pf.Gang
		}
		a.Starts = append(a.Starts, s)
	}
	return a
}

// String is the page's text with each item's predicted start at the end
// of its line, and the forecast's basis below.
func (a pendingAnswer) String() string {
	lines := strings.SplitAfter(a.PendingPage.String(), "\n")
	var b strings.Builder
	for i, l := range lines {
		if i >= 1 && i-1 < len(a.Starts) {
			l = strings.TrimSuffix(l, "\n") + " | start: " + a.Starts[i-1].short(a.Forecast) + "\n"
		}
		b.WriteString(l)
	}
	switch {
	case a.ForecastError != "":
		fmt.Fprintf(&b, "no forecast: %s\n", a.ForecastError)
	case a.Forecast != nil:
		fmt.Fprintf(&b, "forecast of %s, horizon %v; running pods' ends by %s; %d running until unknown; new arrivals: %s\n",
			a.Forecast.At.UTC().Format(time.RFC3339), a.Forecast.Horizon, basisText(a.Forecast.Ends), a.Forecast.Unknown, a.Forecast.Arrivals)
	}
	return b.String()
}

func (s itemStart) short(b *basis) string {
	switch {
	case s.Missing != "":
		return s.Missing
	case !s.Starts:
		return fmt.Sprintf("not within %v", b.Horizon)
	case s.Gang != "":
		return fmt.Sprintf("in %v (gang %s)", s.Wait.Round(time.Second), s.Gang)
	}
	return fmt.Sprintf("in %v", s.Wait.Round(time.Second))
}
