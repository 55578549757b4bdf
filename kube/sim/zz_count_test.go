package sim
import "testing"
func TestZZCount(t *testing.T) {
	kinds := map[string]int{}
	_, err := Run(traceScenario("/work/shared/traces/alibaba-gpu-v2023"), Options{Trace: func(op Op) { kinds[op.Kind]++ }})
	t.Log(kinds, err)
}
