package gpu

import (
	"math"
	"reflect"
	"strings"
	"testing"
)

// One node of two GPUs and a list of one share of 500: at 50% of demand
// two shares fill GPU 0 (BestFit packs them), at 100% both GPUs are full.
func TestRunByHand(t *testing.T) {
	c := Config{Nodes: []*Node{NewNode("n", "T4", 64_000, 1<<20, 2)}, Pods: []Request{share500}, Policy: BestFit, Demand: 1, Seed: 3, Points: []float64{0.5, 1}}
	r, err := Run(c)
	if err != nil {
		t.Fatal(err)
	}
	if r.Arrived != 4 || r.Placed != 4 || len(r.Points) != 2 {
		t.Fatalf("result %+v, want 4 pods drawn and placed, 2 points", r)
	}
	p := r.Points[0]
	if p.Demand != 0.5 || p.Arrived != 2 || p.AllocationRate() != 0.5 || p.FragRatio() != 0 {
		t.Fatalf("at 50%%: %+v, want 2 pods, allocation 0.5, no fragmentation", p)
	}
	if p := r.Points[1]; p.AllocationRate() != 1 {
		t.Fatalf("at 100%%: %+v", p)
	}
	if c.Nodes[0].FreeGPU() != 2000 {
		t.Fatal("Run changed the caller's nodes")
	}
}

// A pod that fits nowhere is dropped and still counts as arrived demand.
func TestRunDropsWhatDoesNotFit(t *testing.T) {
	c := Config{Nodes: []*Node{NewNode("n", "T4", 64_000, 1<<20, 1)}, Pods: []Request{whole2}, Policy: FGD, Demand: 2, Seed: 1}
	r, err := Run(c)
	if err != nil {
		t.Fatal(err)
	}
	if r.Arrived != 1 || r.Placed != 0 || len(r.Points) != 7 {
		t.Fatalf("result %+v, want 1 drawn, none placed, the 7 default points up to 130%%", r)
	}
}

// Same config and seed, same result; another seed, another draw.
func TestRunDeterministic(t *testing.T) {
	var nodes []*Node
	for i := range 20 {
		nodes = append(nodes, NewNode("n", []string{"T4", "V100"}[i%2], 32_000+int64(i%3)*32_000, 1<<20, []int{1, 2, 4, 8}[i%4]))
	}
	pods := []Request{share500, whole1, whole2, cpuOnly, {CPU: 4000, Count: 1, Share: 250}, {CPU: 2000, Count: 1, Share: 700, Models: []string{"V100"}}}
	for _, p := range Policies() {
		c := Config{Nodes: nodes, Pods: pods, Policy: p, Demand: 1.3, Seed: 7}
		a, err := Run(c)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := Run(c)
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("%s: two runs differ", p)
		}
		c.Seed = 8
		if d, _ := Run(c); reflect.DeepEqual(a.Points, d.Points) && p == Random {
			t.Fatalf("%s: seeds 7 and 8 gave the same run", p)
		}
	}
}

func TestConfigValidate(t *testing.T) {
	nodes := []*Node{NewNode("n", "T4", 64_000, 1<<20, 8)}
	many := make([]*Node, 1000)
	for i := range many {
		many[i] = nodes[0]
	}
	for _, c := range []struct {
		name string
		c    Config
		want string
	}{
		{"zero demand", Config{Nodes: nodes, Pods: []Request{share500}, Demand: 0}, "demand 0: want more than 0"},
		{"negative demand", Config{Nodes: nodes, Pods: []Request{share500}, Demand: -1}, "demand -1"},
		{"NaN demand", Config{Nodes: nodes, Pods: []Request{share500}, Demand: math.NaN()}, "demand NaN"},
		{"infinite demand", Config{Nodes: nodes, Pods: []Request{share500}, Demand: math.Inf(1)}, "at most 100"},
		{"draw too large for memory", Config{Nodes: many, Pods: []Request{{Count: 1, Share: 1}}, Demand: 100}, "more than the limit of 50000000"},
		{"no GPU pods", Config{Nodes: nodes, Pods: []Request{cpuOnly}, Demand: 1}, "no pod of the list asks for a GPU"},
		{"no GPUs", Config{Nodes: []*Node{NewNode("c", "", 1, 1, 0)}, Pods: []Request{share500}, Demand: 1}, "no GPUs"},
		{"point beyond demand", Config{Nodes: nodes, Pods: []Request{share500}, Demand: 1, Points: []float64{1.2}}, "point 1.2"},
		{"bad pod", Config{Nodes: nodes, Pods: []Request{{Count: 2, Share: 5}}, Demand: 1}, "pod 0: a pod of 2 GPUs"},
		{"unknown tie-breaking", Config{Nodes: nodes, Pods: []Request{share500}, Demand: 1, Ties: Ties(7)}, "unknown tie-breaking 7"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Run(c.c)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want %q", err, c.want)
			}
		})
	}
}
