package sim

import (
	"cmp"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/schedq/schedq/kube/framework"
)

// EvalOptions shape a measurement of forecast accuracy on a trace.
type EvalOptions struct {
	Dir     string        // the Alibaba GPU trace's directory
	Speed   float64       // TraceSpec.Speed
	Every   time.Duration // how often the replay is forked (default 1h)
	Horizon time.Duration // each forecast's horizon (default 24h)
	// Label files history by this label (default the trace's qos label).
	Label string
	// Instants caps how many forks are made (0: all).
	Instants int
	// NodeEvery keeps only every NodeEvery-th node of the trace (0 or 1:
	// all), to bring the load up where compressing arrivals cannot.
	NodeEvery int
	// MonteCarlo is how many runs the Monte Carlo method makes (default 5).
	MonteCarlo int
	// Ensemble is how many runs the ensemble methods make (default 9;
	// runEnsemble).
	Ensemble int
	// Seed seeds the stratified, Monte Carlo and ensemble methods
	// (default 1).
	Seed uint64
	// GPUModel is the replay's Scheduler.GPUModel (default device: the
	// published accuracy figures were measured on it, and it replays in
	// about half of DRA's CPU).
	GPUModel string
	// Arrivals, if true, has every forecast assume the recent arrivals
	// (ForecastOptions.Arrivals). Forecasts with arrivals run much
	// longer, so only the methods mainMethods lists are measured.
	Arrivals bool
	// From, if above zero, splits the trace at that instant of its own
	// time (whole seconds from its start): only the pods created from
	// then on are replayed, from the start of the replay, and
	// evaluated.
	From time.Duration
	// Warm, with From, starts every history-based forecast's history
	// with what a scheduler running before From would have learnt by
	// then (warmRuns); without it the history starts empty at From.
	Warm bool
	// MainRows measures only the methods mainMethods lists.
	MainRows bool
	// SplitRows measures only the rows that split the history's error
	// into parts (splitWaits) and those splitMethods lists.
	SplitRows bool
	// PercentileRows, with SplitRows, measures of the split rows only
	// the percentiles of the history's ensemble.
	PercentileRows bool
	// AgeRows, with SplitRows, measures of the split rows only those
	// shuffled by class and age.
	AgeRows bool
	// ApartRows, with SplitRows, measures of the split rows only the
	// history stratified apart (stratifiedApart).
	ApartRows bool
}

// EvalMethod is one way of predicting starts.
type EvalMethod struct {
	Name string
	// waits are (predicted, actual) remaining waits; predicted is +Inf
	// when the method gave no start.
	pairs [][2]float64
	// ranges, for a method that gives one, are the (low, high) predicted
	// waits, by pair; runs and nominal are how many runs gave them and
	// the share of further runs' waits that would fall in them.
	ranges  [][2]float64
	runs    int
	nominal float64
	// pods and forks are each pair's pod and fork instant (from the
	// replay's start), for WritePairs.
	pods  []*v1.Pod
	forks []time.Duration
	// nodes, for a method that names them, are each pair's predicted
	// and actual node ("" when not started in the forecast).
	nodes [][2]string
}

// EvalReport is the measured accuracy of every method.
type EvalReport struct {
	Options   EvalOptions
	Instants  int
	Forecasts int // pending pods forecast, over all instants
	Started   int // of which started later in the replay
	Counted   int // of which waited at least a minute
	// MedianWait is the median actual wait, from the fork, of the counted.
	MedianWait time.Duration
	Methods    []*EvalMethod
	Wall       time.Duration // wall time of the forecasts alone
	// WarmRuns is how many runs the warm history starts with, WarmGoing
	// how many of them were still going at the split.
	WarmRuns, WarmGoing int
	// Deciles and NoEstimate are the calibration of the history by the
	// three labels over the running pods of every fork that found pods
	// pending (see calibration).
	Deciles    [10]int
	NoEstimate int
}

