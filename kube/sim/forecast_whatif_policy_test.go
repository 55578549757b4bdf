package sim

import (
	"fmt"
	"strings"
	"testing"
)

// TestWhatIfPodGroupPolicy: a what-if PodGroup's scheduling policy is
// checked as the API server checks it (upstream's declarative
// validation of scheduling.k8s.io/v1beta1), the error naming the
// PodGroup and the field: both gang and basic, or neither, is refused,
// as is a gang's minCount unset (0) or below 1; a basic policy alone, which the API
// server takes, is refused for want of a gang.
func TestWhatIfPodGroupPolicy(t *testing.T) {
	const group = "apiVersion: scheduling.k8s.io/v1beta1\nkind: PodGroup\nmetadata: {name: g}\nspec: {schedulingPolicy: %s}\n---\n"
	member := strings.Replace(fmt.Sprintf(podYAML, "w", 0, "1"), "spec:\n", "spec:\n  schedulingGroup: {podGroupName: g}\n", 1)
	for _, tc := range []struct {
		name, policy, want string // want "": taken
	}{
		{"gang and basic", "{gang: {minCount: 1}, basic: {}}", "PodGroup default/g: spec.schedulingPolicy: Invalid value: \"{basic, gang}\": must specify exactly one of: `basic`, `gang`"},
		{"neither", "{}", "PodGroup default/g: spec.schedulingPolicy: Invalid value: \"\": must specify one of: `basic`, `gang`"},
		{"gang of minCount 0", "{gang: {minCount: 0}}", "PodGroup default/g: spec.schedulingPolicy.gang.minCount: Required value"},
		{"gang of minCount -1", "{gang: {minCount: -1}}", "PodGroup default/g: spec.schedulingPolicy.gang.minCount: Invalid value: -1: must be greater than or equal to 1"},
		{"basic alone", "{basic: {}}", "PodGroup default/g: want a gang policy with minCount of at least 1"},
		{"gang alone", "{gang: {minCount: 1}}", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in, err := ParseWhatIf([]byte(fmt.Sprintf(group, tc.policy) + member))
			if err != nil {
				t.Fatal(err)
			}
			err = in.Validate()
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want != "" && (err == nil || err.Error() != tc.want):
				t.Fatalf("error %v, want %q", err, tc.want)
			}
		})
	}
}
