package plugins

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/schedq/schedq"
	"github.com/schedq/schedq/kube/framework"
)

func TestGangQuorum(t *testing.T) {
	for _, tc := range []struct {
		name                                    string
		scheduled, placedNow, remaining, minCnt int
		want                                    framework.Quorum
	}{
		{"all 8 placed", 8, 8, 0, 8, framework.QuorumMet},
		{"6 of 8, none left", 6, 6, 0, 8, framework.QuorumLost},
		{"6 of 8, 2 left", 6, 6, 2, 8, framework.QuorumWait},
		{"6 of 8, 1 left: cannot make it", 6, 6, 1, 8, framework.QuorumLost},
		{"quorum from earlier attempts plus one now", 8, 1, 0, 8, framework.QuorumMet},
		{"quorum from earlier attempts, nothing placed now", 8, 0, 0, 8, framework.QuorumLost},
		{"basic: one is enough", 1, 1, 3, 1, framework.QuorumMet},
		{"more than there are members", 3, 3, 0, 10, framework.QuorumLost},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := (GangScheduling{}).Quorum(tc.scheduled, tc.placedNow, tc.remaining, tc.minCnt); got != tc.want {
				t.Fatalf("Quorum = %v, want %v", got, tc.want)
			}
		})
	}
}

func member(name, group string) *v1.Pod {
	p := mkPod(name)
	p.Spec.SchedulingGroup = &v1.PodSchedulingGroup{PodGroupName: &group}
	return p
}

func TestGangHints(t *testing.T) {
	pl := GangScheduling{}
	a := member("a", "train")
	for _, tc := range []struct {
		name   string
		fn     schedq.HintFn[*v1.Pod]
		newObj any
		want   schedq.Hint
	}{
		{"a member of the same group arrives", pl.memberAdded, member("b", "train"), schedq.HintQueue},
		{"a member of another group arrives", pl.memberAdded, member("b", "other"), schedq.HintSkip},
		{"a lone pod arrives", pl.memberAdded, mkPod("b"), schedq.HintSkip},
		{"its PodGroup changes", pl.groupChanged, &schedulingv1beta1.PodGroup{ObjectMeta: metav1.ObjectMeta{Namespace: a.Namespace, Name: "train"}}, schedq.HintQueue},
		{"another PodGroup changes", pl.groupChanged, &schedulingv1beta1.PodGroup{ObjectMeta: metav1.ObjectMeta{Namespace: "elsewhere", Name: "train"}}, schedq.HintSkip},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.fn(a, nil, tc.newObj)
			if err != nil || got != tc.want {
				t.Fatalf("hint = %v, %v; want %v", got, err, tc.want)
			}
		})
	}
}
