package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
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
	m.bytes, m.set = q.Value(), true
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
	need := fmt.Sprintf("scenario %s needs about %s of memory (%d nodes × %d KiB + %d pods × %d KiB)",
		sc.Name, size(est), nodes, sim.MemoryPerNode>>10, pods, sim.MemoryPerPod>>10)
	switch {
	case est > avail:
		return fmt.Errorf("%s, more than the %s %s; to run it anyway, give --memory-limit %s or more", need, size(avail), source, size(est))
	case est > avail/2:
		fmt.Fprintf(stderr, "schedq: warning: %s, more than half the %s %s\n", need, size(avail), source)
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

// gcBudget is the heap a run may grow to before the simulator's tuned
// garbage collection falls back to Go's default (see gcPercent).
const gcBudget = 1 << 30

// gcPercent is the GOGC a run of a scenario estimated at est bytes gets
// (and, once running, a run whose live heap is est bytes, with a floor of
// its own: followGC): the heap may grow by what is left of budget (gcBudget, or half the
// memory limit if that is less), as a percentage of est, between Go's
// default of 100 and 400. A simulation is a batch job whose allocation
// rate is high and whose live heap is small next to the machine: at 5,000
// nodes and 10,000 pods (about 70 MiB) it collects a quarter as often,
// which saves about a quarter of the CPU for a peak of about 400 MiB
// instead of 200; from about 500 MiB up (50,000 × 100,000 is about 700
// MiB) it keeps the default, so that large runs stay within their memory.
// limit is the limit checkMemory used (0 if none).
func gcPercent(est, limit int64) int { return percentOf(est, limit, 100) }

// percentOf is gcPercent with floor as its least GOGC.
func percentOf(est, limit int64, floor int) int {
	budget := int64(gcBudget)
	if limit > 0 {
		budget = min(budget, limit/2)
	}
	if est <= 0 {
		return 400
	}
	return int(min(max(100*(budget-est)/est, int64(floor)), 400))
}

// tuneGC sets the garbage collector's GOGC for a run of sc (gcPercent),
// then after each collection from the live heap (followGC), until the
// returned stop; unless the GOGC environment variable was set, which
// then decides.
func tuneGC(sc *sim.Scenario, limit memoryLimit) (stop func()) {
	if _, set := os.LookupEnv("GOGC"); set {
		return func() {}
	}
	est, _, _ := sc.MemoryEstimate()
	avail := limit.bytes
	if !limit.set {
		avail = memAvailable()
	}
	return followGC(est, avail)
}
