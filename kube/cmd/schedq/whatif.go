package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/schedq/schedq/kube/app"
	"github.com/schedq/schedq/kube/sim"
)

// whatifCmd is `schedq whatif`: pods and PodGroups added to a simulated
// cluster at a given time, and what they would get.
func whatifCmd(stdout io.Writer) *cobra.Command {
	var (
		in                   inputs
		scenario, file, out  string
		labels               []string
		tail                 string
		at, horizon          time.Duration
		arrivals, knownTimes bool
	)
	cmd := &cobra.Command{
		Use:   "whatif -f manifests.yaml",
		Short: "Ask the simulator whether pods would fit, where, and when they would start",
		Long: `Run a scenario, a snapshot or a trace in virtual time up to --at, then add
the pods and PodGroups of -f to a copy of the state there and say, for each
pod, whether it fits now and on which node, which pods it would preempt,
when it is predicted to start behind the pods already pending, and which
pending pods' predicted starts it changes. Nothing is written anywhere.

A running pod ends at its expected end: the runtime the simulator gives it
(--known-runtimes), its schedq.io/expected-runtime annotation, its
activeDeadlineSeconds, or the runtimes of finished pods of its kind
(--history-label); otherwise it runs until unknown and the forecast says so.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if file == "" {
				return errors.New("-f: name a file of Pods and PodGroups (- for stdin)")
			}
			if out != "text" && out != "json" {
				return fmt.Errorf("--output: %q is not text or json", out)
			}
			if at < 0 {
				return fmt.Errorf("--at: must not be negative, got %v", at)
			}
			if horizon <= 0 || horizon > sim.MaxHorizon {
				return fmt.Errorf("--horizon: must be more than 0 and at most %v, got %v", sim.MaxHorizon, horizon)
			}
			in.speedSet = cmd.Flags().Changed("trace-speed")
			if err := in.check(); err != nil {
				return err
			}
			if err := (app.HistoryOptions{Labels: labels, Tail: tail}).Validate(); err != nil {
				return err
			}
			add, err := readWhatIf(file, cmd.InOrStdin())
			if err != nil {
				return fmt.Errorf("-f %s: %w", file, err)
			}
			in.learns = true
			sc, err := in.load(scenario, cmd.Flags().Changed("scenario"))
			if err != nil {
				return err
			}
			if labels, tail, err = historyOfConfig(sc, cmd.Flags().Changed, labels, tail); err != nil {
				return err
			}
			histTail, err := sim.ParseHistoryTail(tail)
			if err != nil {
				return fmt.Errorf("--history-tail: %w", err)
			}
			if names, err := sc.ProfileNames(); err != nil {
				return err
			} else if len(names) > 1 {
				add.Profiles = names // a pod of any profile, scheduled by it
			}
			if err := add.Validate(); err != nil { // before the replay, which may be long
				return fmt.Errorf("-f %s: %w", file, err)
			}
			rp, err := sim.NewReplay(sc)
			if err != nil {
				return err
			}
			if end, why := rp.End(); at > end {
				return fmt.Errorf("--at %v: past the end of %s at %v (%s): there is no state there to add to", at, sc.Name, end, why)
			}
			if err := rp.Until(at); err != nil {
				return err
			}
			hist := rp.History(labels...)
			hist.Tail = histTail
			o := sim.ForecastOptions{Horizon: horizon, History: hist, Arrivals: arrivals}
			if knownTimes {
				o.Known = rp.Known
			}
			st := rp.State()
			w, err := sim.RunWhatIf(sc, st, add, o)
			if bad := new(sim.BadWhatIfError); errors.As(err, &bad) {
				return fmt.Errorf("-f %s: %w", file, err)
			}
			if err != nil {
				return err
			}
			if out == "json" {
				return writeJSON(stdout, w, false)
			}
			w.WriteText(stdout, st.Now, horizon)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVarP(&file, "filename", "f", "", "Pods and PodGroups to add (YAML or JSON, - for stdin; at most 1 MB and 1000 objects)")
	f.StringVar(&scenario, "scenario", sim.DefaultScenario, "a built-in scenario's name, or a scenario file")
	f.StringVar(&in.trace, "trace", "", "replay the Alibaba GPU trace v2023 (openb CSV files) in this directory")
	f.Float64Var(&in.traceSpeed, "trace-speed", 1, "bring the trace's arrivals this many times closer, keeping lifetimes")
	f.StringVar(&in.gpuModel, "gpu-model", "", "with a trace: dra (the default: GPUs as DRA devices; a pod's alibaba.com/gpu-milli request becomes a ResourceClaim), device or capacity (scenario scheduler.gpuModel)")
	f.StringVar(&in.snapshot, "snapshot", "", "start from a cluster saved with kubectl get nodes,pods -A -o yaml")
	f.DurationVar(&at, "at", 0, "the virtual time at which the objects are added (at most the run's end: the scenario's duration, a trace's last pod end, or the default 15m)")
	f.DurationVar(&horizon, "horizon", 24*time.Hour, "how far ahead to forecast (positive, at most 720h)")
	f.StringSliceVar(&labels, "history-label", nil, "learn runtimes per value of these labels, coarsest first (repeat or comma-separate; a class with too few runs falls back to the coarser; default: per controller, falling back to its owner kind and namespace)")
	f.StringVar(&tail, "history-tail", "longest", "what a runtime from history is when most runs like it are still going: longest (the longest run seen) or exponential (the estimate continued at its constant hazard)")
	f.BoolVar(&arrivals, "arrivals", false, "assume pods keep arriving as in the last hour (default: no new pods)")
	f.BoolVar(&knownTimes, "known-runtimes", true, "end pods at the runtimes the simulator gives them (a trace's, a scenario's lifetimes)")
	f.StringVarP(&out, "output", "o", "text", "text or json")
	return cmd
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