// pending prediction of one fork, by method, for one pod.
type evalFork struct {
	now   time.Time
	uids  []types.UID
	preds [][]float64 // by method, by pod: predicted wait in seconds, +Inf if none
	// nodes are the predicted nodes, by method, by pod, of the methods
	// that record them (nil otherwise).
	nodes [][]string
	// ranges are the (low, high) waits of the methods that give one, by
	// method, by pod.
	ranges map[int][][2]float64
	// deciles and none are the three labels' calibration (calibration).
	deciles [10]int
	none    int
}

// evalMethods names the methods in the order the table lists them.
var evalMethods = []string{
	"forecast, trace's true runtimes",
	"forecast, history by label, median of finished runs",
	"forecast, history by owner+namespace, median of finished runs",
	"forecast, history by label, Kaplan–Meier, median",
	"forecast, history by label, Kaplan–Meier, stratified quantiles (default)",
	"forecast, history by labels qos, GPU request, requests, Kaplan–Meier, stratified quantiles",
	"forecast, history by label, Kaplan–Meier, exponential tail, stratified quantiles",
	"forecast, history by labels qos, GPU request, requests, Kaplan–Meier, exponential tail, stratified quantiles",
	"forecast, history by labels qos, GPU request, Kaplan–Meier, stratified quantiles",
	"forecast, history by label, Kaplan–Meier, Monte Carlo median",
	"simple: Explain's estimate of the next attempt",
	"simple: rank ÷ recent start rate",
	"forecast, history by labels qos, GPU request, requests, Kaplan–Meier, ensemble median",
	"forecast, history by labels qos, GPU request, requests, Kaplan–Meier, exponential tail, ensemble median",
	"split: running pods' true runtimes, pending pods' from history (three labels)",
	"split: running pods' runtimes from history (three labels), pending pods' true",
	"split: true remaining runtimes shuffled within each class (right times, random order)",
	"split: true remaining runtimes shuffled within each class and node (each node's ends right, which pod wrong)",
	"split: history's stratified quantiles in the true order within each class (history's times, right order)",
	"split: median of an ensemble, each run's true remaining runtimes shuffled within each class",
	"split: history (three labels) ensemble, 20th percentile of its runs' waits",
	"split: history (three labels) ensemble, 30th percentile",
	"split: history (three labels) ensemble, 40th percentile",
	"split: history (three labels) ensemble, 50th percentile (the ensemble median)",
	"split: history (three labels) ensemble, 60th percentile",
	"split: history (three labels) ensemble, 70th percentile",
	"split: history (three labels) ensemble, 80th percentile",
	"split: true remaining runtimes shuffled within each class and age (elapsed within a power of two)",
	"split: median of an ensemble, each run's true remaining runtimes shuffled within each class and age",
	"history (three labels), the running and the pending pods stratified apart",
}

// mainMethods are the indices in evalMethods of the methods measured
// with arrivals assumed or MainRows: the true runtimes, the default
// history, the two finer classes and the simple estimates (which do not
// depend on arrivals).
var mainMethods = []int{0, 4, 5, 8, 10, 11}

