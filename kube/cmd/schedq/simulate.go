package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"golang.org/x/term"

	"github.com/schedq/schedq/kube/sim"
)

// simulation is what simulate's flags set, and where it writes.
type simulation struct {
	stdout, stderr    io.Writer
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
	flags             *pflag.FlagSet // where the above were declared
}

func simulateCmd(stdout, stderr io.Writer) *cobra.Command {
	s := &simulation{stdout: stdout, stderr: stderr}
	cmd := &cobra.Command{
		Use:   "simulate",
		Short: "Run the scheduler and its queue on a simulated cluster, in virtual time",
		Long: `Run schedq's scheduler (plugins, cycle, queue, event handling) against an
in-memory cluster in virtual time, from a scenario and a seed, and report
what happened. With no flags it runs the built-in ` + sim.DefaultScenario + ` scenario.`,
		Args: noArgs(true),
		RunE: func(cmd *cobra.Command, _ []string) error { return s.run(cmd.Flags().Changed) },
	}
	s.register(cmd.Flags())
	return cmd
}

// register declares simulate's flags on f.
func (s *simulation) register(f *pflag.FlagSet) {
	s.flags = f
	f.BoolVar(&s.list, "list", false, "list the built-in scenarios")
	f.StringVar(&s.scenario, "scenario", sim.DefaultScenario, "a built-in scenario's name, or a scenario file")
	f.Var(&s.seed, "seed", "override the scenario's seed (a whole number from 0 to 18446744073709551615)")
	f.StringVar(&s.compare, "compare", "", "run twice, the second time with key=value, or several joined by commas (e.g. wakeBudget=false, or hints=false,wakeBudget=false), and print both")
	f.StringVarP(&s.output, "output", "o", "text", "text or json")
	f.StringVar(&s.report, "report", "", "also write a self-contained HTML report to this file (with --compare, one page with both runs)")
	f.DurationVar(&s.win.From, "window-start", 0, "with --report: the charts over virtual time start here (e.g. 1h); default the run's start")
	f.DurationVar(&s.win.To, "window-end", 0, "with --report: the charts over virtual time end here (e.g. 2h); default the run's end")
	f.BoolVar(&s.noWall, "no-wall", false, "leave out the wall-clock figures, so that runs of one seed print the same bytes")
	f.BoolVar(&s.check, "check", false, "check the queue's invariants after every step (slow)")
	f.Var(&s.memLimit, "memory-limit", "refuse a scenario estimated to need more memory than this (e.g. 16Gi); default: the machine's available memory")
	f.StringVar(&s.progress, "progress", "auto", "progress bar on stderr: auto (on a terminal), on or off")
	f.StringVar(&s.in.trace, "trace", "", "replay the Alibaba GPU trace v2023 (openb CSV files) in this directory")
	f.StringVar(&s.in.tracePods, "trace-pods", "", "with --trace: the pod list's file in that directory (default openb_pod_list_default.csv)")
	f.StringVar(&s.in.traceOrder, "trace-order", "", "with a pod list without time columns: file (default) or random (shuffled with the seed)")
	f.Float64Var(&s.in.traceSpeed, "trace-speed", 1, "bring the trace's arrivals this many times closer, keeping lifetimes (more load)")
	s.gf.register(f)
	f.StringVar(&s.in.snapshot, "snapshot", "", "start from a cluster saved with kubectl get nodes,pods -A -o yaml (a file or a directory of them)")
	f.StringVar(&s.in.records, "records", "", "write one record per pod to this file (.jsonl, .json (JSON Lines too) or .csv)")
	f.BoolVar(&s.fw.upstream, "upstream-plugins", true, "the simulator always schedules with kube-scheduler v1.37.2's framework and plugins (--config's profile, or the default one); =false is refused")
	must(f.MarkDeprecated("upstream-plugins", "kube-scheduler's framework is the only one: the flag does nothing"))
	f.StringVar(&s.fw.config, "config", "", "a KubeSchedulerConfiguration file that replaces kube-scheduler's default profile: every one of its profiles runs, each for the pods that name it, as in schedq scheduler (a GPU replay runs one) (scheduler.config)")
	f.StringVar(&s.in.series, "series", "", "write the sub-queue sizes and the cluster's allocation over virtual time to this file (.csv)")
}

