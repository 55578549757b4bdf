package schedq

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The golden scripts in testdata/scripts drive a Core through a small
// language of operations and check what each operation answers and where
// every item is afterwards, in the manner of raft's interaction tests.
// Each file is a list of blocks:
//
//	operation arguments...
//	----
//	expected output
//	<blank line>
//
// Lines starting with # between blocks are comments. Run
//
//	go test -run TestScripts -update .
//
// to rewrite the expected outputs, then read the diff: a changed output is
// a changed behaviour.
var update = flag.Bool("update", false, "rewrite the expected outputs of testdata/scripts")

// The operations (all times are virtual; the clock starts at t0):
//
//	config [popfrombackoff=off] [hints=off] [backoff=off] [groups] [budget] [initial=D] [max=D]
//	                           a fresh Core; must come first if used
//	add NAME [prio=N] [label=L] [gated] [group=G]
//	update NAME [prio=N] [label=L] [gated]   the new version (fields not named: zero)
//	delete NAME
//	pop                        the next entity, and its attempt's cycle
//	done NAME | done group=G [placed=I[,I]]
//	                           Done, or DoneMembers of the members at indexes I
//	fail NAME error | fail NAME PLUGIN[,PLUGIN] [pending=P]
//	                           Requeue of NAME's (or group=G's) last attempt
//	park NAME [prio=N] [label=L] [group=G] error|PLUGIN[,PLUGIN] [pending=P]
//	                           Park of a new item, as failed so
//	move EVENT [new=V|room=N]  EVENT: MachineAdd, MachineTaint, PlacedAdd,
//	                           VolumeAdd, GateGone, Relabel; V an int or a
//	                           string; room=N a machine with room for N items
//	                           (its budget, under config budget)
//	activate NAME...
//	podgroup G min=N [prio=P]  | delete-group G
//	step DURATION              the clock moves; nothing runs
//	tick                       Core.Tick at the current time
//	flush-backoff | flush-leftover   one flush, now
func TestScripts(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "scripts", "*.txt"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no scripts: %v", err)
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txt"), func(t *testing.T) {
			runScriptFile(t, file)
		})
	}
}

type scriptBlock struct {
	comments []string // the lines before the operation
	op       string
	want     string
	line     int
}

func parseScript(t *testing.T, file string) []scriptBlock {
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(data), "\n")
	var blocks []scriptBlock
	var cur scriptBlock
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		switch {
		case strings.HasPrefix(l, "#") || strings.TrimSpace(l) == "":
			cur.comments = append(cur.comments, l)
			continue
		}
		cur.op, cur.line = strings.TrimSpace(l), i+1
		if i+1 >= len(lines) || lines[i+1] != "----" {
			t.Fatalf("%s:%d: %q is not followed by ----", file, i+1, l)
		}
		i += 2
		var out []string
		for ; i < len(lines) && lines[i] != ""; i++ {
			out = append(out, lines[i])
		}
		cur.want = strings.Join(out, "\n")
		blocks = append(blocks, cur)
		cur = scriptBlock{}
	}
	return blocks
}

