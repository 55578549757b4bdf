package sim

import (
	"bytes"
	"strings"
	"time"
	"unsafe"

	v1 "k8s.io/api/core/v1"
	resourcehelper "k8s.io/component-helpers/resource"

	"github.com/schedq/schedq/kube/framework"
)

// allocation follows the cluster's allocatable and requested CPU, memory
// and GPUs (every extended resource whose name contains "gpu", such as
// nvidia.com/gpu or alibaba.com/gpu-milli), over virtual time.
type allocation struct {
	alloc, used amounts
	series      []AllocSample
	// frag follows the GPUs' fragmentation in a trace replay on the
	// device model; nil otherwise.
	frag *fragMeter
	// gpuMilliHours is the integral of the requested GPU amount over
	// virtual time, up to lastT; level is that amount as of lastT.
	gpuMilliHours float64
	lastT         time.Duration
	level         int64
	// last is the last pod whose requests were summed, lastAmounts the
	// sum (see allocation.podAmounts).
	last        *v1.Pod
	lastAmounts amounts
}

// amounts is CPU in millicores, memory in bytes and GPU in the resource's
// own units.
type amounts struct{ cpu, mem, gpu int64 }

func (a *amounts) add(b amounts, sign int64) {
	a.cpu += sign * b.cpu
	a.mem += sign * b.mem
	a.gpu += sign * b.gpu
}

func amountsOf(r framework.Resource) amounts {
	a := amounts{cpu: r.MilliCPU, mem: r.Memory}
	for name, v := range r.Scalar {
		if isGPU(name) {
			a.gpu += v
		}
	}
	return a
}

// isGPU reports whether an extended resource counts as GPU.
func isGPU(name v1.ResourceName) bool { return strings.Contains(strings.ToLower(string(name)), "gpu") }

// AllocSample is the fraction of the cluster's allocatable CPU, memory and
// GPU that bound pods request, from T on.
type AllocSample struct {
	T             time.Duration
	CPU, Mem, GPU float64
	// Frag and FragRatio are the paper's fragmentation of the GPUs over
	// their capacity and over their unallocated capacity, and Demand the
	// GPU requests of every pod arrived so far (bound, pending or gone)
	// over that capacity, when the run measures fragmentation
	// (AllocSummary.Frag); 0 otherwise.
	Frag, FragRatio, Demand float64
}

func podAmounts(p *v1.Pod) amounts {
	return amountsOf(framework.NewResource(resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{})))
}

// podAmounts is p's requests, which depend on its spec alone: those of the
// last pod summed if p's spec has that pod's bytes but for spec.nodeName
// (pods copied from one template, bound to different nodes), or if both
// have plain requests and their containers request the same
// (framework.SamePlainRequests: pods of one template from an API server,
// each with its own maps), else summed. O(size of a PodSpec + containers'
// requests) then.
func (a *allocation) podAmounts(p *v1.Pod) amounts {
	if l := a.last; l != nil {
		spec := l.Spec
		spec.NodeName = p.Spec.NodeName
		if sameBytes(&spec, &p.Spec) || framework.SamePlainRequests(l, p) {
			return a.lastAmounts
		}
	}
	am := podAmounts(p)
	a.last, a.lastAmounts = p, am
	return am
}

// sameBytes reports whether *a and *b have the same bytes: every field
// the same bits, every pointer, map and slice the same, so that the two
// are equal (for types without floating-point fields, such as a pod's
// spec). False says nothing: padding may differ.
func sameBytes[T any](a, b *T) bool {
	size := unsafe.Sizeof(*a)
	return bytes.Equal(unsafe.Slice((*byte)(unsafe.Pointer(a)), size), unsafe.Slice((*byte)(unsafe.Pointer(b)), size))
}

func (a *allocation) podAdded(now time.Time, p *v1.Pod) {
	a.used.add(a.podAmounts(p), 1)
	if a.frag != nil {
		a.frag.podAdded(p)
	}
	a.sample(now)
}

// podArrived counts a new pod's GPU request in the arrived demand, when
// the run measures fragmentation. O(1).
func (a *allocation) podArrived(now time.Time, p *v1.Pod) {
	if a.frag != nil {
		a.frag.podArrived(p)
		a.sample(now)
	}
}

func (a *allocation) podRemoved(now time.Time, p *v1.Pod) {
	a.used.add(a.podAmounts(p), -1)
	if a.frag != nil {
		a.frag.podRemoved(p)
	}
	a.sample(now)
}

func (a *allocation) nodeAdded(now time.Time, n *v1.Node) {
	a.alloc.add(amountsOf(framework.NewResource(n.Status.Allocatable)), 1)
	if a.frag != nil {
		a.frag.nodeAdded(n)
	}
	a.sample(now)
}

func (a *allocation) nodeRemoved(now time.Time, n *v1.Node) {
	a.alloc.add(amountsOf(framework.NewResource(n.Status.Allocatable)), -1)
	if a.frag != nil {
		a.frag.nodeRemoved(n)
	}
	a.sample(now)
}

func frac(used, alloc int64) float64 {
	if alloc <= 0 {
		return 0
	}
	return float64(used) / float64(alloc)
}