// Eval replays the trace, forks it every Every, forecasts every pending
// pod with each method and compares with the start the pod gets later in
// the same replay.
func Eval(o EvalOptions) (*EvalReport, error) {
	o.Every, o.Horizon, o.Label = cmp.Or(o.Every, time.Hour), cmp.Or(o.Horizon, 24*time.Hour), cmp.Or(o.Label, LabelQoS)
	o.MonteCarlo, o.Seed = cmp.Or(o.MonteCarlo, 5), cmp.Or(o.Seed, 1)
	o.Ensemble = cmp.Or(o.Ensemble, 9)
	if err := validateEnsembleRuns(o.MonteCarlo); err != nil {
		return nil, fmt.Errorf("forecast eval: EvalOptions.MonteCarlo: %w", err)
	}
	if err := validateEnsembleRuns(o.Ensemble); err != nil {
		return nil, fmt.Errorf("forecast eval: EvalOptions.Ensemble: %w", err)
	}
	if o.From < 0 {
		return nil, fmt.Errorf("forecast eval: the trace's split (EvalOptions.From) %v is before its start", o.From)
	}
	if o.Every < 0 || o.Horizon < 0 {
		return nil, fmt.Errorf("forecast eval: the forks' interval (EvalOptions.Every) %v and the horizon (EvalOptions.Horizon) %v must be positive", o.Every, o.Horizon)
	}
	if o.Warm && o.From == 0 {
		return nil, errors.New("forecast eval: a warm history needs a split of the trace after its start (EvalOptions.From)")
	}
	warm, err := evalWarm(o)
	if err != nil {
		return nil, err
	}
	sc := &Scenario{Name: "forecast-eval", Seed: 1, Trace: &TraceSpec{Format: TraceAlibabaGPU, Dir: o.Dir, Speed: o.Speed, from: int64(o.From / time.Second)}}
	sc.Scheduler.GPUModel = cmp.Or(o.GPUModel, GPUModelDevice)
	if err := sc.Validate(); err != nil {
		return nil, err
	}
	rp, err := NewReplay(sc)
	if err != nil {
		return nil, err
	}
	if o.NodeEvery > 1 {
		for i, name := range slices.Clone(rp.s.cl.nodeGroups[traceGroup]) {
			if i%o.NodeEvery != 0 {
				rp.s.removeNode(name)
			}
		}
	}
	rep := &EvalReport{Options: o, WarmRuns: len(warm)}
	for _, r := range warm {
		if r.going {
			rep.WarmGoing++
		}
	}
	var forks []*evalFork
	var ferr error
	span := rp.s.end.Sub(epoch)
	for k := 1; time.Duration(k)*o.Every < span && (o.Instants == 0 || k <= o.Instants); k++ {
		rp.At(time.Duration(k)*o.Every, func(st *ForecastState) {
			if len(st.Pending) == 0 {
				return
			}
			t0 := time.Now()
			f, err := evalFork1(sc, rp, st, o, warm)
			rep.Wall += time.Since(t0)
			if err != nil && ferr == nil {
				ferr = err
			}
			forks = append(forks, f)
		})
	}
	if err := rp.Run(); err != nil {
		return nil, err
	}
	if ferr != nil {
		return nil, ferr
	}
	rep.score(rp, forks)
	return rep, nil
}

// evalFork1 predicts every pending pod's wait with every method.
func evalFork1(sc *Scenario, rp *Replay, st *ForecastState, o EvalOptions, warm []warmRun) (*evalFork, error) {
	f := &evalFork{now: st.Now}
	for _, p := range st.Pending {
		f.uids = append(f.uids, p.UID)
	}
	history := func(labels ...string) *History {
		h := rp.History(labels...)
		seed(h, warm)
		return h
	}
	fine := []string{o.Label, LabelGPURequest, LabelRequests}
	hs := make([]*History, 9)
	for i, labels := range [][]string{{o.Label}, {""}, {o.Label}, {o.Label}, fine, {o.Label}, fine, fine[:2]} {
		hs[i+1] = history(labels...)
		hs[i+1].Seed = o.Seed
	}
	f.deciles, f.none = calibration(hs[5], st, rp.Known)
	short := o.Arrivals || o.MainRows || o.SplitRows
	hs[1].Method, hs[1].Spread = MedianFinished, SpreadMedian
	hs[2].Method, hs[2].Spread = MedianFinished, SpreadMedian
	hs[3].Spread = SpreadMedian
	hs[6].Tail, hs[7].Tail = TailExponential, TailExponential
	var hsNodes [][]string
	for i, h := range hs {
		if o.SplitRows && !slices.Contains(splitMethods, i) || short && !o.SplitRows && !slices.Contains(mainMethods, i) {
			f.preds = append(f.preds, nil)
			hsNodes = append(hsNodes, nil)
			continue
		}
		fo := ForecastOptions{Horizon: o.Horizon, History: h, Arrivals: o.Arrivals}
		if h == nil {
			fo.Known = rp.Known
		}
		w, n, err := forecastWaitsNodes(sc, st, fo)
		if err != nil {
			return nil, err
		}
		f.preds = append(f.preds, w)
		hsNodes = append(hsNodes, n)
	}
	var mc []float64
	f.ranges = map[int][][2]float64{}
	if !short {
		var err error
		if mc, f.ranges[evalMonteCarlo], err = monteCarloWaits(sc, st, history(o.Label), o); err != nil {
			return nil, err
		}
	}
	f.preds = append(f.preds, mc, rp.explainWaits(st), rp.rankWaits(st))
	for _, tail := range []HistoryTail{TailLongest, TailExponential} {
		if short {
			f.preds = append(f.preds, nil)
			continue
		}
		h := history(fine...)
		h.Seed, h.Tail = o.Seed, tail
		w, r, err := ensembleWaits(sc, st, ForecastOptions{Horizon: o.Horizon, History: h}, o.Ensemble)
		if err != nil {
			return nil, err
		}
		f.ranges[len(f.preds)] = r
		f.preds = append(f.preds, w)
	}
	f.nodes = make([][]string, len(f.preds))
	copy(f.nodes, hsNodes)
	if o.SplitRows {
		h := history(fine...)
		h.Seed = o.Seed
		w, n, err := splitWaits(sc, st, o, h, rp.Known)
		if err != nil {
			return nil, err
		}
		f.preds, f.nodes = append(f.preds, w...), append(f.nodes, n...)
	}
	return f, nil
}