func runScriptFile(t *testing.T, file string) {
	blocks := parseScript(t, file)
	s := &scriptRun{t: t, now: t0, attempts: map[string]Attempt[string, job]{}, items: map[string]job{}}
	var out strings.Builder
	failed := false
	for i, b := range blocks {
		got, err := s.run(b.op)
		if err != nil {
			t.Fatalf("%s:%d: %s: %v", file, b.line, b.op, err)
		}
		if got != b.want && !*update {
			t.Errorf("%s:%d: %s\ngot:\n%s\nwant:\n%s", file, b.line, b.op, got, b.want)
			failed = true
		}
		blocks[i].want = got
		for _, c := range b.comments {
			out.WriteString(c + "\n")
		}
		fmt.Fprintf(&out, "%s\n----\n%s\n\n", b.op, got)
	}
	if *update {
		text := strings.TrimRight(out.String(), "\n") + "\n"
		if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if failed {
		t.Log("if the new outputs are right, rewrite them with: go test -run TestScripts -update .")
	}
}

// scriptRun is the state of one script: the Core, its clock, the attempts
// popped so far (by item name, or "group=G") and the items named so far.
type scriptRun struct {
	t        *testing.T
	c        *Core[string, job]
	now      time.Time
	attempts map[string]Attempt[string, job]
	items    map[string]job
	names    []string // in the order first named
}

var scriptEvents = map[string]Event{
	"MachineAdd": evMachineAdd, "MachineTaint": evMachineTaint, "PlacedAdd": evPlacedAdd,
	"VolumeAdd": evVolumeAdd, "GateGone": evGateGone, "Relabel": evLabel,
}

func (s *scriptRun) core() *Core[string, job] {
	if s.c == nil {
		c, err := NewCore(testConfig())
		if err != nil {
			s.t.Fatal(err)
		}
		s.c = c
	}
	return s.c
}

// args splits "k=v" arguments from plain ones.
func args(fs []string) (kv map[string]string, plain []string) {
	kv = map[string]string{}
	for _, f := range fs {
		if k, v, ok := strings.Cut(f, "="); ok {
			kv[k] = v
		} else {
			plain = append(plain, f)
		}
	}
	return kv, plain
}

func (s *scriptRun) name(n string) {
	if !slices.Contains(s.names, n) {
		s.names = append(s.names, n)
	}
}

func (s *scriptRun) jobOf(name string, kv map[string]string, plain []string) (job, error) {
	j := job{name: name, label: kv["label"], group: kv["group"], gated: slices.Contains(plain, "gated")}
	if p, ok := kv["prio"]; ok {
		n, err := strconv.Atoi(p)
		if err != nil {
			return j, fmt.Errorf("prio: %v", err)
		}
		j.prio = int32(n)
	}
	return j, nil
}

// run executes one operation and returns its output: what it answered,
// then where every item named so far is.
func (s *scriptRun) run(op string) (string, error) {
	fs := strings.Fields(op)
	kv, plain := args(fs[1:])
	arg := func(i int) (string, error) {
		if i >= len(plain) {
			return "", fmt.Errorf("missing argument")
		}
		return plain[i], nil
	}
	var res string
	switch fs[0] {
	case "config":
		if s.c != nil {
			return "", errors.New("config must come first")
		}
		cfg := testConfig()
		for _, p := range plain {
			switch p {
			case "groups":
				groupsOn(&cfg)
			case "budget": // a machine event offers the room of the machine it carries
				cfg.Budget = func(_ Event, _, newObj any) (Budget[job], bool) {
					m, ok := newObj.(*machine)
					return m, ok
				}
			default:
				return "", fmt.Errorf("unknown option %q", p)
			}
		}
		for k, v := range kv {
			switch k {
			case "popfrombackoff":
				cfg.DisablePopFromBackoff = v == "off"
			case "hints":
				cfg.DisableQueueingHints = v == "off"
			case "backoff":
				cfg.DisableBackoff = v == "off"
			case "initial", "max":
				d, err := time.ParseDuration(v)
				if err != nil {
					return "", err
				}
				if k == "initial" {
					cfg.InitialBackoff = d
				} else {
					cfg.MaxBackoff = d
				}
			default:
				return "", fmt.Errorf("unknown option %q", k)
			}
		}
		c, err := NewCore(cfg)
		if err != nil {
			return "", err
		}
		s.c = c
		return "ok", nil
	case "add", "update":
		n, err := arg(0)
		if err != nil {
			return "", err
		}
		j, err := s.jobOf(n, kv, plain[1:])
		if err != nil {
			return "", err
		}
		s.name(n)
		if fs[0] == "add" {
			s.core().Add(j, s.now)
		} else {
			s.core().Update(s.items[n], j, s.now)
		}
		s.items[n] = j
		res = "ok"
	case "delete":
		n, err := arg(0)
		if err != nil {
			return "", err
		}
		res = errText(s.core().Delete(n, s.now))
	case "pop":
		a, ok := s.core().Pop(s.now)
		switch {
		case !ok:
			res = "nothing poppable"
		case a.Group != "":
			s.attempts["group="+a.Group] = a
			res = fmt.Sprintf("popped group %s %v, cycle %d", a.Group, memberNames(a), a.Cycle)
		default:
			s.attempts[a.Key] = a
			res = fmt.Sprintf("popped %s, cycle %d", a.Key, a.Cycle)
		}
	case "done", "fail":
		who := kv["group"]
		if who != "" {
			who = "group=" + who
		} else if who, _ = arg(0); who == "" {
			return "", errors.New("missing name")
		}
		a, ok := s.attempts[who]
		if !ok {
			return "", fmt.Errorf("%s was never popped", who)
		}
		if fs[0] == "done" {
			res = errText(s.done(a, kv["placed"]))
			break
		}
		res = errText(s.core().Requeue(a, failureOf(plain, kv), s.now))
	case "park":
		n, err := arg(0)
		if err != nil {
			return "", err
		}
		if len(plain) < 2 {
			return "", errors.New("park: missing error or plugins")
		}
		j, err := s.jobOf(n, kv, nil)
		if err != nil {
			return "", err
		}
		s.name(n)
		s.items[n] = j
		res = errText(s.core().Park(j, failureOf(plain, kv), s.now))
	case "move":
		n, err := arg(0)
		if err != nil {
			return "", err
		}
		ev, ok := scriptEvents[n]
		if !ok {
			return "", fmt.Errorf("unknown event %q", n)
		}
		var obj any
		if v, ok := kv["room"]; ok {
			n, err := strconv.Atoi(v)
			if err != nil {
				return "", fmt.Errorf("room: %v", err)
			}
			obj = &machine{size: n}
		} else if v, ok := kv["new"]; ok {
			if i, err := strconv.Atoi(v); err == nil {
				obj = i
			} else {
				obj = v
			}
		}
		s.core().Move(ev, nil, obj, nil, s.now)
		res = "ok"
	case "activate":
		s.core().Activate(plain, s.now)
		res = "ok"
	case "podgroup":
		n, err := arg(0)
		if err != nil {
			return "", err
		}
		min, _ := strconv.Atoi(kv["min"])
		prio, _ := strconv.Atoi(kv["prio"])
		res = errText(s.core().SetGroup(n, GroupSpec{MinCount: min, Priority: int32(prio)}, s.now))
	case "delete-group":
		n, err := arg(0)
		if err != nil {
			return "", err
		}
		res = errText(s.core().DeleteGroup(n, s.now))
	case "step":
		d, err := time.ParseDuration(fs[1])
		if err != nil {
			return "", err
		}
		s.now = s.now.Add(d)
		res = "now +" + s.now.Sub(t0).String()
	case "tick":
		s.core().Tick(s.now)
		res = "ok"
	case "flush-backoff":
		s.core().flushBackoff(s.now)
		res = "ok"
	case "flush-leftover":
		s.core().flushLeftover(s.now)
		res = "ok"
	default:
		return "", fmt.Errorf("unknown operation %q", fs[0])
	}
	if err := s.core().checkInvariants(); err != nil {
		return "", fmt.Errorf("invariants: %v", err)
	}
	if p := s.places(); p != "" {
		res += "\n" + p
	}
	return res, nil
}

func errText(err error) string {
	if err == nil {
		return "ok"
	}
	for _, e := range []error{ErrNotFound, ErrNotInFlight, ErrAlreadyQueued, ErrInvalidGroup, ErrClosed} {
		if errors.Is(err, e) {
			return "error: " + e.Error()
		}
	}
	return "error: " + err.Error()
}

// done ends attempt a: Done, or DoneMembers of the indexes in placed.
func (s *scriptRun) done(a Attempt[string, job], placed string) error {
	if placed == "" {
		return s.core().Done(a, s.now)
	}
	var is []int
	for _, f := range strings.Split(placed, ",") {
		i, err := strconv.Atoi(f)
		if err != nil {
			return err
		}
		is = append(is, i)
	}
	return s.core().DoneMembers(a, is, "", s.now)
}

// failureOf reads a failure: the last plain word, "error" or plugins, and
// pending=P.
func failureOf(plain []string, kv map[string]string) Failure {
	var f Failure
	if how := plain[len(plain)-1]; how != "error" {
		f.RejectedBy = strings.Split(how, ",")
	}
	if p := kv["pending"]; p != "" {
		f.WaitingOn = strings.Split(p, ",")
	}
	return f
}

// places lists where each item named so far is, grouped by place, with
// its failure counts (u: unschedulable, e: consecutive errors) and backoff
// expiry where it has them.
func (s *scriptRun) places() string {
	by := map[Location][]string{}
	var order []Location
	for _, n := range s.names {
		// Explain gives a group member its group's counts and expiry.
		x, err := s.c.Explain(n, s.now)
		ok := err == nil
		loc := x.Location
		if !ok {
			loc = absent
		}
		desc := n
		if ok && (x.UnschedulableCount > 0 || x.ConsecutiveErrors > 0) {
			desc += fmt.Sprintf("(u%d e%d)", x.UnschedulableCount, x.ConsecutiveErrors)
		}
		if ok && !x.BackoffExpiry.IsZero() && loc == InBackoff {
			desc += fmt.Sprintf("[until +%v]", x.BackoffExpiry.Sub(t0))
		}
		if _, seen := by[loc]; !seen {
			order = append(order, loc)
		}
		by[loc] = append(by[loc], desc)
	}
	slices.Sort(order)
	var lines []string
	for _, l := range order {
		name := l.String()
		if l == absent {
			name = "absent"
		}
		lines = append(lines, fmt.Sprintf("  %s: %s", name, strings.Join(by[l], " ")))
	}
	return strings.Join(lines, "\n")
}