// sample records the fractions at now, replacing a sample of the same
// instant.
func (a *allocation) sample(now time.Time) {
	if t := now.Sub(epoch); t > a.lastT {
		a.gpuMilliHours += float64(a.level) * (t - a.lastT).Hours()
		a.lastT = t
	}
	a.level = a.used.gpu
	s := AllocSample{T: now.Sub(epoch), CPU: frac(a.used.cpu, a.alloc.cpu), Mem: frac(a.used.mem, a.alloc.mem), GPU: frac(a.used.gpu, a.alloc.gpu)}
	if a.frag != nil {
		st := a.frag.stats()
		if st.Capacity > 0 {
			s.Frag = st.Frag / float64(st.Capacity)
		}
		s.FragRatio = st.FragRatio()
		s.Demand = a.frag.demand()
	}
	if n := len(a.series); n > 0 && a.series[n-1].T == s.T {
		a.series[n-1] = s
		return
	}
	a.series = append(a.series, s)
}

// AllocSummary is the time-weighted mean and the peak of the allocated
// fractions over a run.
type AllocSummary struct {
	MeanCPU  float64 `json:"meanCPU"`
	MeanMem  float64 `json:"meanMemory"`
	MeanGPU  float64 `json:"meanGPU"`
	PeakCPU  float64 `json:"peakCPU"`
	PeakMem  float64 `json:"peakMemory"`
	PeakGPU  float64 `json:"peakGPU"`
	HasGPU   bool    `json:"hasGPU"`
	Duration float64 `json:"seconds"` // the window the means are over
	// Frag is the GPUs' fragmentation, when the run measures it.
	Frag *FragSummary `json:"gpuFragmentation,omitempty"`
}

// FragSummary is the paper's fragmentation of the cluster's GPUs over a
// run, against the trace's typical workload: time-weighted means and
// peaks of the fragmented GPU capacity over the whole (Frag) and over the
// unallocated capacity (Ratio), and the ratio at the first instant of the
// GPU allocation's peak.
type FragSummary struct {
	Kinds       int     `json:"workloadKinds"`
	MeanFrag    float64 `json:"meanFrag"`
	PeakFrag    float64 `json:"peakFrag"`
	MeanRatio   float64 `json:"meanRatio"`
	PeakRatio   float64 `json:"peakRatio"`
	RatioAtPeak float64 `json:"ratioAtGPUPeak"`
	// AtDemand is the cluster when the arrived GPU demand first reached
	// each of demandPoints, as in the paper's figures; points the run
	// never reached are left out.
	AtDemand []DemandPoint `json:"atDemand,omitempty"`
}

// DemandPoint is the GPUs' allocation rate and fragmentation at the first
// instant the arrived GPU demand reached Demand (a fraction of the GPU
// capacity).
type DemandPoint struct {
	Demand    float64 `json:"demand"`
	Allocated float64 `json:"allocated"`
	Frag      float64 `json:"frag"`
	FragRatio float64 `json:"fragRatio"`
}

// demandPoints are the paper's points of arrived GPU demand.
var demandPoints = []float64{0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.1, 1.2, 1.3}

// summarize weighs each sample by how long it held, up to end. A run of
// no length has its one level as its mean, and its peak.
func summarize(series []AllocSample, end time.Duration, hasGPU bool) AllocSummary {
	s := AllocSummary{HasGPU: hasGPU, Duration: end.Seconds()}
	if end <= 0 && len(series) > 0 {
		x := series[len(series)-1]
		s.MeanCPU, s.MeanMem, s.MeanGPU = x.CPU, x.Mem, x.GPU
	}
	for i, x := range series {
		next := end
		if i+1 < len(series) {
			next = min(end, series[i+1].T)
		}
		if w := next - x.T; w > 0 && end > 0 {
			f := float64(w) / float64(end)
			s.MeanCPU += x.CPU * f
			s.MeanMem += x.Mem * f
			s.MeanGPU += x.GPU * f
		}
		s.PeakCPU, s.PeakMem, s.PeakGPU = max(s.PeakCPU, x.CPU), max(s.PeakMem, x.Mem), max(s.PeakGPU, x.GPU)
	}
	return s
}

// summarizeFrag weighs the fragmentation of each sample by how long it
// held, up to end, as summarize does (a run of no length has its one
// level as its mean). O(samples).
func summarizeFrag(series []AllocSample, end time.Duration, kinds int) *FragSummary {
	f := &FragSummary{Kinds: kinds}
	if end <= 0 && len(series) > 0 {
		x := series[len(series)-1]
		f.MeanFrag, f.MeanRatio = x.Frag, x.FragRatio
	}
	peakGPU := -1.0
	for i, x := range series {
		next := end
		if i+1 < len(series) {
			next = min(end, series[i+1].T)
		}
		if w := next - x.T; w > 0 && end > 0 {
			f.MeanFrag += x.Frag * float64(w) / float64(end)
			f.MeanRatio += x.FragRatio * float64(w) / float64(end)
		}
		f.PeakFrag, f.PeakRatio = max(f.PeakFrag, x.Frag), max(f.PeakRatio, x.FragRatio)
		if x.GPU > peakGPU {
			peakGPU, f.RatioAtPeak = x.GPU, x.FragRatio
		}
		for len(f.AtDemand) < len(demandPoints) && x.Demand >= demandPoints[len(f.AtDemand)]-1e-9 {
			f.AtDemand = append(f.AtDemand, DemandPoint{Demand: demandPoints[len(f.AtDemand)], Allocated: x.GPU, Frag: x.Frag, FragRatio: x.FragRatio})
		}
	}
	return f
}