// forecastWaitsNodes runs one forecast and returns each pending pod's
// predicted wait in seconds, +Inf if it does not start, and its
// predicted node ("" if it does not start).
func forecastWaitsNodes(sc *Scenario, st *ForecastState, fo ForecastOptions) ([]float64, []string, error) {
	fc, err := RunForecast(sc, st, fo)
	if err != nil {
		return nil, nil, err
	}
	w, n := make([]float64, len(fc.Pods)), make([]string, len(fc.Pods))
	for i, pf := range fc.Pods {
		w[i] = math.Inf(1)
		if pf.Starts {
			w[i], n[i] = pf.Wait.Seconds(), pf.Node
		}
	}
	return w, n, nil
}

// explainWaits is the queue's own estimate of each pod's next attempt.
func (rp *Replay) explainWaits(st *ForecastState) []float64 {
	w := make([]float64, len(st.Pending))
	for i, p := range st.Pending {
		w[i] = math.Inf(1)
		if x, err := rp.s.core.Explain(framework.Key(p), st.Now); err == nil && x.Position != nil && x.Position.Estimated {
			w[i] = x.Position.EstimatedWait.Seconds()
		}
	}
	return w
}

// rankWaits is the pod's rank in the queue's order divided by the rate
// at which pods started over the last hour.
func (rp *Replay) rankWaits(st *ForecastState) []float64 {
	started := 0
	for _, s := range rp.s.stats {
		if !s.bound.IsZero() && st.Now.Sub(s.bound) < time.Hour {
			started++
		}
	}
	w := make([]float64, len(st.Pending))
	for i := range w {
		w[i] = math.Inf(1)
		if started > 0 {
			w[i] = float64(i+1) / (float64(started) / 3600)
		}
	}
	return w
}

// score compares each prediction with the start the pod got.
func (rep *EvalReport) score(rp *Replay, forks []*evalFork) {
	for _, name := range evalMethods {
		rep.Methods = append(rep.Methods, &EvalMethod{Name: name})
	}
	o := rep.Options
	mc := rep.Methods[evalMonteCarlo]
	mc.runs, mc.nominal = o.MonteCarlo, ensembleNominal(o.MonteCarlo)
	for _, m := range rep.Methods[evalEnsemble:] {
		m.runs, m.nominal = o.Ensemble, ensembleNominal(o.Ensemble)
	}
	var waits []float64
	for _, f := range forks {
		rep.Instants++
		for k, n := range f.deciles {
			rep.Deciles[k] += n
		}
		rep.NoEstimate += f.none
		for i, uid := range f.uids {
			rep.Forecasts++
			start, ok := rp.Started(uid)
			if !ok {
				continue
			}
			rep.Started++
			actual := start.Sub(f.now).Seconds()
			for m, preds := range f.preds {
				if preds == nil {
					continue // not measured with these options
				}
				em := rep.Methods[m]
				em.pairs = append(em.pairs, [2]float64{preds[i], actual})
				em.pods, em.forks = append(em.pods, rp.pods[uid]), append(em.forks, f.now.Sub(epoch))
				if m < len(f.nodes) && f.nodes[m] != nil {
					em.nodes = append(em.nodes, [2]string{f.nodes[m][i], rp.s.stats[uid].ext.node})
				}
			}
			for m, r := range f.ranges {
				if r != nil {
					rep.Methods[m].ranges = append(rep.Methods[m].ranges, r[i])
				}
			}
			if actual >= 60 {
				rep.Counted++
				waits = append(waits, actual)
			}
		}
	}
	rep.MedianWait = time.Duration(median(waits) * float64(time.Second))
}

