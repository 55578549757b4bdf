package main

import (
	"errors"
	"math"
	"strings"
	"testing"
)

// checkFlags refuses, naming the flag, what would run nothing, run
// something else than asked, or run at a size no one asked for.
func TestCheckFlags(t *testing.T) {
	for _, tc := range []struct {
		name, only, first string
		scale             float64
		fence             bool
		pairs             int
		args              []string
		want              string // part of the error; "" for none
		picked            int
	}{
		{"every workload", "", "alternate", 1, false, 1, nil, "", len(workloads(1))},
		{"one workload", "basic", "schedq", 0.05, false, 1, nil, "", 1},
		{"-fence with one workload", "basic", "alternate", 1, true, 1, nil, "", 1},
		{"-only matching nothing", "nosuch", "alternate", 1, false, 1, nil, `-only "nosuch"`, 0},
		{"a stray argument", "", "alternate", 1, false, 1, []string{"basic"}, `"basic"`, 0},
		{"-scale 0", "", "alternate", 0, false, 1, nil, "-scale 0", 0},
		{"-scale NaN", "", "alternate", math.NaN(), false, 1, nil, "-scale NaN", 0},
		{"-scale +Inf", "", "alternate", math.Inf(1), false, 1, nil, "-scale +Inf", 0},
		{"-first unknown", "", "kube", 1, false, 1, nil, `-first "kube"`, 0},
		{"-fence with several workloads", "", "alternate", 1, true, 1, nil, "-fence", 0},
		{"four pairs of one workload", "basic", "alternate", 1, false, 4, nil, "", 1},
		{"-pairs 0", "basic", "alternate", 1, false, 0, nil, "-pairs 0", 0},
		{"-fence with two pairs", "basic", "alternate", 1, true, 2, nil, "-pairs 2", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := checkFlags(tc.scale, tc.only, tc.first, tc.fence, tc.pairs, tc.args)
			if tc.want == "" {
				if err != nil || len(got) != tc.picked {
					t.Fatalf("checkFlags = %d workloads, %v; want %d, nil", len(got), err, tc.picked)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("checkFlags = %v, want an error naming %s", err, tc.want)
			}
		})
	}
}

// A run that failed makes the command fail, after the table.
func TestRunsFailed(t *testing.T) {
	for _, tc := range []struct {
		name    string
		results []result
		want    string
	}{
		{"all ran", []result{{scheduler: "a"}, {scheduler: "b"}}, ""},
		{"one failed", []result{{scheduler: "a"}, {scheduler: "b", err: errors.New("timeout")}}, "1 of 2 runs failed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := runsFailed(tc.results)
			if (err == nil) != (tc.want == "") || (err != nil && !strings.Contains(err.Error(), tc.want)) {
				t.Fatalf("runsFailed = %v, want %q", err, tc.want)
			}
		})
	}
}
