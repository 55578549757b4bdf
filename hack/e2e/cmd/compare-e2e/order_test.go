package main

import "testing"

func TestRunOrder(t *testing.T) {
	c := []scheduler{{name: "kube-scheduler"}, {name: "schedq"}}
	for _, tc := range []struct {
		name, first    string
		workload, pair int
		want           string
	}{
		{"alternate starts with kube-scheduler", "alternate", 0, 0, "kube-scheduler"},
		{"alternate gives the second workload to schedq first", "alternate", 1, 0, "schedq"},
		{"alternate goes back on the third", "alternate", 2, 0, "kube-scheduler"},
		{"alternate gives one workload's second pair to schedq first", "alternate", 0, 1, "schedq"},
		{"alternate gives one workload's third pair to kube-scheduler first", "alternate", 0, 2, "kube-scheduler"},
		{"alternate turns the second workload's order in the second pair", "alternate", 1, 1, "kube-scheduler"},
		{"kube-scheduler always first", "kube-scheduler", 1, 1, "kube-scheduler"},
		{"schedq always first", "schedq", 0, 2, "schedq"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := runOrder(c, tc.workload, tc.pair, tc.first)
			if len(got) != 2 || got[0].name != tc.want || got[0].name == got[1].name {
				t.Fatalf("runOrder(%d, %d, %q) = %s, %s; want %s first", tc.workload, tc.pair, tc.first, got[0].name, got[1].name, tc.want)
			}
		})
	}
}

// Each pair's runs have namespaces of their own: a deleted namespace
// stays terminating (no controller finishes it), and the next pair could
// not make it again.
func TestRunNamespace(t *testing.T) {
	seen := map[string]string{}
	for _, w := range []string{"basic", "node arrival"} {
		for _, s := range []string{"default-scheduler", "schedq"} {
			for p := range 3 {
				ns := runNamespace(w, s, p)
				if prev, dup := seen[ns]; dup {
					t.Fatalf("runNamespace(%q, %q, %d) = %q, as for %s", w, s, p, ns, prev)
				}
				seen[ns] = ns
			}
		}
	}
	if got := runNamespace("basic", "schedq", 0); got != "basic-schedq" {
		t.Errorf("the first pair's namespace = %q, want basic-schedq as before", got)
	}
}
