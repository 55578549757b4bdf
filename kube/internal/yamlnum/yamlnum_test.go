package yamlnum

import "testing"

func TestNonFinite(t *testing.T) {
	for _, tc := range []struct{ name, yaml, want string }{
		{"NaN in a map", "a: 1\nb:\n  c: .nan\n", "line 3: b.c: .nan is not a finite number"},
		{"infinity in a list", "items:\n- {x: 1}\n- {x: -.Inf}\n", "line 3: items[1].x: -.Inf is not a finite number"},
		{"quoted, a string", "a: \".nan\"\n", ""},
		{"finite", "a: 1.5e3\n", ""},
		{"not yaml", "a: [\n", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := NonFinite([]byte(tc.yaml)); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}