// WritePairs writes every forecast scored as CSV, one row per method
// and pod forecast that started: the method's index in the tables, the
// fork (seconds from the replay's start), the pod's name and classes
// (qos, GPU request, requests), and the predicted and actual waits in
// seconds (predicted +Inf when the method gave no start), and, for the
// methods that record them, the predicted and actual nodes (empty
// otherwise, and predicted empty when the method gave no start).
func (rep *EvalReport) WritePairs(w io.Writer) error {
	cw := csv.NewWriter(w)
	cw.Write([]string{"method", "fork_s", "pod", "qos", "gpu_request", "requests", "predicted_s", "actual_s", "predicted_node", "actual_node"})
	for m, em := range rep.Methods {
		for i, pa := range em.pairs {
			p := em.pods[i]
			var nodes [2]string
			if i < len(em.nodes) {
				nodes = em.nodes[i]
			}
			var name string
			var labels map[string]string
			if p != nil {
				name, labels = p.Name, p.Labels
			}
			cw.Write([]string{strconv.Itoa(m), strconv.FormatFloat(em.forks[i].Seconds(), 'f', -1, 64), name,
				labels[LabelQoS], labels[LabelGPURequest], labels[LabelRequests],
				strconv.FormatFloat(pa[0], 'f', 1, 64), strconv.FormatFloat(pa[1], 'f', 1, 64), nodes[0], nodes[1]})
		}
	}
	cw.Flush()
	return cw.Error()
}

// calibrated is how many running pods the deciles count.
func (rep *EvalReport) calibrated() int {
	n := 0
	for _, c := range rep.Deciles {
		n += c
	}
	return n
}

// historyStart says what the forecasts' history starts with.
func (rep *EvalReport) historyStart() string {
	if !rep.Options.Warm {
		return "cold (empty at the split)"
	}
	return fmt.Sprintf("warm: %d runs of the pods created before the split, %d of them still going then (censored)", rep.WarmRuns, rep.WarmGoing)
}

// Figures returns a method's median relative error and share within 2×
// over the pods that waited at least a minute, its median absolute error
// over all started pods (+Inf when most had no estimate), and the share
// of those pods it gave an estimate at all. A missing estimate counts as
// an infinite error.
func (m *EvalMethod) Figures() (relErr, within2, absErr, covered float64) {
	var rel, abs []float64
	in, est := 0, 0
	for _, pa := range m.pairs {
		pred, actual := pa[0], pa[1]
		abs = append(abs, math.Abs(pred-actual))
		if actual < 60 {
			continue
		}
		rel = append(rel, math.Abs(pred-actual)/actual)
		if !math.IsInf(pred, 1) {
			est++
		}
		if pred >= actual/2 && pred <= 2*actual {
			in++
		}
	}
	if len(rel) == 0 {
		return math.NaN(), math.NaN(), math.NaN(), math.NaN()
	}
	n := float64(len(rel))
	return median(rel), float64(in) / n, median(abs), float64(est) / n
}

