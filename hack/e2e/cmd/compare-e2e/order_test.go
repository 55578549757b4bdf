package main

import "testing"

func TestRunOrder(t *testing.T) {
	c := []scheduler{{name: "kube-scheduler"}, {name: "schedq"}}
	for _, tc := range []struct {
		name, first string
		workload    int
		want        string
	}{
		{"alternate starts with kube-scheduler", "alternate", 0, "kube-scheduler"},
		{"alternate gives the second workload to schedq first", "alternate", 1, "schedq"},
		{"alternate goes back on the third", "alternate", 2, "kube-scheduler"},
		{"kube-scheduler always first", "kube-scheduler", 1, "kube-scheduler"},
		{"schedq always first", "schedq", 0, "schedq"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := runOrder(c, tc.workload, tc.first)
			if len(got) != 2 || got[0].name != tc.want || got[0].name == got[1].name {
				t.Fatalf("runOrder(%d, %q) = %s, %s; want %s first", tc.workload, tc.first, got[0].name, got[1].name, tc.want)
			}
		})
	}
}
