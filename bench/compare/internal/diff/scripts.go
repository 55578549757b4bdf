package diff

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/schedq/schedq/bench/compare/internal/schedqdrv"
	"github.com/schedq/schedq/bench/compare/internal/upstream"
)

// RunScript replays a written operation sequence on both queues, as Run
// does a random one, and returns the first disagreement, or "". The
// operations, separated by ";" or new lines:
//
//	add NAME [PRIORITY] [group=G]   a new pod (priority 0), a member of G
//	podgroup G MIN                  the gang PodGroup G (Options.Groups)
//	fail group=G error|PLUGINS      the attempt of group G failed
//	pop                        both must pop the same pod, or nothing
//	fail NAME error            the attempt of NAME failed with an error
//	fail NAME PLUGIN[,PLUGIN]  the attempt was rejected by those plugins
//	done NAME | delete NAME | activate NAME
//	move EVENT POLICY          e.g. move NodeAdd queue
//	step DURATION              e.g. step 1s
//	flush                      the backoff flush, then the leftover flush
//
// After every operation, every pod named so far must be in the same place
// on both. A malformed script is an error.
func RunScript(o upstream.Options, script string) (string, error) {
	up := upstream.New(o)
	defer up.Close()
	sq := schedqdrv.New(o)
	var names []string
	var log []string
	for _, line := range strings.FieldsFunc(script, func(r rune) bool { return r == ';' || r == '\n' }) {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		log = append(log, strings.Join(f, " "))
		arg := func(i int) (string, error) {
			if i >= len(f) {
				return "", fmt.Errorf("%q: missing argument %d", line, i)
			}
			return f[i], nil
		}
		name, _ := arg(1)
		group := ""
		if g, ok := strings.CutPrefix(f[len(f)-1], "group="); ok && len(f) > 1 {
			group, f = g, f[:len(f)-1]
		}
		switch f[0] {
		case "add":
			if name == "" {
				return "", fmt.Errorf("%q: add needs a name", line)
			}
			prio := 0
			if len(f) > 2 {
				p, err := strconv.Atoi(f[2])
				if err != nil {
					return "", fmt.Errorf("%q: priority: %v", line, err)
				}
				prio = p
			}
			names = append(names, name)
			if group != "" {
				up.AddMember(name, group, int32(prio))
				sq.AddMember(name, group, int32(prio))
				break
			}
			up.AddLabeled(name, int32(prio), nil)
			sq.AddLabeled(name, int32(prio), nil)
		case "podgroup":
			min, err := arg(2)
			if err != nil {
				return "", err
			}
			n, err := strconv.Atoi(min)
			if err != nil {
				return "", fmt.Errorf("%q: min: %v", line, err)
			}
			up.AddPodGroup(name, int32(n), 0)
			sq.AddPodGroup(name, int32(n), 0)
		case "pop":
			a, okA := up.Pop()
			b, okB := sq.Pop()
			if okA != okB || a != b {
				return fmt.Sprintf("%s: Pop differs: upstream %q, schedq %q", strings.Join(log, "; "), a, b), nil
			}
		case "fail":
			if group != "" {
				var ps []string
				if name != "error" {
					ps = strings.Split(name, ",")
				}
				_ = up.FailGroup(group, ps)
				_ = sq.FailGroup(group, ps)
				break
			}
			how, err := arg(2)
			if err != nil {
				return "", err
			}
			if how == "error" {
				_ = up.FailError(name)
				_ = sq.FailError(name)
			} else {
				ps := strings.Split(how, ",")
				_ = up.FailUnschedulable(name, ps)
				_ = sq.FailUnschedulable(name, ps)
			}
		case "done":
			up.Done(name)
			sq.Done(name)
		case "delete":
			up.Delete(name)
			sq.Delete(name)
		case "activate":
			up.Activate(name)
			sq.Activate(name)
		case "move":
			policy, err := arg(2)
			if err != nil {
				return "", err
			}
			up.MoveAll(upstream.Event(name), upstream.HintPolicy(policy))
			sq.MoveAll(upstream.Event(name), upstream.HintPolicy(policy))
		case "step":
			d, err := time.ParseDuration(name)
			if err != nil {
				return "", fmt.Errorf("%q: %v", line, err)
			}
			up.Step(d)
			sq.Step(d)
		case "flush":
			up.FlushBackoff()
			up.FlushUnschedulable()
			sq.Flush()
		default:
			return "", fmt.Errorf("%q: unknown operation %q", line, f[0])
		}
		for _, n := range names {
			if a, b := up.Where(n), sq.Where(n); a != b {
				return fmt.Sprintf("%s: %s is %s upstream, %s in schedq", strings.Join(log, "; "), n, a, b), nil
			}
		}
		if err := sq.Violation(); err != nil {
			return fmt.Sprintf("%s: schedq check: %v", strings.Join(log, "; "), err), nil
		}
	}
	return "", nil
}
