package main

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"os"
	"runtime/debug"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/schedq/schedq/kube/sim"
)

// meminfo is where the machine's available memory is read (a variable
// for tests).
var meminfo = "/proc/meminfo"

// memAvailable reads MemAvailable from meminfo, in bytes; 0 if it cannot.
func memAvailable() int64 {
	f, err := os.Open(meminfo)
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "MemAvailable:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			if err != nil {
				return 0
			}
			return kb << 10
		}
	}
	return 0
}

// memoryLimit is --memory-limit: the memory a run may take, a quantity
// such as 8Gi; unset, the machine's available memory.
type memoryLimit struct {
	bytes int64
	set   bool
	text  string // as given, for messages
}

func (m *memoryLimit) String() string {
	if !m.set {
		return ""
	}
	return strconv.FormatInt(m.bytes, 10)
}
func (m *memoryLimit) Type() string { return "bytes" }
func (m *memoryLimit) Set(s string) error {
	q, err := resource.ParseQuantity(s)
	if err != nil || q.Sign() <= 0 {
		return fmt.Errorf("%q is not a positive quantity of bytes such as 8Gi or 500Mi", s)
	}
	// Past an int64, q.Value() wraps round (to 0, no limit; or to a
	// small one).
	if q.Cmp(*resource.NewQuantity(math.MaxInt64, resource.BinarySI)) > 0 {
		return fmt.Errorf("%q is more than %d bytes, the largest limit", s, int64(math.MaxInt64))
	}
	m.bytes, m.set, m.text = q.Value(), true, s
	return nil
}

// checkMemory estimates the memory the run of sc takes before it is
// built: above the limit (--memory-limit, or the machine's available
// memory) it is refused, above half of it a warning goes to stderr.
// Without a limit (no /proc/meminfo), nothing is checked.
func checkMemory(stderr io.Writer, sc *sim.Scenario, limit memoryLimit) error {
	est, nodes, pods := sc.MemoryEstimate()
	avail, source := limit.bytes, "--memory-limit"
	if !limit.set {
		avail, source = memAvailable(), "available on this machine (MemAvailable)"
	}
	if avail <= 0 {
		return nil
	}
	limitText := size(avail)
	if limit.set {
		limitText = limit.text // as given: size rounds up to whole MiB
	}
	need := fmt.Sprintf("scenario %s needs about %s of memory (%d nodes × %d KiB + %d pods × %d KiB)",
		sc.Name, size(est), nodes, sim.MemoryPerNode>>10, pods, sim.MemoryPerPod>>10)
	switch {
	case est > avail:
		return fmt.Errorf("%s, more than the %s %s; to run it anyway, give --memory-limit %s or more", need, limitText, source, size(est))
	case est > avail/2:
		fmt.Fprintf(stderr, "schedq: warning: %s, more than half the %s %s\n", need, limitText, source)
	}
	return nil
}

// size prints bytes in MiB or GiB.
func size(b int64) string {
	if b >= 1<<30 {
		return fmt.Sprintf("%.1fGi", float64(b)/(1<<30))
	}
	return fmt.Sprintf("%dMi", (b+(1<<20)-1)>>20)
}

// gcBudget is the memory a run may grow to before the simulator's tuned
// garbage collection falls back to Go's default (see gcPercent), and the
// soft memory limit it keeps (see followGC): about 1.2 GiB of peak
// resident memory at 50,000 nodes × 100,000 pods.
const gcBudget = 1200 << 20

// budgetOf is the budget of a run whose memory limit (checkMemory's) is
// limit, 0 if none: gcBudget, or half the limit if that is less.
func budgetOf(limit int64) int64 {
	if limit > 0 {
		return min(gcBudget, limit/2)
	}
	return gcBudget
}

// gcPercent is the GOGC a run of a scenario estimated at est bytes gets
// (and, once running, a run whose live heap is est bytes, with a floor of
// its own: followGC): the heap may grow by what is left of the budget
// (budgetOf the memory limit) over est, as a percentage of est, from Go's
// default of 100 up to gcCeiling. A simulation is a batch job whose
// allocation rate is high and whose live heap is small next to the
// machine: at 5,000 nodes and 10,000 pods (about 70 MiB) it collects a
// quarter as often, which saves about a quarter of the CPU for a peak of
// about 400 MiB instead of 200; from about 600 MiB up (50,000 × 100,000
// is about 700 MiB) it keeps the default, so that large runs stay within
// their memory. limit is the limit checkMemory used (0 if none).
func gcPercent(est, limit int64) int {
	budget := budgetOf(limit)
	return percentOf(est, budget, 100, gcCeiling(est, budget))
}

// gcCeiling is the largest GOGC of a run estimated at est bytes: 400 if
// its heap at that GOGC would stay within the budget, so that a small run
// does not take the whole budget; else none, as the budget bounds the
// heap of a larger one (percentOf reaches no further), which then starts
// collecting only once its heap nears the budget, not while the cluster
// is built.
func gcCeiling(est, budget int64) int {
	if 5*est <= budget {
		return 400
	}
	return math.MaxInt32
}

// percentOf is the GOGC of a heap of est bytes that may grow to budget,
// at least floor and at most ceil.
func percentOf(est, budget int64, floor, ceil int) int {
	if est <= 0 {
		return ceil
	}
	return int(min(max(100*(budget-est)/est, int64(floor)), int64(ceil)))
}

// tuneGC sets the garbage collector's GOGC and soft memory limit for a
// run of sc (followGC), until the returned stop; unless the GOGC
// environment variable was set, which then decides alone. A GOMEMLIMIT
// environment variable, if set, stays the memory limit and is the
// budget, if less than budgetOf's.
func tuneGC(sc *sim.Scenario, limit memoryLimit) (stop func()) {
	if _, set := os.LookupEnv("GOGC"); set {
		return func() {}
	}
	est, _, _ := sc.MemoryEstimate()
	avail := limit.bytes
	if !limit.set {
		avail = memAvailable()
	}
	budget := budgetOf(avail)
	if _, set := os.LookupEnv("GOMEMLIMIT"); set {
		return followGC(est, min(budget, debug.SetMemoryLimit(-1)), false)
	}
	return followGC(est, budget, true)
}
