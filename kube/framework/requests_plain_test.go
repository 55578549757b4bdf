package framework

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// plainPod is a pod whose containers request reqs, one list each.
func plainPod(name string, reqs ...v1.ResourceList) *v1.Pod {
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}}
	for i, r := range reqs {
		p.Spec.Containers = append(p.Spec.Containers, v1.Container{Name: fmt.Sprint("c", i),
			Resources: v1.ResourceRequirements{Requests: r}})
	}
	return p
}

func list(kv ...string) v1.ResourceList {
	l := v1.ResourceList{}
	for i := 0; i < len(kv); i += 2 {
		l[v1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return l
}

// notPlain makes p one whose requests are not its containers' sum alone,
// in one of the ways plainRequests knows, keeping its containers.
var notPlain = map[string]func(p *v1.Pod){
	"init container": func(p *v1.Pod) {
		p.Spec.InitContainers = []v1.Container{{Name: "i", Resources: v1.ResourceRequirements{Requests: list("cpu", "8")}}}
	},
	"overhead":            func(p *v1.Pod) { p.Spec.Overhead = list("cpu", "250m") },
	"pod-level resources": func(p *v1.Pod) { p.Spec.Resources = &v1.ResourceRequirements{Requests: list("cpu", "16")} },
	"container status with resources": func(p *v1.Pod) {
		p.Status.ContainerStatuses = []v1.ContainerStatus{{Name: "c0", AllocatedResources: list("cpu", "7"),
			Resources: &v1.ResourceRequirements{Requests: list("cpu", "7")}}}
	},
	"infeasible resize": func(p *v1.Pod) {
		p.Status.Conditions = []v1.PodCondition{{Type: v1.PodResizePending, Reason: v1.PodReasonInfeasible}}
	},
	"pod-level status": func(p *v1.Pod) {
		p.Status.Resources = &v1.ResourceRequirements{Requests: list("cpu", "9")}
		p.Status.AllocatedResources = list("cpu", "9")
	},
}

// TestPodRequestsMemoSameAsComputed: PodRequests with its memo of the
// last plain pod gives, for every pod of a random sequence, what
// computing its requests gives: pods of equal requests written
// differently (2 and 2000m), extended resources, several containers, and
// pods with the same containers but an init container, overhead,
// pod-level resources or a status that kube-scheduler counts instead.
func TestPodRequestsMemoSameAsComputed(t *testing.T) {
	lists := []v1.ResourceList{
		list("cpu", "2"), list("cpu", "2000m"), list("cpu", "2", "memory", "1Gi"),
		list("cpu", "2", "memory", "1024Mi"), list("cpu", "3"), list("memory", "1Gi"),
		list("cpu", "2", "example.com/gpu", "1"), list("cpu", "2", "example.com/gpu", "2"),
		list("cpu", "2", "hugepages-2Mi", "4Mi"), {}, nil,
	}
	kinds := []string{"plain"}
	for k := range notPlain {
		kinds = append(kinds, k)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	hits := 0
	var last []v1.ResourceList
	for i := range 3000 {
		var reqs []v1.ResourceList
		if last != nil && rng.IntN(2) == 0 {
			for _, l := range last { // the same, in other maps
				reqs = append(reqs, l.DeepCopy())
			}
		} else {
			for range 1 + rng.IntN(2) {
				reqs = append(reqs, lists[rng.IntN(len(lists))].DeepCopy())
			}
		}
		last = reqs
		p := plainPod(fmt.Sprint("p-", i), reqs...)
		kind := kinds[0]
		if rng.IntN(4) == 0 {
			kind = kinds[1+rng.IntN(len(kinds)-1)]
			notPlain[kind](p)
		}
		want, wantErr := computeRequests(p)
		if l := lastPlain.Load(); l != nil {
			if _, ok := l.requests(p); ok {
				hits++
			}
		}
		got, err := PodRequests(p)
		if !reflect.DeepEqual(got, want) || fmt.Sprint(err) != fmt.Sprint(wantErr) {
			t.Fatalf("pod %d (%s, %v): PodRequests = %+v, %v; computed %+v, %v", i, kind, reqs, got, err, want, wantErr)
		}
	}
	if hits < 600 {
		t.Fatalf("the memo served %d of 3000 pods: the test no longer exercises it", hits)
	}
}

// TestPodRequestsMemoIsItsOwn: neither a caller's write to the requests it
// was given nor a change in place to the pod the memo was made from
// changes what the memo gives.
func TestPodRequestsMemoIsItsOwn(t *testing.T) {
	a := plainPod("a", list("cpu", "1", "example.com/gpu", "2"))
	r, err := PodRequests(a)
	if err != nil || r.Scalar["example.com/gpu"] != 2 {
		t.Fatalf("PodRequests(a) = %+v, %v", r, err)
	}
	r.Scalar["example.com/gpu"] = 99
	a.Spec.Containers[0].Resources.Requests["cpu"] = resource.MustParse("5")
	b := plainPod("b", list("cpu", "1", "example.com/gpu", "2"))
	if got, _ := PodRequests(b); got.MilliCPU != 1000 || got.Scalar["example.com/gpu"] != 2 {
		t.Fatalf("PodRequests(b) = %+v, want 1 cpu and 2 GPUs", got)
	}
	c := plainPod("c", list("cpu", "5", "example.com/gpu", "2"))
	if got, _ := PodRequests(c); got.MilliCPU != 5000 {
		t.Fatalf("PodRequests(c) = %+v, want 5 cpu", got)
	}
}

// TestSamePlainRequests: pods of equal container requests, in order, with
// nothing else counted, have the same plain requests; any difference, or
// anything that makes a pod's requests more than its containers' sum,
// says no.
func TestSamePlainRequests(t *testing.T) {
	base := func() *v1.Pod { return plainPod("x", list("cpu", "2", "memory", "1Gi"), list("cpu", "1")) }
	cases := []struct {
		name string
		b    func() *v1.Pod
		want bool
	}{
		{"equal", base, true},
		{"written otherwise", func() *v1.Pod {
			return plainPod("y", list("cpu", "2000m", "memory", "1024Mi"), list("cpu", "1000m"))
		}, true},
		{"other amount", func() *v1.Pod { return plainPod("y", list("cpu", "2", "memory", "1Gi"), list("cpu", "2")) }, false},
		{"containers swapped", func() *v1.Pod {
			return plainPod("y", list("cpu", "1"), list("cpu", "2", "memory", "1Gi"))
		}, false},
		{"one container fewer", func() *v1.Pod { return plainPod("y", list("cpu", "2", "memory", "1Gi")) }, false},
		{"extra resource", func() *v1.Pod {
			return plainPod("y", list("cpu", "2", "memory", "1Gi", "example.com/gpu", "1"), list("cpu", "1"))
		}, false},
	}
	for name, f := range notPlain {
		cases = append(cases, struct {
			name string
			b    func() *v1.Pod
			want bool
		}{name, func() *v1.Pod { p := base(); f(p); return p }, false})
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := SamePlainRequests(base(), tc.b()); got != tc.want {
				t.Fatalf("SamePlainRequests = %v, want %v", got, tc.want)
			}
			if got := SamePlainRequests(tc.b(), base()); got != tc.want {
				t.Fatalf("SamePlainRequests, the other way = %v, want %v", got, tc.want)
			}
		})
	}
}
