package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/schedq/schedq/kube/app"
	"github.com/schedq/schedq/kube/profile"
	"github.com/schedq/schedq/kube/sim"
)

// TestSchedulerFlagsDocumented: docs/scheduler.md lists every flag of
// "schedq scheduler", so the page cannot fall behind --help.
func TestSchedulerFlagsDocumented(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "..", "docs", "scheduler.md"))
	if err != nil {
		t.Fatal(err)
	}
	var sched *pflag.FlagSet
	for _, c := range newRoot(&bytes.Buffer{}, &bytes.Buffer{}).Commands() {
		if c.Name() == "scheduler" {
			c.InitDefaultHelpFlag()
			c.InitDefaultVersionFlag()
			sched = c.Flags()
		}
	}
	if sched == nil {
		t.Fatal("no scheduler command")
	}
	// A flag is listed in the first cell of a row of the flags' table: a
	// mention elsewhere (another table, a paragraph) is no entry.
	var firstCells strings.Builder
	for line := range strings.Lines(string(doc)) {
		if cells := strings.Split(line, "|"); len(cells) > 2 && strings.HasPrefix(line, "| ") {
			firstCells.WriteString(cells[1] + "\n")
		}
	}
	n := 0
	sched.VisitAll(func(f *pflag.Flag) {
		n++
		if !strings.Contains(firstCells.String(), "`--"+f.Name+"`") {
			t.Errorf("docs/scheduler.md does not list --%s in its table of flags", f.Name)
		}
	})
	if n < 17 {
		t.Fatalf("only %d flags seen", n)
	}
}

// TestSimulatorReferenceComplete: docs/simulator.md lists every built-in
// scenario in its table, every --compare key, every flag of simulate and
// every scenario field in its reference, so the page cannot fall behind
// the code.
func TestSimulatorReferenceComplete(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "..", "docs", "simulator.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	for _, name := range sim.Builtins() {
		if !strings.Contains(doc, "\n| "+name+" |") && !strings.Contains(doc, "\n| "+name+" (default) |") {
			t.Errorf("the scenario table has no row for %s", name)
		}
	}
	_, keys, ok := strings.Cut(doc, "`--compare key=value` accepts")
	keys, _, _ = strings.Cut(keys, "\n\n")
	if !ok {
		t.Fatal("no list of --compare keys (`--compare key=value` accepts ...)")
	}
	for _, k := range sim.Settable() {
		if !strings.Contains(keys, "`"+k+"`") {
			t.Errorf("the --compare keys lack %s", k)
		}
	}
	for _, c := range newRoot(&bytes.Buffer{}, &bytes.Buffer{}).Commands() {
		if c.Name() == "simulate" {
			c.Flags().VisitAll(func(f *pflag.Flag) {
				if !strings.Contains(doc, "`--"+f.Name) && !strings.Contains(doc, "`-"+f.Shorthand+" ") {
					t.Errorf("the flag table lacks --%s", f.Name)
				}
			})
		}
	}
	_, ref, ok := strings.Cut(doc, "## Scenario reference")
	if !ok {
		t.Fatal("no scenario reference")
	}
	n := 0
	for _, path := range scenarioFields(reflect.TypeOf(sim.Scenario{}), "", map[reflect.Type]bool{}) {
		n++
		if !documented(ref, path) {
			t.Errorf("the scenario reference lacks %s", strings.Join(path, "."))
		}
	}
	if n < 60 {
		t.Fatalf("only %d scenario fields seen", n)
	}
}

// scenarioFields lists the yaml paths of a struct's fields, each as its
// segments (a list's field is "pods[]"). A struct type is walked once:
// its fields are documented where it first appears (a node group under
// nodes[], not again under events[].addNodes).
func scenarioFields(t reflect.Type, prefix string, seen map[reflect.Type]bool) [][]string {
	seen[t] = true
	var out [][]string
	for i := range t.NumField() {
		f := t.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if !f.IsExported() || name == "-" {
			continue
		}
		ft := f.Type
		if opts == "inline" {
			out = append(out, scenarioFields(ft, prefix, seen)...)
			continue
		}
		for ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		key := name
		if ft.Kind() == reflect.Slice {
			key += "[]"
			ft = ft.Elem()
		}
		path := strings.TrimPrefix(prefix+"."+key, ".")
		out = append(out, strings.Split(path, "."))
		if ft.Kind() == reflect.Struct && ft != reflect.TypeOf(time.Duration(0)) && !seen[ft] {
			out = append(out, scenarioFields(ft, path, seen)...)
		}
	}
	return out
}

