package gpu

import (
	"cmp"
	"slices"
	"strconv"
	"strings"
)

// Class is one kind of arriving pod and its popularity.
type Class struct {
	Req Request
	P   float64 // the share of arriving pods of this kind; a Workload's sum to 1
}

// Workload is the distribution of the requests of arriving pods, against
// which fragmentation is measured.
type Workload []Class

// TypicalShare is the share of pods whose kinds make the typical
// workload: the most popular kinds are kept until they cover 95% of the
// pods, as in the paper's artifact.
const TypicalShare = 0.95

// Typical builds the workload of a list of requests: the requests are
// grouped by kind (CPU, GPU count, share and models; memory does not enter
// fragmentation), the kinds sorted by popularity (ties by kind, so that
// the result does not depend on the list's order beyond the counts), the
// most popular kept until they cover share of the pods, and their
// popularities scaled to sum to 1. Pods without GPUs count, as in the
// artifact's experiments. O(n log n) for n requests.
func Typical(reqs []Request, share float64) Workload {
	type entry struct {
		key string
		req Request
		n   int
	}
	byKey := map[string]*entry{}
	var entries []*entry
	for _, r := range reqs {
		k := kindKey(r)
		e := byKey[k]
		if e == nil {
			e = &entry{key: k, req: Request{CPU: r.CPU, Count: r.Count, Share: r.Share, Models: r.Models}}
			byKey[k] = e
			entries = append(entries, e)
		}
		e.n++
	}
	slices.SortFunc(entries, func(a, b *entry) int {
		return cmp.Or(cmp.Compare(b.n, a.n), strings.Compare(a.key, b.key))
	})
	want, got := share*float64(len(reqs)), 0
	var w Workload
	for _, e := range entries {
		if float64(got) >= want && len(w) > 0 {
			break
		}
		w = append(w, Class{Req: e.req, P: float64(e.n)})
		got += e.n
	}
	for i := range w {
		w[i].P /= float64(got)
	}
	return w
}

func kindKey(r Request) string {
	var b strings.Builder
	b.WriteString(itoa(r.CPU))
	b.WriteByte('/')
	b.WriteString(itoa(int64(r.Count)))
	b.WriteByte('/')
	b.WriteString(itoa(r.Share))
	b.WriteByte('/')
	b.WriteString(strings.Join(r.Models, "|"))
	return b.String()
}

func itoa(v int64) string { return strconv.FormatInt(v, 10) }

// FragFor is the GPU capacity of the node, in thousandths, that a pod of
// request m could not use there (the paper's F_n(m)):
//   - all the node's free GPU capacity if m asks for no GPU, if the node's
//     model does not suit m, if m's CPU does not fit in the node's free
//     CPU, or if the GPUs cannot hold m (fewer than Count GPUs with Share
//     free);
//   - otherwise the free capacity of the GPUs that each have less than
//     m.Share free (a whole-GPU pod cannot use a partly used GPU).
//
// Memory does not enter, as in the artifact. O(GPUs).
func FragFor(n *Node, m Request) int64 {
	return fragFor(n, m, n.FreeGPU())
}

// fragFor is FragFor with the node's free GPU capacity given (free): the
// GPUs that hold m's share are counted in the pass that sums the others
// (FitsGPUs: Count of them hold it). O(GPUs).
func fragFor(n *Node, m Request, free int64) int64 {
	if free == 0 || m.Count == 0 || !n.Accepts(m) || n.CPUFree < m.CPU {
		return free
	}
	var frag int64
	hold := 0
	for _, f := range n.Free {
		if f < m.Share {
			frag += f
		} else {
			hold++
		}
	}
	if hold < m.Count {
		return free
	}
	return frag
}

// Frag is the node's fragmentation against the workload: the expected
// GPU capacity, in thousandths, that the typical arriving pod could not
// use there, Σ P·FragFor, summed in the workload's order. The node's
// free capacity is summed once, not once per class. O(classes × GPUs).
func Frag(n *Node, w Workload) float64 {
	free := n.FreeGPU()
	if free == 0 {
		return 0
	}
	var f float64
	for _, c := range w {
		f += c.P * float64(fragFor(n, c.Req, free))
	}
	return f
}

// Stats are a cluster's GPU figures.
type Stats struct {
	// Capacity, Allocated and Frag are in thousandths of a GPU: the
	// cluster's GPU capacity, what pods hold, and the sum of the nodes'
	// Frag.
	Capacity, Allocated int64
	Frag                float64
}

// AllocationRate is the allocated GPU capacity over the total (0 without
// GPUs).
func (s Stats) AllocationRate() float64 {
	if s.Capacity == 0 {
		return 0
	}
	return float64(s.Allocated) / float64(s.Capacity)
}

// FragRatio is the cluster's fragmentation over its unallocated GPU
// capacity (0 when nothing is free).
func (s Stats) FragRatio() float64 {
	if free := s.Capacity - s.Allocated; free > 0 {
		return s.Frag / float64(free)
	}
	return 0
}

// Measure computes the cluster's Stats against the workload.
// O(nodes × classes × GPUs).
func Measure(nodes []*Node, w Workload) Stats {
	var s Stats
	for _, n := range nodes {
		s.Capacity += int64(len(n.Free)) * Milli
		s.Allocated += int64(len(n.Free))*Milli - n.FreeGPU()
		s.Frag += Frag(n, w)
	}
	return s
}
