package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/schedq/schedq/kube/app"
	"github.com/schedq/schedq/kube/sim"
)

// whatIf is what whatif's flags set.
type whatIf struct {
	in                   inputs
	scenario, file, out  string
	labels               []string
	tail                 string
	at, horizon          time.Duration
	arrivals, knownTimes bool
	flags                *pflag.FlagSet // where the above were declared
}

// whatifCmd is `schedq whatif`: pods and PodGroups added to a simulated
// cluster at a given time, and what they would get.
func whatifCmd(stdout io.Writer) *cobra.Command {
	w := &whatIf{}
	cmd := &cobra.Command{
		Use:   "whatif -f manifests.yaml",
		Short: "Ask the simulator whether pods would fit, where, and when they would start",
		Long: `Run a scenario, a snapshot or a trace in virtual time up to --at, then add
the pods and PodGroups of -f to a copy of the state there and say, for each
pod, whether it fits now on the cluster as it is (the pods pending ahead
of it not counted) and on which node, which pods it would preempt, when it
is predicted to start behind the pods already pending, and which pending
pods' predicted starts it changes. Nothing is written anywhere.

A running pod ends at its expected end: the runtime the simulator gives it
(--known-runtimes), its schedq.io/expected-runtime annotation, its
activeDeadlineSeconds, or the runtimes of finished pods of its kind
(--history-label); otherwise it runs until unknown and the forecast says so.`,
		Args: noArgs(true),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return w.run(stdout, cmd.InOrStdin(), cmd.Flags().Changed)
		},
	}
	f := cmd.Flags()
	w.flags = f
	f.StringVarP(&w.file, "filename", "f", "", "Pods and PodGroups to add (YAML or JSON, - for stdin; at most 1 MB and 1000 objects)")
	f.StringVar(&w.scenario, "scenario", sim.DefaultScenario, "a built-in scenario's name, or a scenario file")
	f.StringVar(&w.in.trace, "trace", "", "replay the Alibaba GPU trace v2023 (openb CSV files) in this directory")
	f.Float64Var(&w.in.traceSpeed, "trace-speed", 1, "bring the trace's arrivals this many times closer, keeping lifetimes")
	f.StringVar(&w.in.gpuModel, "gpu-model", "", "with a trace: dra (the default: GPUs as DRA devices; a pod's alibaba.com/gpu-milli request becomes a ResourceClaim), device or capacity (scenario scheduler.gpuModel)")
	f.StringVar(&w.in.snapshot, "snapshot", "", "start from a cluster saved with kubectl get nodes,pods -A -o yaml")
	f.DurationVar(&w.at, "at", 0, "the virtual time at which the objects are added (at most the run's end: the scenario's duration, a trace's last pod end, or the default 15m)")
	f.DurationVar(&w.horizon, "horizon", 24*time.Hour, "how far ahead to forecast (positive, at most 720h)")
	f.StringSliceVar(&w.labels, "history-label", nil, "learn runtimes per value of these labels, coarsest first (repeat or comma-separate; a class with too few runs falls back to the coarser; default: per controller, falling back to its owner kind and namespace)")
	f.StringVar(&w.tail, "history-tail", "longest", "what a runtime from history is when most runs like it are still going: longest (the longest run seen) or exponential (the estimate continued at its constant hazard)")
	f.BoolVar(&w.arrivals, "arrivals", false, "assume pods keep arriving as in the last hour (default: no new pods)")
	f.BoolVar(&w.knownTimes, "known-runtimes", true, "end pods at the runtimes the simulator gives them (a trace's, a scenario's lifetimes)")
	f.StringVarP(&w.out, "output", "o", "text", "text or json")
	return cmd
}

// checkFlags checks the flags that need no input read.
func (w *whatIf) checkFlags(changed func(string) bool) error {
	if w.file == "" {
		return errors.New("-f: name a file of Pods and PodGroups (- for stdin)")
	}
	if w.out != "text" && w.out != "json" {
		return fmt.Errorf("--output: %q is not text or json", w.out)
	}
	if err := refuseEmpty(w.flags); err != nil {
		return err
	}
	if w.at < 0 {
		return fmt.Errorf("--at: must not be negative, got %v", w.at)
	}
	if w.horizon <= 0 || w.horizon > sim.MaxHorizon {
		return fmt.Errorf("--horizon: must be more than 0 and at most %v, got %v", sim.MaxHorizon, w.horizon)
	}
	w.in.speedSet = changed("trace-speed")
	if err := w.in.check(); err != nil {
		return err
	}
	return (app.HistoryOptions{Labels: w.labels, Tail: w.tail}).Validate()
}

