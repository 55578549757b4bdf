package gpu

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
)

// MaxDemand is the largest demand multiple an Experiment accepts: the
// draw grows with it, and 100 times the cluster's GPUs is far beyond any
// point of interest.
const MaxDemand = 100

// maxDraws bounds the pods an Experiment draws, so that a list of tiny
// requests cannot make the draw outgrow memory.
const maxDraws = 50_000_000

// DefaultPoints are the points of arrived demand the paper reports, as
// fractions of the cluster's GPU capacity.
var DefaultPoints = []float64{0.7, 0.8, 0.9, 1.0, 1.1, 1.2, 1.3}

// Config is one run of the paper's experiment.
type Config struct {
	// Nodes are the cluster, empty; they are cloned, not changed.
	Nodes []*Node
	// Pods is the pod list drawn from; Workload the distribution
	// fragmentation is measured against (Typical(Pods, TypicalShare) if
	// nil).
	Pods     []Request
	Workload Workload
	Policy   Policy
	// Demand is the multiple of the cluster's GPU capacity that the
	// drawn pods' GPU requests reach (1.3 in the paper).
	Demand float64
	Seed   uint64
	// Points are the fractions of GPU capacity at which the cluster is
	// measured (DefaultPoints if nil), each at most Demand.
	Points []float64
	// Sampling is how the arriving pods are made from Pods.
	Sampling Sampling
	// Ties is how a pod's node is chosen among those of the highest
	// score (TiesRandom, kube-scheduler's way, by default).
	Ties Ties
	// Averaging is how the cluster is measured at a point (AtFirst by
	// default; RoundedMean as the artifact's analysis does).
	Averaging Averaging
}

// Ties is how an experiment chooses among nodes of equal highest score.
type Ties int

const (
	// TiesRandom chooses uniformly among them, afresh for each pod, as
	// kube-scheduler's selectHost does (reservoir sampling).
	TiesRandom Ties = iota
	// TiesOrder chooses the first of them in an order of the nodes drawn
	// once per run (seeded), as the paper's artifact does: its scheduler
	// (a fork of kube-scheduler v1.20.5) takes the lexicographically
	// smallest node name among equal scores, and its simulator prefixes
	// every node's name with its place in a seeded random permutation.
	// The Random policy still chooses uniformly: the artifact's gives one
	// node drawn at random the top score, so it has no ties.
	TiesOrder
)

// String is the tie-breaking's name: random or order.
func (t Ties) String() string {
	if t == TiesOrder {
		return "order"
	}
	return "random"
}

// ParseTies reads a Ties' name.
func ParseTies(name string) (Ties, error) {
	switch name {
	case "random":
		return TiesRandom, nil
	case "order":
		return TiesOrder, nil
	}
	return 0, fmt.Errorf("%q is not random or order", name)
}

// Sampling is how an experiment makes its arriving pods from the list.
type Sampling int

// String is the sampling's name: draws or artifact.
func (s Sampling) String() string {
	if s == SampleArtifact {
		return "artifact"
	}
	return "draws"
}

// ParseSampling reads a Sampling's name.
func ParseSampling(name string) (Sampling, error) {
	switch name {
	case "draws":
		return SampleDraws, nil
	case "artifact":
		return SampleArtifact, nil
	}
	return 0, fmt.Errorf("%q is not draws or artifact", name)
}

const (
	// SampleDraws draws every pod from the list uniformly with
	// replacement until the requests reach the demand, as the paper
	// describes its workload inflation.
	SampleDraws Sampling = iota
	// SampleArtifact makes them as the paper's artifact does: every pod
	// of the list once, then pods drawn with replacement while the
	// requests stay within the demand, a drawn pod counted for that
	// check by its share of one GPU (a pod of k whole GPUs as one GPU)
	// and added by its total; a list whose requests pass the demand
	// loses pods drawn at random instead; the whole in a seeded random
	// order. The requests may end up to one pod short of the demand: a
	// point of demand within half a percent of the end is measured there,
	// as the artifact's analysis rounds demand to whole percents.
	SampleArtifact
)

// Point is the cluster measured once the arrived GPU demand reached a
// fraction of its capacity.
type Point struct {
	Demand float64 // the point, a fraction of the cluster's GPU capacity
	Stats
	Arrived, Placed int // pods drawn and placed so far
	// Averaged is the number of arrivals the figures below are the mean
	// over (1 with AtFirst, where they are the Stats' own); Alloc is the
	// allocation rate, FragMean the fragmentation in thousandths of a
	// GPU, Ratio the fragmentation ratio.
	Averaged               int
	Alloc, FragMean, Ratio float64
}

// at is the point p measured once on the cluster.
func at(p float64, s Stats, arrived, placed int) Point {
	return Point{Demand: p, Stats: s, Arrived: arrived, Placed: placed, Averaged: 1, Alloc: s.AllocationRate(), FragMean: s.Frag, Ratio: s.FragRatio()}
}