// run checks every flag, then runs what they ask: the list of scenarios,
// the paper's GPU experiment, a sweep of GPU policies, or one scenario
// (twice with --compare). changed says whether a flag was given.
func (s *simulation) run(changed func(string) bool) error {
	if s.list {
		return s.listScenarios()
	}
	if err := s.checkFlags(changed); err != nil {
		return err
	}
	if s.gf.experiment {
		first := uint64(1)
		if s.seed.set {
			first = s.seed.v
		}
		return runGPUExperiment(s.stdout, &s.gf, s.in, first, s.output, s.noWall)
	}
	var sweep []string
	if s.gf.sweep() {
		var err error
		if sweep, err = s.gf.checkSweep(changed, s.in); err != nil {
			return err
		}
	}
	if err := s.in.check(); err != nil {
		return err
	}
	s.in.gpuModel, s.in.gpuPolicy = s.gf.model, s.gf.policy
	if sweep != nil {
		s.in.gpuPolicy = ""
	}
	scenarioSet := changed("scenario")
	sc, err := s.in.load(s.scenario, scenarioSet)
	if err != nil {
		return err
	}
	if s.seed.set {
		sc.Seed = s.seed.v
	}
	s.fw.set = changed("upstream-plugins")
	if err := s.fw.apply(sc, ""); err != nil {
		return err
	}
	if err := windowInRun(s.win, sc); err != nil {
		return err
	}
	if sweep != nil {
		return s.runSweep(sweep, sc, scenarioSet)
	}
	return s.runOne(sc, scenarioSet)
}

// listScenarios prints the built-in scenarios, one a line.
func (s *simulation) listScenarios() error {
	if err := listAlone(s.flags); err != nil {
		return err
	}
	for _, n := range sim.Builtins() {
		sc, err := sim.Load(n)
		if err != nil {
			return err
		}
		fmt.Fprintf(s.stdout, "%-22s %s\n", n, strings.Join(strings.Fields(sc.Description), " "))
	}
	return nil
}

// checkFlags checks the flags that need no input read.
func (s *simulation) checkFlags(changed func(string) bool) error {
	if s.output != "text" && s.output != "json" {
		return fmt.Errorf("--output: %q is not text or json", s.output)
	}
	if s.progress != "on" && s.progress != "off" && s.progress != "auto" {
		return fmt.Errorf("--progress: %q is not auto, on or off", s.progress)
	}
	if changed("compare") && s.compare == "" {
		return fmt.Errorf(`--compare "": no setting (give key=value, e.g. hints=false)`)
	}
	if err := refuseEmpty(s.flags); err != nil {
		return err
	}
	if s.report != "" {
		if err := checkWritableDir(s.report); err != nil {
			return fmt.Errorf("--report %s: %w", s.report, err)
		}
	}
	if err := checkWindow(s.win, s.report, changed("window-start") || changed("window-end")); err != nil {
		return err
	}
	s.in.speedSet = changed("trace-speed")
	if err := s.gf.check(changed); err != nil {
		return err
	}
	return s.seedsFit()
}

// seedsFit refuses an experiment whose seeds (--seed, --seed+1, ... for
// --seeds runs) would go past the largest seed and wrap around to 0.
func (s *simulation) seedsFit() error {
	if !s.gf.experiment || !s.seed.set || s.gf.seeds < 1 {
		return nil
	}
	if last := uint64(math.MaxUint64) - uint64(s.gf.seeds-1); s.seed.v > last {
		return fmt.Errorf("--seed %d, --seeds %d: the seeds would go past %d (give --seed %d or less)", s.seed.v, s.gf.seeds, uint64(math.MaxUint64), last)
	}
	return nil
}

// runOnce runs sc, with a progress bar if --progress asks for one.
func (s *simulation) runOnce(sc *sim.Scenario, label string) (*sim.Report, error) {
	show := s.progress == "on" || s.progress == "auto" && isTerminal(s.stderr)
	o := sim.Options{CheckInvariants: s.check}
	if s.report != "" && s.win.From > 0 {
		o.Built = func(end time.Duration) error { return windowBeforeEnd(s.win, end) }
	}
	if show {
		o.Status = statusBar(s.stderr, label, time.Now)
	}
	r, err := sim.Run(sc, o)
	if show {
		fmt.Fprintln(s.stderr)
	}
	return r, err
}

