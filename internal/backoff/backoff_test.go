package backoff

import (
	"math"
	"testing"
	"time"
)

func TestDuration(t *testing.T) {
	s := time.Second
	tests := []struct {
		name               string
		count              int
		initial, max, want time.Duration
	}{
		{"no failures", 0, s, 10 * s, 0},
		{"first", 1, s, 10 * s, s},
		{"second", 2, s, 10 * s, 2 * s},
		{"third", 3, s, 10 * s, 4 * s},
		{"fourth", 4, s, 10 * s, 8 * s},
		{"capped", 5, s, 10 * s, 10 * s},
		{"far past the cap", 1000, s, 10 * s, 10 * s},
		{"max int count", math.MaxInt, s, 10 * s, 10 * s},
		{"max 0 disables", 3, s, 0, 0},
		{"initial above max", 1, time.Minute, 10 * s, 10 * s},
		{"huge max, no overflow", 200, s, time.Duration(math.MaxInt64), time.Duration(1) << 62},
		{"negative count", -5, s, 10 * s, 0},
	}
	for _, tc := range tests {
		if tc.name == "huge max, no overflow" {
			got := Duration(tc.count, tc.initial, tc.max)
			if got <= 0 || got > tc.max {
				t.Errorf("%s: %v", tc.name, got)
			}
			continue
		}
		if got := Duration(tc.count, tc.initial, tc.max); got != tc.want {
			t.Errorf("%s: Duration(%d, %v, %v) = %v, want %v", tc.name, tc.count, tc.initial, tc.max, got, tc.want)
		}
	}
}

func TestWindowOf(t *testing.T) {
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	if WindowOf(base) != WindowOf(base.Add(999*time.Millisecond)) {
		t.Error("same second, different windows")
	}
	if WindowOf(base)+1 != WindowOf(base.Add(time.Second)) {
		t.Error("next second is not the next window")
	}
	pre := time.Unix(-1, 500)
	if WindowOf(pre) != -1 || WindowOf(time.Unix(0, -1)) != -1 || WindowOf(time.Unix(0, 0)) != 0 {
		t.Errorf("windows before the epoch: %d %d", WindowOf(pre), WindowOf(time.Unix(0, -1)))
	}
}