// Result is one run.
type Result struct {
	Policy  Policy
	Seed    uint64
	Points  []Point
	Arrived int // pods drawn
	Placed  int // pods placed; the others found no node and were dropped
}

// Validate refuses a config that cannot run, before anything runs.
func (c *Config) Validate() error {
	switch {
	case math.IsNaN(c.Demand) || c.Demand <= 0:
		return fmt.Errorf("demand %v: want more than 0", c.Demand)
	case c.Demand > MaxDemand:
		return fmt.Errorf("demand %v: at most %d times the cluster's GPU capacity", c.Demand, MaxDemand)
	case len(c.Nodes) == 0:
		return errors.New("no nodes")
	case c.Policy < Random || c.Policy > FGD:
		return fmt.Errorf("unknown policy %d", int(c.Policy))
	case c.Ties != TiesRandom && c.Ties != TiesOrder:
		return fmt.Errorf("unknown tie-breaking %d", int(c.Ties))
	case c.Averaging != AtFirst && c.Averaging != RoundedMean:
		return fmt.Errorf("unknown averaging %d", int(c.Averaging))
	}
	var capacity, gpuPods int64
	for _, n := range c.Nodes {
		capacity += int64(len(n.Free)) * Milli
	}
	if capacity == 0 {
		return errors.New("the cluster has no GPUs")
	}
	var total int64
	for i, r := range c.Pods {
		if err := r.Validate(); err != nil {
			return fmt.Errorf("pod %d: %w", i, err)
		}
		total += r.GPU()
		if r.Count > 0 {
			gpuPods++
		}
	}
	if gpuPods == 0 {
		return errors.New("no pod of the list asks for a GPU: the demand can never be reached")
	}
	// The expected number of draws: demand over the mean GPU request.
	if draws := c.Demand * float64(capacity) / (float64(total) / float64(len(c.Pods))); draws > maxDraws {
		return fmt.Errorf("demand %v: about %.0f pods would be drawn, more than the limit of %d", c.Demand, draws, maxDraws)
	}
	for _, p := range c.points() {
		if !(p > 0 && p <= c.Demand) {
			return fmt.Errorf("point %v: want more than 0 and at most the demand %v", p, c.Demand)
		}
		if c.Averaging == RoundedMean && math.Abs(100*p-math.Round(100*p)) > 1e-9 {
			return fmt.Errorf("point %v: averaging %s wants whole percents", p, c.Averaging)
		}
	}
	return nil
}

func (c *Config) points() []float64 {
	if c.Points == nil {
		var out []float64
		for _, p := range DefaultPoints {
			if p <= c.Demand+1e-9 {
				out = append(out, p)
			}
		}
		return out
	}
	return c.Points
}

// Run runs the experiment: pods are drawn from the list uniformly with
// replacement (seeded) until their GPU requests reach Demand times the
// cluster's GPU capacity; each is placed at once on a node of the highest
// score that fits it (ties broken at random, seeded) or dropped if none
// fits; no pod leaves (Ties says how a node is chosen among equals). The
// cluster is measured at each point. Same config,
// same result. O(draws × nodes × score), with scores cached per node
// until the node changes.
func Run(c Config) (Result, error) {
	if err := c.Validate(); err != nil {
		return Result{}, err
	}
	w := c.Workload
	if w == nil {
		w = Typical(c.Pods, TypicalShare)
	}
	nodes := make([]*Node, len(c.Nodes))
	var capacity int64
	for i, n := range c.Nodes {
		nodes[i] = n.Clone()
		capacity += int64(len(n.Free)) * Milli
	}
	draw := rand.New(rand.NewPCG(c.Seed, 0x9d1))
	pick := rand.New(rand.NewPCG(c.Seed, 0x5c0))
	var rank []int // TiesOrder: each node's place in the run's order
	if c.Ties == TiesOrder && c.Policy != Random {
		rank = tieOrder(c.Seed, len(nodes))
	}
	cl := newClasses(c.Pods)
	cache := newScoreCache(len(nodes), len(cl.reqs))
	res := Result{Policy: c.Policy, Seed: c.Seed}
	points := slices.Clone(c.points())
	slices.Sort(points)
	var arrived int64
	target := int64(math.Ceil(c.Demand * float64(capacity)))
	next := func() (int, bool) { // the class of the next pod to arrive
		return cl.ids[draw.IntN(len(c.Pods))], arrived < target
	}
	if c.Sampling == SampleArtifact {
		seq := artifactSequence(cl, target, draw)
		next = func() (int, bool) {
			if len(seq) == 0 {
				return 0, false
			}
			id := seq[0]
			seq = seq[1:]
			return id, true
		}
	}
	var means *roundedMeans
	if c.Averaging == RoundedMean {
		means = newRoundedMeans(nodes, w, points)
		points = nil
	}
	for id, ok := next(); ok; id, ok = next() {
		r := cl.reqs[id]
		arrived += r.GPU()
		res.Arrived++
		if best, gpus := c.choose(nodes, r, id, w, cache, pick, rank); best >= 0 {
			nodes[best].Place(r, gpus)
			cache.changed(best)
			res.Placed++
			if means != nil {
				means.placed(best, r)
			}
		}
		if means != nil {
			means.arrived(arrived, Point{Stats: means.stats, Arrived: res.Arrived, Placed: res.Placed})
		}
		for len(points) > 0 && float64(arrived) >= points[0]*float64(capacity)-1e-6 {
			res.Points = append(res.Points, at(points[0], Measure(nodes, w), res.Arrived, res.Placed))
			points = points[1:]
		}
	}
	for len(points) > 0 && c.Sampling == SampleArtifact && float64(arrived) >= (points[0]-0.005)*float64(capacity) {
		res.Points = append(res.Points, at(points[0], Measure(nodes, w), res.Arrived, res.Placed))
		points = points[1:]
	}
	if means != nil {
		res.Points = means.points()
	}
	return res, nil
}