// runSweep runs sc once per GPU policy of the sweep and prints the
// policies side by side.
func (s *simulation) runSweep(sweep []string, sc *sim.Scenario, scenarioSet bool) error {
	if err := sweepConfigFree(s.gf.policy, sc); err != nil {
		return err
	}
	scs, err := sweepScenarios(sweep, func(policy string) (*sim.Scenario, error) {
		one := s.in
		one.gpuPolicy = policy
		x, err := one.load(s.scenario, scenarioSet)
		if err != nil {
			return nil, err
		}
		x.Seed = sc.Seed
		return x, s.fw.apply(x, "")
	})
	if err != nil {
		return fmt.Errorf("--gpu-policy %s: %w", s.gf.policy, err)
	}
	for i, x := range scs {
		if err := x.CheckFrameworks(); err != nil {
			return fmt.Errorf("--gpu-policy %s: %s%w", sweep[i], configSource(x, s.fw, s.scenario), err)
		}
	}
	if err := checkMemory(s.stderr, sc, s.memLimit); err != nil {
		return err
	}
	defer tuneGC(sc, s.memLimit)()
	return runPolicies(s.stdout, sweep, func(i int, name string) (*sim.Report, error) {
		return s.runOnce(scs[i], name)
	}, s.output, s.noWall)
}

// runOne runs sc (and, with --compare, sc with the setting changed),
// prints the summary, then writes the records, series and report.
func (s *simulation) runOne(sc *sim.Scenario, scenarioSet bool) error {
	var alt *sim.Scenario
	if s.compare != "" {
		var err error
		if alt, err = s.in.compareScenario(s.scenario, scenarioSet, sc.Seed, s.compare, s.fw); err != nil {
			return err
		}
		if sim.SameRun(sc, alt) {
			return fmt.Errorf("--compare %s: the same as the baseline, which runs with these settings already (by default, or as the scenario or --config sets them): the two runs would be the same; compare another value", s.compare)
		}
	}
	if err := checkOutputs(s.in.outputPaths(s.report, alt != nil), s.in.inputPaths(s.scenario, scenarioSet, sc, alt, s.fw.config)); err != nil {
		return err
	}
	if err := checkFrameworks(sc, alt, s.fw, s.scenario, s.compare); err != nil {
		return err
	}
	if err := checkMemory(s.stderr, sc, s.memLimit); err != nil {
		return err
	}
	defer tuneGC(sc, s.memLimit)()
	base, err := s.runOnce(sc, sc.Name)
	if err != nil {
		return err
	}
	var other *sim.Report
	if alt != nil {
		if other, err = s.runOnce(alt, s.compare); err != nil {
			return err
		}
	}
	// The summary first and the report last: a file that cannot be
	// written, or a window the run turns out not to reach (ErrWindow),
	// must not lose the rest.
	if err := printRuns(s.stdout, s.output, base, other, s.compare, s.noWall); err != nil {
		return err
	}
	if err := s.in.write(base, false); err != nil {
		return err
	}
	if other != nil {
		if err := s.in.write(other, true); err != nil {
			return err
		}
	}
	if s.report != "" {
		return writeHTML(s.report, base, other, s.compare, s.win)
	}
	return nil
}

// listAlone refuses --list with any other flag, which it would ignore,
// except --progress (a display preference, with nothing to show).
func listAlone(flags *pflag.FlagSet) error {
	var other []string
	flags.Visit(func(f *pflag.Flag) {
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
// the latest end of a run of sc: its charts would be empty. A trace's
// end is known once the run is built (windowBeforeEnd), and a run that
// ends sooner (nothing left to do) only once it is over.
func windowInRun(win sim.Window, sc *sim.Scenario) error {
	if end, why, ok := sc.KnownEnd(); ok && win.From > 0 && win.From >= end {
		return fmt.Errorf("--window-start %v: at or after the end of %s at %v (%s): the charts would be empty", win.From, sc.Name, end, why)
	}
	return nil
}

// windowBeforeEnd refuses, once a run is built and before it starts, a
// window that starts at or after the latest end of the run (a trace's
// end, which windowInRun cannot know): its charts would be empty.
func windowBeforeEnd(win sim.Window, end time.Duration) error {
	if win.From >= end {
		return fmt.Errorf("--window-start %v: at or after the end of the run at %v (a trace's last pod end, or the scenario's duration): the charts would be empty", win.From, end)
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