// documented reports whether a line of the reference names the field:
// the whole path in backquotes, or one of its ancestors in backquotes and
// the field's own key in backquotes.
func documented(ref string, path []string) bool {
	leaf := "`" + strings.TrimSuffix(path[len(path)-1], "[]") + "`"
	for line := range strings.SplitSeq(ref, "\n") {
		for i := len(path); i >= 1; i-- {
			anc := "`" + strings.Join(path[:i], ".")
			bare := strings.TrimSuffix(anc, "[]") // scheduler.disablePlugins for scheduler.disablePlugins[]
			if !strings.Contains(line, anc+"`") && !strings.Contains(line, anc+".") && !strings.Contains(line, bare+"`") && !strings.Contains(line, bare+"[") {
				continue
			}
			if i == len(path) || strings.Contains(line, leaf) || strings.Contains(line, "`"+path[len(path)-1]+"`") {
				return true
			}
		}
	}
	return false
}

// TestLibraryWalkthroughOutput: the output that docs/library.md shows
// for go run ./examples/walkthrough is what the program prints, line for
// line. It builds the walkthrough (a package of the root module, without
// dependencies), so it is skipped with -short or without a go command.
func TestLibraryWalkthroughOutput(t *testing.T) {
	goCmd, err := exec.LookPath("go")
	if testing.Short() || err != nil {
		t.Skip("needs the go command (and no -short)")
	}
	root := filepath.Join("..", "..", "..")
	b, err := os.ReadFile(filepath.Join(root, "docs", "library.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, block, ok := strings.Cut(string(b), "$ go run ./examples/walkthrough        # prints, among its steps:\n")
	block, _, _ = strings.Cut(block, "```")
	if !ok || block == "" {
		t.Fatal("no walkthrough output in docs/library.md")
	}
	cmd := exec.Command(goCmd, "run", "./examples/walkthrough")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go run ./examples/walkthrough: %v", err)
	}
	if !strings.Contains(string(out), block) {
		t.Fatalf("docs/library.md shows\n%s\nwhich the walkthrough does not print; it prints\n%s", block, out)
	}
}

// TestWhatIfFlagsDocumented: the flag table of docs/forecast.md's What-if
// section lists every flag of "schedq whatif", so the page cannot fall
// behind --help.
func TestWhatIfFlagsDocumented(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "..", "docs", "forecast.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), "\n## What-if\n")
	section, _, _ = strings.Cut(section, "\n## ")
	if !ok {
		t.Fatal("docs/forecast.md has no What-if section")
	}
	var table strings.Builder
	for line := range strings.SplitSeq(section, "\n") {
		if strings.HasPrefix(line, "| `-") {
			table.WriteString(line + "\n")
		}
	}
	n := 0
	for _, c := range newRoot(&bytes.Buffer{}, &bytes.Buffer{}).Commands() {
		if c.Name() != "whatif" {
			continue
		}
		c.Flags().VisitAll(func(f *pflag.Flag) {
			n++
			if !strings.Contains(table.String(), "`--"+f.Name+"`") {
				t.Errorf("the what-if flag table lacks --%s", f.Name)
			}
		})
	}
	if n < 12 {
		t.Fatalf("only %d whatif flags seen", n)
	}
}

// otherTools are flags the pages give to other programs (kubectl, kind,
// kube-apiserver, curl, valgrind, the paper's simulator), not to schedq.
var otherTools = []string{"clusterrole", "contention-profiling", "data-binary", "feature-gates", "field-selector", "image", "name", "overrides", "prefix", "runtime-config", "serviceaccount", "shuffle-pod", "tail", "tool"}

// TestDocsFlagsExist: every --flag that README.md and docs/ mention is a
// flag of a schedq command (hidden ones, deprecated or removed, included)
// or of another program the pages run, and every flag of every command is
// mentioned somewhere, so that a renamed or removed flag cannot linger in
// the pages, nor a new one go unmentioned.
func TestDocsFlagsExist(t *testing.T) {
	root := filepath.Join("..", "..", "..")
	pages, _ := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	pages = append(pages, filepath.Join(root, "README.md"))
	var all strings.Builder
	for _, p := range pages {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		all.Write(b)
	}
	text := all.String()
	known := map[string]bool{}
	for _, n := range otherTools {
		known[n] = true
	}
	for _, c := range newRoot(&bytes.Buffer{}, &bytes.Buffer{}).Commands() {
		c.InitDefaultHelpFlag()
		c.InitDefaultVersionFlag()
		c.Flags().VisitAll(func(f *pflag.Flag) {
			known[f.Name] = true
			if !regexp.MustCompile(`--` + regexp.QuoteMeta(f.Name) + `\b`).MatchString(text) {
				t.Errorf("no page mentions schedq %s --%s", c.Name(), f.Name)
			}
		})
	}
	for _, m := range regexp.MustCompile(`(?:^|[^\w-])--([a-z][a-z0-9-]*[a-z0-9])`).FindAllStringSubmatch(text, -1) {
		if !known[m[1]] {
			t.Errorf("a page mentions --%s, which no schedq command has", m[1])
			known[m[1]] = true // once
		}
	}
}

// TestSchedqSettingsDocumented: docs/scheduler.md's table of schedq's own
// settings lists every field of the file's Schedq args with its flag, and
// its example file is accepted and sets every one of them.
func TestSchedqSettingsDocumented(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "..", "docs", "scheduler.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	fields := app.SettingsFields()
	for flag, field := range fields {
		if row := "| `" + field + "` | `--" + flag + "`"; !strings.Contains(doc, row) {
			t.Errorf("docs/scheduler.md has no row %q", row)
		}
	}
	_, section, _ := strings.Cut(doc, "### schedq's own settings\n")
	_, example, ok := strings.Cut(section, "```yaml\n")
	example, _, _ = strings.Cut(example, "```")
	if !ok || example == "" {
		t.Fatal("no example file in docs/scheduler.md's schedq's own settings")
	}
	dir := t.TempDir()
	// The example's history file is on the deployment's volume: here, in
	// a directory that exists.
	example = strings.ReplaceAll(example, "/var/lib/schedq/", dir+"/")
	path := filepath.Join(dir, "sched.yaml")
	if err := os.WriteFile(path, []byte(example), 0o600); err != nil {
		t.Fatal(err)
	}
	o := app.Options{SchedulerName: "schedq", LeaderElect: true, LeaseNamespace: "kube-system", LeaseName: "schedq",
		LeaseDuration: 15 * time.Second, RenewDeadline: 10 * time.Second, RetryPeriod: 2 * time.Second, QPS: 50, Burst: 100}
	o.Config.File = path
	if err := o.Validate(); err != nil {
		t.Fatalf("the example file: %v", err)
	}
	cfg, err := profile.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	a, _, err := profile.SchedqSettings(cfg)
	if err != nil || a == nil {
		t.Fatalf("the example's settings: %+v, %v", a, err)
	}
	if unset := unsetFields(reflect.ValueOf(*a), ""); len(unset) > 0 {
		t.Errorf("the example file leaves %v unset", unset)
	}
}

// unsetFields lists the nil fields of v, a struct of pointers, maps,
// slices and structs of them, by their dotted Go names.
func unsetFields(v reflect.Value, prefix string) []string {
	var out []string
	for i := 0; i < v.NumField(); i++ {
		f, name := v.Field(i), prefix+v.Type().Field(i).Name
		switch f.Kind() {
		case reflect.Struct:
			out = append(out, unsetFields(f, name+".")...)
		case reflect.Pointer, reflect.Map, reflect.Slice:
			if f.IsNil() {
				out = append(out, name)
			}
		}
	}
	return out
}

// TestFlagHelpMatchesBehaviour: a flag's --help says what the flag does
// now, where it once said what it did before (one case per help that
// fell behind).
func TestFlagHelpMatchesBehaviour(t *testing.T) {
	for _, tc := range []struct {
		name, command, flag string
		want, notWant       string
	}{
		{"simulate --config runs every profile", "simulate", "config", "every one of its profiles", "whose one profile"},
		{"simulate --records takes .json", "simulate", "records", ".jsonl, .json (JSON Lines too) or .csv", "(.jsonl or .csv)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, _, err := newRoot(&bytes.Buffer{}, &bytes.Buffer{}).Find([]string{tc.command})
			if err != nil {
				t.Fatal(err)
			}
			usage := c.Flags().Lookup(tc.flag).Usage
			if !strings.Contains(usage, tc.want) || strings.Contains(usage, tc.notWant) {
				t.Errorf("--%s's help %q: want %q, not %q", tc.flag, usage, tc.want, tc.notWant)
			}
		})
	}
}