// run checks the flags and the manifests, replays the scenario to --at,
// and writes what adding the manifests there gives.
func (w *whatIf) run(stdout io.Writer, stdin io.Reader, changed func(string) bool) error {
	if err := w.checkFlags(changed); err != nil {
		return err
	}
	add, err := readWhatIf(w.file, stdin)
	if err != nil {
		return fmt.Errorf("-f %s: %w", w.file, err)
	}
	w.in.learns = true
	sc, err := w.in.load(w.scenario, changed("scenario"))
	if err != nil {
		return err
	}
	if w.labels, w.tail, err = historyOfConfig(sc, changed, w.labels, w.tail); err != nil {
		return err
	}
	histTail, err := sim.ParseHistoryTail(w.tail)
	if err != nil {
		return fmt.Errorf("--history-tail: %w", err)
	}
	if names, err := sc.ProfileNames(); err != nil {
		return err
	} else if len(names) > 1 {
		add.Profiles = names // a pod of any profile, scheduled by it
	}
	if err := add.Validate(); err != nil { // before the replay, which may be long
		return fmt.Errorf("-f %s: %w", w.file, err)
	}
	rp, err := sim.NewReplay(sc)
	if err != nil {
		return err
	}
	if end, why := rp.End(); w.at > end {
		return fmt.Errorf("--at %v: past the end of %s at %v (%s): there is no state there to add to", w.at, sc.Name, end, why)
	}
	if err := rp.Until(w.at); err != nil {
		return err
	}
	hist := rp.History(w.labels...)
	hist.Tail = histTail
	o := sim.ForecastOptions{Horizon: w.horizon, History: hist, Arrivals: w.arrivals}
	if w.knownTimes {
		o.Known = rp.Known
	}
	st := rp.State()
	x, err := sim.RunWhatIf(sc, st, add, o)
	if bad := new(sim.BadWhatIfError); errors.As(err, &bad) {
		return fmt.Errorf("-f %s: %w", w.file, err)
	}
	if err != nil {
		return err
	}
	if w.out == "json" {
		return writeJSON(stdout, x, false)
	}
	x.WriteText(stdout, st.Now, w.horizon)
	return nil
}

func readWhatIf(file string, stdin io.Reader) (*sim.WhatIfInput, error) {
	var r io.Reader = stdin
	if file != "-" {
		fh, err := os.Open(file)
		if err != nil {
			return nil, err
		}
		defer fh.Close()
		r = fh
	}
	data, err := io.ReadAll(io.LimitReader(r, sim.MaxWhatIfBytes+1))
	if err != nil {
		return nil, err
	}
	return sim.ParseWhatIf(data)
}

// historyOfConfig is the history the replay learns: the history of the
// Schedq args of the scenario's scheduler.config where the file gives
// it, as schedq scheduler takes it, else --history-label and
// --history-tail (labels, tail). A flag given (changed) with another
// value than the file's is refused, naming both.
func historyOfConfig(sc *sim.Scenario, changed func(string) bool, labels []string, tail string) ([]string, string, error) {
	h, at, err := sc.ConfigHistory()
	if err != nil {
		return nil, "", err
	}
	var errs []error
	conflict := func(flag, field, flagValue, fileValue string) {
		errs = append(errs, fmt.Errorf("--%s=%s: scheduler.config %s: %s.history.%s is %s; give it in one place", flag, flagValue, sc.Scheduler.Config, at, field, fileValue))
	}
	if h.Labels != nil {
		if file := strings.Join(h.Labels, ","); changed("history-label") && strings.Join(labels, ",") != file {
			if file == "" {
				file = "[] (none)"
			}
			conflict("history-label", "labels", strings.Join(labels, ","), file)
		}
		labels = h.Labels
	}
	if h.Tail != nil {
		if changed("history-tail") && tail != *h.Tail {
			conflict("history-tail", "tail", tail, *h.Tail)
		}
		tail = *h.Tail
	}
	return labels, tail, errors.Join(errs...)
}