// artifactSequence is SampleArtifact's pods, as class ids, drawn with
// draw: see SampleArtifact. O(pods of the sequence).
func artifactSequence(cl classes, target int64, draw *rand.Rand) []int {
	seq := slices.Clone(cl.ids)
	var total int64
	for _, id := range seq {
		total += cl.reqs[id].GPU()
	}
	down := total > target
	for total > target && len(seq) > 0 {
		i := draw.IntN(len(seq))
		total -= cl.reqs[seq[i]].GPU()
		seq = slices.Delete(seq, i, i+1)
	}
	for !down && len(cl.ids) > 0 {
		id := cl.ids[draw.IntN(len(cl.ids))]
		if total+cl.reqs[id].Share > target {
			break
		}
		total += cl.reqs[id].GPU()
		seq = append(seq, id)
	}
	draw.Shuffle(len(seq), func(i, j int) { seq[i], seq[j] = seq[j], seq[i] })
	return seq
}

// tieOrder is TiesOrder's order of n nodes for the seed: each node's
// place in a uniformly random permutation, drawn from a stream of its own
// so that the other draws of the run do not move.
func tieOrder(seed uint64, n int) []int {
	return rand.New(rand.NewPCG(seed, 0x0de)).Perm(n)
}

// choose returns the node of the highest score that fits r, and its GPUs;
// -1 if none fits. Among equal scores, with rank nil each is kept with
// probability 1/(number seen), so the choice is uniform among them;
// otherwise the node of the lowest rank is kept.
func (c *Config) choose(nodes []*Node, r Request, id int, w Workload, cache *scoreCache, pick *rand.Rand, rank []int) (int, []int) {
	best, ties := -1, 0
	var bestScore int64
	var bestGPUs []int
	for i, n := range nodes {
		if !n.Fits(r) {
			continue
		}
		var s int64
		var gpus []int
		if c.Policy == Random {
			s, gpus = c.Policy.Score(n, r, w, pick)
		} else {
			s, gpus = cache.score(i, id, func() (int64, []int) { return c.Policy.Score(n, r, w, nil) })
		}
		switch {
		case best < 0 || s > bestScore:
			best, bestScore, bestGPUs, ties = i, s, gpus, 1
		case s == bestScore && rank != nil:
			if rank[i] < rank[best] {
				best, bestGPUs = i, gpus
			}
		case s == bestScore:
			ties++
			if pick.IntN(ties) == 0 {
				best, bestGPUs = i, gpus
			}
		}
	}
	return best, bestGPUs
}

// classes numbers the distinct requests of a pod list.
type classes struct {
	reqs []Request
	ids  []int // per pod of the list
}

func newClasses(pods []Request) classes {
	var cl classes
	seen := map[string]int{}
	for _, r := range pods {
		k := itoa(r.Mem) + "/" + kindKey(r)
		id, ok := seen[k]
		if !ok {
			id = len(cl.reqs)
			seen[k] = id
			cl.reqs = append(cl.reqs, r)
		}
		cl.ids = append(cl.ids, id)
	}
	return cl
}

// scoreCache keeps each node's score for each class of request until the
// node changes: a score depends only on the node and the request.
type scoreCache struct {
	classes int
	version []uint32 // per node, from 1
	entries []cacheEntry
}

type cacheEntry struct {
	version uint32
	score   int64
	gpus    []int
}

func newScoreCache(nodes, classes int) *scoreCache {
	c := &scoreCache{classes: classes, version: make([]uint32, nodes), entries: make([]cacheEntry, nodes*classes)}
	for i := range c.version {
		c.version[i] = 1
	}
	return c
}

func (c *scoreCache) changed(node int) { c.version[node]++ }

func (c *scoreCache) score(node, class int, compute func() (int64, []int)) (int64, []int) {
	e := &c.entries[node*c.classes+class]
	if e.version != c.version[node] {
		e.score, e.gpus = compute()
		e.version = c.version[node]
	}
	return e.score, e.gpus
}
