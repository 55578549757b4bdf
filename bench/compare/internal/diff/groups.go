package diff

import (
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/schedq/schedq/bench/compare/internal/schedqdrv"
	"github.com/schedq/schedq/bench/compare/internal/upstream"
)

// RunGroups is Run with pod groups: lone pods p0..p3 and members m0..m5 of
// the gangs g0..g2 (min 1), each with the fixed priority of its group.
// The documented differences are excluded by rule, not by case:
//   - upstream keeps one "last popped" slot, so nothing is popped, and no
//     lone pod's attempt ends (upstream then loses the group's members),
//     while a group attempt is in flight;
//   - upstream backs a rejected group off where schedq parks it, so a group
//     attempt ends in success or an error, never a rejection;
//   - members are never gated (upstream leaves a group gated when its only
//     gated member goes), and their priority is their group's (upstream
//     refuses a mismatch).
func RunGroups(seed uint64, n int, check func(*schedqdrv.Driver) error) Result {
	r := rand.New(rand.NewPCG(seed, seed^0x5851f42d4c957f2d))
	opts := backoffs[seed%uint64(len(backoffs))]
	opts.Groups = true
	up := upstream.New(opts)
	defer up.Close()
	sq := schedqdrv.New(opts)

	lone := []string{"p0", "p1", "p2", "p3"}
	members := []string{"m0", "m1", "m2", "m3", "m4", "m5"}
	groupOf := func(m string) (string, int32) {
		i := int(m[1]-'0') % 3
		return fmt.Sprintf("g%d", i), int32(i*10 + 5)
	}
	all := append(append([]string{}, lone...), members...)
	known, inflight, groupKnown := map[string]bool{}, map[string]bool{}, map[string]bool{}
	flyingGroup := ""
	var log []string
	for step := range n {
		var op string
		switch k := r.IntN(13); {
		case k < 2:
			i := r.IntN(len(lone))
			name := lone[i]
			if known[name] || inflight[name] {
				continue
			}
			op = "Add " + name
			known[name] = true
			up.AddLabeled(name, prio(i), nil)
			sq.AddLabeled(name, prio(i), nil)
		case k < 4:
			name := members[r.IntN(len(members))]
			if known[name] || inflight[name] {
				continue
			}
			g, p := groupOf(name)
			op = fmt.Sprintf("AddMember %s %s", name, g)
			known[name] = true
			up.AddMember(name, g, p)
			sq.AddMember(name, g, p)
		case k < 5:
			g := fmt.Sprintf("g%d", r.IntN(3))
			if groupKnown[g] {
				continue
			}
			groupKnown[g] = true
			op = "AddPodGroup " + g
			up.AddPodGroup(g, 1, int32((g[1]-'0')*10+5))
			sq.AddPodGroup(g, 1, int32((g[1]-'0')*10+5))
		case k < 7:
			if flyingGroup != "" {
				continue
			}
			a, okA := up.Pop()
			b, okB := sq.Pop()
			op = fmt.Sprintf("Pop -> upstream %q, schedq %q", a, b)
			if okA != okB || a != b {
				log = append(log, op)
				return Result{step, fmt.Sprintf("step %d: Pop differs: upstream %q, schedq %q\n%s", step, a, b, tail(log))}
			}
			if g, ok := strings.CutPrefix(a, "group:"); ok {
				flyingGroup = g
				for _, m := range members {
					if mg, _ := groupOf(m); mg == g && up.Where(m) == upstream.InFlight {
						inflight[m] = true
					}
				}
			} else if okA {
				inflight[a] = true
			}
		case k < 8:
			if flyingGroup == "" {
				continue
			}
			g := flyingGroup
			flyingGroup = ""
			for _, m := range members {
				if mg, _ := groupOf(m); mg == g {
					delete(inflight, m)
				}
			}
			if r.IntN(2) == 0 {
				op = "FailGroup error " + g
				up.FailGroup(g, nil)
				sq.FailGroup(g, nil)
			} else {
				op = "DoneGroup " + g
				up.DoneGroup(g)
				sq.DoneGroup(g)
				for _, m := range members {
					if mg, _ := groupOf(m); mg == g && up.Where(m) == upstream.Absent {
						delete(known, m)
					}
				}
			}
		case k < 9:
			name := lone[r.IntN(len(lone))]
			if !inflight[name] || flyingGroup != "" {
				continue
			}
			delete(inflight, name)
			if r.IntN(2) == 0 {
				op = "FailError " + name
				up.FailError(name)
				sq.FailError(name)
			} else {
				op = "FailUnschedulable " + name
				up.FailUnschedulable(name, []string{upstream.PluginA})
				sq.FailUnschedulable(name, []string{upstream.PluginA})
			}
		case k < 10:
			name := lone[r.IntN(len(lone))]
			if !inflight[name] || flyingGroup != "" {
				continue
			}
			delete(inflight, name)
			delete(known, name)
			op = "Done " + name
			up.Done(name)
			sq.Done(name)
		case k < 11:
			name := all[r.IntN(len(all))]
			if !known[name] {
				continue
			}
			delete(known, name)
			op = "Delete " + name
			up.Delete(name)
			sq.Delete(name)
		case k < 12:
			e, p := evs[r.IntN(len(evs))], policies[r.IntN(len(policies))]
			op = fmt.Sprintf("MoveAll %s %s", e, p)
			up.MoveAll(e, p)
			sq.MoveAll(e, p)
		default:
			op = stepFlush(up, sq, steps[r.IntN(len(steps))])
		}
		log = append(log, op)
		if msg := compare(up, sq, all, check); msg != "" {
			return Result{step, fmt.Sprintf("step %d: %s\n%s", step, msg, tail(log))}
		}
	}
	return Result{Steps: n}
}
