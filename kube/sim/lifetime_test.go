package sim

import (
	"math"
	"strings"
	"testing"
	"time"
)

// A finished pod frees its node: three pods that each fill the only node
// run one after the other, each woken by the previous one's deletion.
func TestLifetimeFreesTheNode(t *testing.T) {
	sc := parse(t, `
name: life
nodes: [{name: n, count: 1, capacity: {cpu: "1", memory: 4Gi}}]
pods:
  - {name: job, count: 3, requests: {cpu: "1", memory: 1Gi}, lifetime: {mean: 10s}}
`)
	r := run(t, sc)
	if r.Scheduled != 3 || r.Finished != 3 || r.Running != 0 || r.Pending != 0 {
		t.Fatalf("scheduled %d, finished %d, running %d, pending %d; want 3 scheduled and finished", r.Scheduled, r.Finished, r.Running, r.Pending)
	}
	for i, rec := range r.Records {
		lo := float64(i) * 10
		if rec.BoundAt < lo || rec.BoundAt > lo+1 || rec.End != endFinished || math.Abs(rec.EndedAt-rec.BoundAt-10) > 1e-9 {
			t.Errorf("pod %d bound at %.3fs, ended %q at %.3fs; want bound in [%v, %v] and finished 10s later", i, rec.BoundAt, rec.End, rec.EndedAt, lo, lo+1)
		}
	}
	if got := incoming(r, "active", "AssignedPodDelete"); got != 2 {
		t.Fatalf("%d pods woken by AssignedPodDelete, want 2", got)
	}
	if a := r.Allocation; a == nil || a.PeakCPU != 1 {
		t.Fatalf("allocation %+v, want a cpu peak of 1", a)
	}
	if !strings.Contains(text(r), "3 finished, 0 deleted after binding") {
		t.Fatalf("the report does not say the pods finished:\n%s", text(r))
	}
}

// Draws depend on the seed, the group and the index only, and follow the
// distribution.
func TestLifetimeDraws(t *testing.T) {
	exp := &LifetimeSpec{Distribution: "exponential", Mean: time.Minute}
	if exp.draw(1, "g", 7) != exp.draw(1, "g", 7) {
		t.Fatal("two draws of one pod differ")
	}
	if exp.draw(1, "g", 7) == exp.draw(2, "g", 7) && exp.draw(1, "g", 8) == exp.draw(2, "g", 8) {
		t.Fatal("the seed changes nothing")
	}
	const n = 20000
	var sum time.Duration
	uni := &LifetimeSpec{Distribution: "uniform", Min: 10 * time.Second, Max: 20 * time.Second}
	for i := range n {
		sum += exp.draw(1, "g", i)
		if d := uni.draw(1, "g", i); d < uni.Min || d > uni.Max {
			t.Fatalf("uniform draw %v outside [%v, %v]", d, uni.Min, uni.Max)
		}
	}
	if mean := sum / n; mean < 57*time.Second || mean > 63*time.Second {
		t.Fatalf("exponential mean %v, want about 1m", mean)
	}
	if d := (&LifetimeSpec{Mean: 5 * time.Second}).draw(1, "g", 3); d != 5*time.Second {
		t.Fatalf("fixed lifetime drew %v", d)
	}
}

func TestLifetimeValidation(t *testing.T) {
	for spec, want := range map[string]string{
		`{}`:                               "pods[0].lifetime.mean: must be positive for a fixed lifetime",
		`{distribution: normal, mean: 1s}`: `pods[0].lifetime.distribution: "normal" is not fixed, uniform or exponential`,
		`{distribution: uniform, min: 5s, max: 2s}`:  "pods[0].lifetime.max: must be greater than min",
		`{distribution: uniform, mean: 1s, max: 2s}`: "either a mean or min and max",
		`{mean: 1s, max: 2s}`:                        "min and max are for a uniform lifetime only",
		`{mean: -1s}`:                                "pods[0].lifetime.mean: must not be negative",
	} {
		_, err := Parse([]byte("name: x\nnodes: [{name: n, count: 1}]\npods: [{name: p, count: 1, lifetime: " + spec + "}]\n"))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("lifetime %s: error %v, want %q", spec, err, want)
		}
	}
}