// SameNode returns, for a method that records nodes, the share of the
// pods that waited at least a minute that it forecast on the node the
// replay started them on, and the share within 2× among those and among
// the others; ok is false for a method without nodes.
func (m *EvalMethod) SameNode() (same, inSame, inOther float64, ok bool) {
	if len(m.nodes) != len(m.pairs) || len(m.nodes) == 0 {
		return 0, 0, 0, false
	}
	var n, ns, is, io int
	for i, pa := range m.pairs {
		pred, actual := pa[0], pa[1]
		if actual < 60 {
			continue
		}
		n++
		in := pred >= actual/2 && pred <= 2*actual
		if m.nodes[i][0] == m.nodes[i][1] {
			ns++
			if in {
				is++
			}
		} else if in {
			io++
		}
	}
	frac := func(a, b int) float64 {
		if b == 0 {
			return math.NaN()
		}
		return float64(a) / float64(b)
	}
	return frac(ns, n), frac(is, ns), frac(io, n-ns), true
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

// Write prints the report as a Markdown table.
func (rep *EvalReport) Write(w io.Writer) {
	o := rep.Options
	fmt.Fprintf(w, "trace %s, speed %v, every %d-th node kept, a fork every %v, horizon %v, history label %s, GPU model %s, arrivals assumed %v\n",
		o.Dir, o.Speed, max(o.NodeEvery, 1), o.Every, o.Horizon, o.Label, cmp.Or(o.GPUModel, GPUModelDevice), o.Arrivals)
	if o.From > 0 {
		fmt.Fprintf(w, "trace split at %v (%.2f days): only the pods created from then on replayed; history %s\n",
			o.From, o.From.Hours()/24, rep.historyStart())
	}
	fmt.Fprintf(w, "%d forks, %d pending pods forecast, %d started later in the replay, %d of them waited ≥ 1 min (median wait %v); forecasts took %v\n\n",
		rep.Instants, rep.Forecasts, rep.Started, rep.Counted, rep.MedianWait.Round(time.Second), rep.Wall.Round(time.Millisecond))
	fmt.Fprintln(w, "| method | median error ÷ wait | within 2× | median absolute error | pods with an estimate |")
	fmt.Fprintln(w, "|---|---|---|---|---|")
	for _, m := range rep.Methods {
		if len(m.pairs) == 0 {
			continue // not measured
		}
		rel, in, abs, cov := m.Figures()
		relS, absS := fmt.Sprintf("%.0f%%", 100*rel), "none (most pods have no estimate)"
		if math.IsInf(rel, 1) {
			relS = "∞"
		}
		if !math.IsInf(abs, 1) {
			absS = time.Duration(abs * float64(time.Second)).Round(time.Second).String()
		}
		fmt.Fprintf(w, "| %s | %s | %.0f%% | %s | %.0f%% |\n", m.Name, relS, 100*in, absS, 100*cov)
	}
	if n := rep.calibrated(); n+rep.NoEstimate > 0 {
		fmt.Fprintf(w, "\nhistory by the three labels, over the running pods of the forks (%d; %d with no estimate): the share whose true remaining runtime falls in each tenth of the estimate, lowest first (a tenth each if calibrated):", n+rep.NoEstimate, rep.NoEstimate)
		for _, c := range rep.Deciles {
			fmt.Fprintf(w, " %.0f%%", 100*float64(c)/float64(max(n, 1)))
		}
		fmt.Fprintln(w)
	}
	for _, m := range rep.Methods {
		if same, inSame, inOther, ok := m.SameNode(); ok {
			fmt.Fprintf(w, "\n%s: %.0f%% of the pods that waited ≥ 1 min forecast on the node the replay starts them on; within 2×: %.0f%% of those, %.0f%% of the others\n",
				m.Name, 100*same, 100*inSame, 100*inOther)
		}
	}
	for _, m := range rep.Methods {
		if inside, width, ok := m.Coverage(); ok {
			fmt.Fprintf(w, "\n%s (%d runs): the range of its runs holds %.0f%% of the actual waits of ≥ 1 min (nominal %.0f%%); its median width is %.0f%% of the wait\n",
				m.Name, m.runs, 100*inside, 100*m.nominal, 100*width)
		}
	}
}
