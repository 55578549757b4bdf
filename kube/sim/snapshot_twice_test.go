package sim

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSnapshotTwiceNamesDocuments: an object that appears twice in a
// snapshot is refused naming where both are: the document of each (and
// the item, in a List), and in a directory the file of each.
func TestSnapshotTwiceNamesDocuments(t *testing.T) {
	const (
		node   = "apiVersion: v1\nkind: Node\nmetadata: {name: n1}\n"
		pod    = "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c, image: x}]}\n"
		ns     = "apiVersion: v1\nkind: Namespace\nmetadata: {name: a}\n"
		budget = "apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {name: db, namespace: shop}\nspec: {minAvailable: 1, selector: {matchLabels: {app: db}}}\n"
		claim  = "apiVersion: resource.k8s.io/v1\nkind: ResourceClaim\nmetadata: {name: c, namespace: ml}\n"
		other  = "apiVersion: v1\nkind: Node\nmetadata: {name: n2}\n"
	)
	list := func(items ...string) string {
		var b strings.Builder
		b.WriteString("apiVersion: v1\nkind: List\nitems:\n")
		for _, it := range items {
			b.WriteString("- " + strings.ReplaceAll(strings.TrimSuffix(it, "\n"), "\n", "\n  ") + "\n")
		}
		return b.String()
	}
	for _, tc := range []struct {
		name  string
		files map[string]string // one: the snapshot is that file; more: a directory
		want  string
	}{
		{"node in one file", map[string]string{"s.yaml": node + "---\n" + other + "---\n" + node}, "node n1 appears twice: document 1 and document 3"},
		{"pod in one file", map[string]string{"s.yaml": pod + "---\n# a comment\n---\n" + pod}, "pod default/p appears twice: document 1 and document 3"},
		{"namespace in a List", map[string]string{"s.yaml": other + "---\n" + list(ns, ns)}, "namespace a appears twice: document 2, items[0] and document 2, items[1]"},
		{"budget in one file", map[string]string{"s.yaml": budget + "---\n" + budget}, "PodDisruptionBudget shop/db appears twice: document 1 and document 2"},
		{"claim in one file", map[string]string{"s.yaml": claim + "---\n" + claim}, "ResourceClaim ml/c appears twice: document 1 and document 2"},
		{"node in two files", map[string]string{"a.yaml": node, "b.yaml": other + "---\n" + node}, "node n1 appears twice: a.yaml document 1 and b.yaml document 2"},
		{"pod in a typed list and a file", map[string]string{"a.yaml": "apiVersion: v1\nkind: PodList\nitems:\n- {metadata: {name: q}, spec: {containers: [{name: c, image: x}]}}\n- {metadata: {name: p}, spec: {containers: [{name: c, image: x}]}}\n", "b.yaml": pod},
			"pod default/p appears twice: a.yaml document 1, items[1] and b.yaml document 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for name, text := range tc.files {
				if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			path := dir
			if len(tc.files) == 1 {
				path = filepath.Join(dir, "s.yaml")
			}
			_, err := Run(snapshotScenario(path), Options{})
			if want := "snapshot " + path + ": " + tc.want; err == nil || !strings.Contains(err.Error(), want) {
				t.Fatalf("error %v, want %q", err, want)
			}
		})
	}
}
