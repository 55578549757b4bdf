package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"golang.org/x/term"

	"github.com/schedq/schedq/kube/sim"
)

func simulateCmd(stdout, stderr io.Writer) *cobra.Command {
	var (
		list              bool
		scenario, compare string
		output, report    string
		seed              seedFlag
		memLimit          memoryLimit
		win               sim.Window
		noWall, check     bool
		progress          string
		in                inputs
		gf                gpuFlags
		fw                frameworkFlags
	)
	cmd := &cobra.Command{
		Use:   "simulate",
		Short: "Run the scheduler and its queue on a simulated cluster, in virtual time",
		Long: `Run schedq's scheduler (plugins, cycle, queue, event handling) against an
in-memory cluster in virtual time, from a scenario and a seed, and report
what happened. With no flags it runs the built-in ` + sim.DefaultScenario + ` scenario.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if list {
				if err := listAlone(cmd); err != nil {
					return err
				}
				for _, n := range sim.Builtins() {
					sc, err := sim.Load(n)
					if err != nil {
						return err
					}
					fmt.Fprintf(stdout, "%-22s %s\n", n, strings.Join(strings.Fields(sc.Description), " "))
				}
				return nil
			}
			if output != "text" && output != "json" {
				return fmt.Errorf("--output: %q is not text or json", output)
			}
			if progress != "on" && progress != "off" && progress != "auto" {
				return fmt.Errorf("--progress: %q is not auto, on or off", progress)
			}
			if cmd.Flags().Changed("compare") && compare == "" {
				return fmt.Errorf(`--compare "": no setting (give key=value, e.g. hints=false)`)
			}
			if report != "" {
				if err := checkWritableDir(report); err != nil {
					return fmt.Errorf("--report %s: %w", report, err)
				}
			}
			if err := checkWindow(win, report, cmd.Flags().Changed("window-start") || cmd.Flags().Changed("window-end")); err != nil {
				return err
			}
			in.speedSet = cmd.Flags().Changed("trace-speed")
			if err := gf.check(cmd.Flags().Changed); err != nil {
				return err
			}
			if gf.experiment {
				first := uint64(1)
				if seed.set {
					first = seed.v
				}
				return runGPUExperiment(stdout, &gf, in, first, output, noWall)
			}
			var sweep []string
			if gf.sweep() {
				var err error
				if sweep, err = gf.checkSweep(cmd.Flags().Changed, in); err != nil {
					return err
				}
			}
			if err := in.check(); err != nil {
				return err
			}
			in.gpuModel, in.gpuPolicy = gf.model, gf.policy
			if sweep != nil {
				in.gpuPolicy = ""
			}
			scenarioSet := cmd.Flags().Changed("scenario")
			sc, err := in.load(scenario, scenarioSet)
			if err != nil {
				return err
			}
			if seed.set {
				sc.Seed = seed.v
			}
			fw.set = cmd.Flags().Changed("upstream-plugins")
			if err := fw.apply(sc, ""); err != nil {
				return err
			}
			if err := windowInRun(win, sc); err != nil {
				return err
			}
			showProgress := progress == "on" || progress == "auto" && isTerminal(stderr)
			run := func(sc *sim.Scenario, label string) (*sim.Report, error) {
				o := sim.Options{CheckInvariants: check}
				if showProgress {
					o.Status = statusBar(stderr, label, time.Now)
				}
				r, err := sim.Run(sc, o)
				if showProgress {
					fmt.Fprintln(stderr)
				}
				return r, err
			}
			if sweep != nil {
				if err := sweepConfigFree(gf.policy, sc); err != nil {
					return err
				}
				scs, err := sweepScenarios(sweep, func(policy string) (*sim.Scenario, error) {
					one := in
					one.gpuPolicy = policy
					s, err := one.load(scenario, scenarioSet)
					if err != nil {
						return nil, err
					}
					s.Seed = sc.Seed
					return s, fw.apply(s, "")
				})
				if err != nil {
					return fmt.Errorf("--gpu-policy %s: %w", gf.policy, err)
				}
				for i, s := range scs {
					if err := s.CheckFrameworks(); err != nil {
						return fmt.Errorf("--gpu-policy %s: %s%w", sweep[i], configSource(s, fw, scenario), err)
					}
				}
				if err := checkMemory(stderr, sc, memLimit); err != nil {
					return err
				}
				defer tuneGC(sc, memLimit)()
				return runPolicies(stdout, sweep, func(i int, name string) (*sim.Report, error) {
					return run(scs[i], name)
				}, output, noWall)
			}
			var alt *sim.Scenario
			if compare != "" {
				if alt, err = in.compareScenario(scenario, scenarioSet, sc.Seed, compare, fw); err != nil {
					return err
				}
			}
			if err := checkOutputs(in.outputPaths(report, alt != nil), in.inputPaths(scenario, scenarioSet, sc, alt, fw.config)); err != nil {
				return err
			}
			if err := checkFrameworks(sc, alt, fw, scenario, compare); err != nil {
				return err
			}
			if err := checkMemory(stderr, sc, memLimit); err != nil {
				return err
			}
			defer tuneGC(sc, memLimit)()
			base, err := run(sc, sc.Name)
			if err != nil {
				return err
			}
			var other *sim.Report
			if alt != nil {
				if other, err = run(alt, compare); err != nil {
					return err
				}
			}
			// The summary first and the report last: a file that cannot be
			// written, or a window the run turns out not to reach
			// (ErrWindow), must not lose the rest.
			if err := printRuns(stdout, output, base, other, compare, noWall); err != nil {
				return err
			}
			if err := in.write(base, false); err != nil {
				return err
			}
			if other != nil {
				if err := in.write(other, true); err != nil {
					return err
				}
			}
			if report != "" {
				return writeHTML(report, base, other, compare, win)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.BoolVar(&list, "list", false, "list the built-in scenarios")
	f.StringVar(&scenario, "scenario", sim.DefaultScenario, "a built-in scenario's name, or a scenario file")
	f.Var(&seed, "seed", "override the scenario's seed (a whole number from 0 to 18446744073709551615)")
	f.StringVar(&compare, "compare", "", "run twice, the second time with key=value, or several joined by commas (e.g. wakeBudget=false, or hints=false,wakeBudget=false), and print both")
	f.StringVarP(&output, "output", "o", "text", "text or json")
	f.StringVar(&report, "report", "", "also write a self-contained HTML report to this file (with --compare, one page with both runs)")
	f.DurationVar(&win.From, "window-start", 0, "with --report: the charts over virtual time start here (e.g. 1h); default the run's start")
	f.DurationVar(&win.To, "window-end", 0, "with --report: the charts over virtual time end here (e.g. 2h); default the run's end")
	f.BoolVar(&noWall, "no-wall", false, "leave out the wall-clock figures, so that runs of one seed print the same bytes")
	f.BoolVar(&check, "check", false, "check the queue's invariants after every step (slow)")
	f.Var(&memLimit, "memory-limit", "refuse a scenario estimated to need more memory than this (e.g. 16Gi); default: the machine's available memory")
	f.StringVar(&progress, "progress", "auto", "progress bar on stderr: auto (on a terminal), on or off")
	f.StringVar(&in.trace, "trace", "", "replay the Alibaba GPU trace v2023 (openb CSV files) in this directory")
	f.StringVar(&in.tracePods, "trace-pods", "", "with --trace: the pod list's file in that directory (default openb_pod_list_default.csv)")
	f.StringVar(&in.traceOrder, "trace-order", "", "with a pod list without time columns: file (default) or random (shuffled with the seed)")
	f.Float64Var(&in.traceSpeed, "trace-speed", 1, "bring the trace's arrivals this many times closer, keeping lifetimes (more load)")
	gf.register(f)
	f.StringVar(&in.snapshot, "snapshot", "", "start from a cluster saved with kubectl get nodes,pods -A -o yaml (a file or a directory of them)")
	f.StringVar(&in.records, "records", "", "write one record per pod to this file (.jsonl or .csv)")
	f.BoolVar(&fw.upstream, "upstream-plugins", true, "the simulator always schedules with kube-scheduler v1.37.2's framework and plugins (--config's profile, or the default one); =false is refused")
	must(f.MarkDeprecated("upstream-plugins", "kube-scheduler's framework is the only one: the flag does nothing"))
	f.StringVar(&fw.config, "config", "", "a KubeSchedulerConfiguration file whose one profile replaces kube-scheduler's default (scheduler.config)")
	f.StringVar(&in.series, "series", "", "write the sub-queue sizes and the cluster's allocation over virtual time to this file (.csv)")
	return cmd
}

// listAlone refuses --list with any other flag, which it would ignore,
// except --progress (a display preference, with nothing to show).
func listAlone(cmd *cobra.Command) error {
	var other []string
	cmd.Flags().Visit(func(f *pflag.Flag) {
		if f.Name != "list" && f.Name != "progress" {
			other = append(other, "--"+f.Name)
		}
	})
	if len(other) > 0 {
		return fmt.Errorf("--list: lists the built-in scenarios and runs nothing; not with %s", strings.Join(other, ", "))
	}
	return nil
}

// printRuns prints the report of the run r, or of both runs of --compare
// (other non-nil, with setting), as text or JSON (output).
func printRuns(stdout io.Writer, output string, r, other *sim.Report, setting string, noWall bool) error {
	switch {
	case output == "json" && other != nil:
		return writeJSON(stdout, map[string]any{"baseline": r, "compare": map[string]any{"setting": setting, "report": other}}, noWall)
	case output == "json":
		return writeJSON(stdout, r, noWall)
	case other != nil:
		sim.WriteComparison(stdout, r, other, "baseline", setting, !noWall)
	default:
		r.WriteText(stdout, !noWall)
	}
	return nil
}

// checkWritableDir fails, before a run that may be long, if the report
// could not be written: its directory is missing or not a directory.
func checkWritableDir(path string) error {
	dir := filepath.Dir(path)
	st, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("directory %s does not exist", dir)
	case err != nil:
		return err
	case !st.IsDir():
		return fmt.Errorf("%s is not a directory", dir)
	}
	return probeDir(dir)
}

// probeDir creates and removes a file in dir, so that a directory where
// the output could not be written is refused before the run rather than
// after it.
func probeDir(dir string) error {
	f, err := os.CreateTemp(dir, ".schedq-probe-*")
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return fmt.Errorf("directory %s cannot be written: %w", dir, err)
	}
	f.Close()
	return os.Remove(f.Name())
}

// writeHTML writes the report page of a run, or of both runs of
// --compare (other non-nil) on one page, its charts over time showing
// win. Nothing is written if the page cannot be made.
func writeHTML(path string, r, other *sim.Report, setting string, win sim.Window) error {
	var page bytes.Buffer
	var err error
	if other != nil {
		err = sim.WriteComparisonHTML(&page, r, other, "baseline", setting, win)
	} else {
		err = r.WriteHTMLWindow(&page, win)
	}
	if errors.Is(err, sim.ErrWindow) {
		return fmt.Errorf("--window-start, --window-end: %w", err)
	}
	if err != nil {
		return fmt.Errorf("--report %s: %w", path, err)
	}
	if err := writeFile(path, func(f *os.File) error { _, err := f.Write(page.Bytes()); return err }); err != nil {
		return fmt.Errorf("--report: %w", err)
	}
	return nil
}

// windowInRun refuses, before the run, a window that starts at or after
// the latest end of a run of sc: its charts would be empty. A run that
// ends sooner (nothing left to do) is known only once it is over, and
// so is a trace's end.
func windowInRun(win sim.Window, sc *sim.Scenario) error {
	if end, why, ok := sc.KnownEnd(); ok && win.From > 0 && win.From >= end {
		return fmt.Errorf("--window-start %v: at or after the end of %s at %v (%s): the charts would be empty", win.From, sc.Name, end, why)
	}
	return nil
}

// checkWindow refuses, before the run, a window that is negative, ends
// before it starts, or has no report to apply to.
func checkWindow(win sim.Window, report string, set bool) error {
	switch {
	case set && report == "":
		return errors.New("--window-start, --window-end: they set the charts of the HTML report; give --report too")
	case win.From < 0:
		return fmt.Errorf("--window-start: must not be negative, got %v", win.From)
	case win.To < 0:
		return fmt.Errorf("--window-end: must not be negative, got %v", win.To)
	case win.To != 0 && win.To <= win.From:
		return fmt.Errorf("--window-end %v: must be after --window-start (%v)", win.To, win.From)
	}
	return nil
}

func writeJSON(w io.Writer, v any, noWall bool) error {
	if noWall {
		switch r := v.(type) {
		case *sim.Report:
			r.Wall = nil
		case map[string]any:
			r["baseline"].(*sim.Report).Wall = nil
			r["compare"].(map[string]any)["report"].(*sim.Report).Wall = nil
		}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// checkFrameworks builds, before the first run, kube-scheduler's
// framework for every profile of the baseline (base) and of --compare's
// run (alt, nil without one), as each run will
// (sim.Scenario.CheckFrameworks), so that a profile the framework
// refuses stops the command before any run rather than after the
// baseline's. The error says where the file came from: --config or the
// scenario for the baseline, --compare (compare) for a failure of the
// second run only.
func checkFrameworks(base, alt *sim.Scenario, fw frameworkFlags, scenario, compare string) error {
	if err := base.CheckFrameworks(); err != nil {
		return fmt.Errorf("%s%w", configSource(base, fw, scenario), err)
	}
	if alt == nil {
		return nil
	}
	if err := alt.CheckFrameworks(); err != nil {
		return fmt.Errorf("--compare %s: %w", compare, err)
	}
	return nil
}

// configSource is what gave sc its scheduler.config, as the prefix of
// an error: "--config: ", or the scenario's file (scenario) that names
// it; "" without a file.
func configSource(sc *sim.Scenario, fw frameworkFlags, scenario string) string {
	switch {
	case fw.config != "":
		return "--config: "
	case sc.Scheduler.Config != "":
		return "scenario " + scenario + ": "
	}
	return ""
}

// frameworkFlags are --upstream-plugins (deprecated: true does nothing,
// false is refused) and --config.
type frameworkFlags struct {
	upstream bool
	set      bool // --upstream-plugins was given
	config   string
}

// apply sets the flags on sc, except a setting that --compare (compare)
// changes in the second run.
func (f frameworkFlags) apply(sc *sim.Scenario, compare string) error {
	if f.set && !f.upstream {
		return errors.New("--upstream-plugins=false: schedq's own plugins were removed; the simulator runs kube-scheduler v1.37.2's framework and plugins: configure them with --config (a KubeSchedulerConfiguration profile)")
	}
	if f.config != "" && !strings.Contains(compare, "config=") {
		if err := sc.Set("config", f.config); err != nil {
			return fmt.Errorf("--config: %w", err)
		}
	}
	return nil
}
