package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"mime"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/schedq/schedq/kube/sim"
)

// whatIfAnswer is POST /debug/whatif's answer.
type whatIfAnswer struct {
	*sim.WhatIf
	At      time.Time     `json:"at"`
	Horizon time.Duration `json:"horizon"`
}

// String is the answer's text (sim.WhatIf.WriteText).
func (a whatIfAnswer) String() string {
	var b strings.Builder
	a.WriteText(&b, a.At, a.Horizon)
	return b.String()
}

// serveWhatIf answers POST /debug/whatif: the body holds Pods and
// PodGroups as they would be created (YAML or JSON, at most
// sim.MaxWhatIfBytes and sim.MaxWhatIfObjects; another Content-Type than
// manifestTypes is a 415), ?horizon= how far to look
// (default the forecaster's; positive, at most sim.MaxHorizon). It adds
// them to a copy of the state of the last forecast and answers whether
// each fits now and where, whom it would preempt, its predicted start and
// how the pending pods' forecasts change. Nothing is changed. One what-if
// runs at a time; another gets 429. A what-if follows its request's
// context: when the client goes away, its wait for a forecast ends, and
// its run stops at its next step (and gives the forecast's cluster back
// as any run does), so the next what-if need not wait for an answer no
// one reads.
func serveWhatIf(f *forecaster) http.HandlerFunc {
	busy := make(chan struct{}, 1)
	return func(w http.ResponseWriter, r *http.Request) {
		if err := checkQuery(r, "/debug/whatif", "horizon", "format"); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if err := checkManifestType(r.Header.Get("Content-Type")); err != nil {
			http.Error(w, err.Error(), http.StatusUnsupportedMediaType)
			return
		}
		o := f.o
		if v := r.URL.Query().Get("horizon"); v != "" {
			d, err := time.ParseDuration(v)
			if err != nil {
				http.Error(w, fmt.Sprintf("horizon %q: not a duration such as 2h", v), http.StatusBadRequest)
				return
			}
			o.Horizon = d
		}
		if o.Horizon <= 0 || o.Horizon > sim.MaxHorizon {
			http.Error(w, fmt.Sprintf("horizon %v: want more than 0 and at most %v", o.Horizon, sim.MaxHorizon), http.StatusBadRequest)
			return
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, sim.MaxWhatIfBytes))
		var tooLarge *http.MaxBytesError
		switch {
		case errors.As(err, &tooLarge):
			http.Error(w, fmt.Sprintf("the manifests are larger than the limit of %d bytes", sim.MaxWhatIfBytes), http.StatusRequestEntityTooLarge)
			return
		case err != nil:
			http.Error(w, fmt.Sprintf("reading the manifests: %v", err), http.StatusBadRequest)
			return
		}
		in, err := sim.ParseWhatIf(body)
		if err != nil {
			http.Error(w, "manifests: "+err.Error(), http.StatusBadRequest)
			return
		}
		in.Profiles = []string{f.schedulerName} // a pod of another scheduler is refused
		if f.profiles != nil {
			in.Profiles = f.profiles // each pod under its profile's name
		}
		// What the manifests say wrong alone, before waiting for a
		// forecast, and whether or not there is one.
		if err := in.Validate(); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		select {
		case busy <- struct{}{}:
		default:
			http.Error(w, "another what-if is running; try again when it is done", http.StatusTooManyRequests)
			return
		}
		a, err := f.whatIf(r.Context(), in, o) // recovers a panic of the run
		<-busy                                 // before writing: a slow reader holds no slot
		if err != nil {
			code := whatIfStatus(err)
			if code == http.StatusServiceUnavailable {
				w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(f.ttl.Seconds()))))
			}
			http.Error(w, err.Error(), code)
			return
		}
		write(w, r, a, a.String)
	}
}

// manifestTypes are the Content-Types a what-if's body may have besides
// none: YAML and JSON, text, and curl --data-binary's form type (the body
// is parsed as YAML, of which JSON is a part, whatever it says).
var manifestTypes = []string{"application/yaml", "application/x-yaml", "text/yaml", "application/json", "text/plain", "application/x-www-form-urlencoded"}

// checkManifestType refuses a body whose Content-Type says it is not
// manifests, such as a form upload's multipart/form-data.
func checkManifestType(ct string) error {
	if ct == "" {
		return nil
	}
	if t, _, err := mime.ParseMediaType(ct); err == nil && slices.Contains(manifestTypes, t) {
		return nil
	}
	return fmt.Errorf("Content-Type %q: want application/yaml or application/json (or %s)", ct, strings.Join(manifestTypes[2:], ", "))
}

// whatIf runs in against the last forecast's state. A panic in the run
// fails this what-if with an error that says so (500), not the process:
// the run has given the forecast's base back (see sim.ForecastBase).
// Once ctx is done the wait for a forecast and the run end with ctx's
// error.
func (f *forecaster) whatIf(ctx context.Context, in *sim.WhatIfInput, o sim.ForecastOptions) (a whatIfAnswer, err error) {
	defer func() {
		if r := recover(); r != nil {
			a, err = whatIfAnswer{}, fmt.Errorf("what-if: the run panicked: %v", r)
		}
	}()
	lf, err := f.get(ctx)
	if err != nil && ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		return whatIfAnswer{}, err // no one waits for it
	}
	if err != nil {
		return whatIfAnswer{}, noForecast{err}
	}
	var x *sim.WhatIf
	o.History, o.Base, o.Context = lf.O.History, lf.O.Base, ctx
	if o.Horizon == lf.O.Horizon {
		x, err = sim.RunWhatIfFrom(f.sc, lf.St, lf.F, in, o)
	} else {
		x, err = sim.RunWhatIf(f.sc, lf.St, in, o)
	}
	if err != nil {
		return whatIfAnswer{}, err
	}
	return whatIfAnswer{WhatIf: x, At: lf.F.At, Horizon: o.Horizon}, nil
}

// noForecast is the error of a what-if asked while there is no forecast
// to run it from: the first is under way, or the last failed (the next,
// a TTL later, may not).
type noForecast struct{ err error }

func (e noForecast) Error() string { return e.err.Error() }
func (e noForecast) Unwrap() error { return e.err }

// whatIfStatus: 503 for a request cancelled, without nodes or without a forecast (the first under
// way, or the last failed: as /debug/forecast answers), 500 for a run
// that failed, 400 for input that names what does not exist.
func whatIfStatus(err error) int {
	msg := err.Error()
	switch {
	case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
		return http.StatusServiceUnavailable // the client went away: no one reads it
	case errors.As(err, new(*sim.BadWhatIfError)):
		return http.StatusBadRequest
	case errors.Is(err, sim.ErrNoNodes) || errors.As(err, new(noForecast)):
		return http.StatusServiceUnavailable
	case strings.HasPrefix(msg, "what-if:") || strings.HasPrefix(msg, "forecast:"):
		return http.StatusInternalServerError
	}
	return http.StatusBadRequest
}
