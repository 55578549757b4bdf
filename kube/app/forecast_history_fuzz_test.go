package app

import (
	"bytes"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// FuzzHistoryFile feeds loadHistoryFile, the reader of the forecasts'
// history file, with mutated files: it must never panic or hang, and must
// either refuse the file with an error naming it and the line, or load
// runs that encodeHistory writes and loadHistoryFile reads back the same.
// The seeds run under plain go test. Fuzz it with
// go test -run XXX -fuzz FuzzHistoryFile -fuzztime 3m -fuzzminimizetime 100x ./kube/app
func FuzzHistoryFile(f *testing.F) {
	run := `{"uid":"u1","namespace":"default","labels":{"team":"a"},"controller":{"kind":"Job","name":"j"},"runtime":"10m0s","state":"finished","observed":"2026-03-01T12:00:00Z"}` + "\n"
	cut := `{"namespace":"default","runtime":"1h","state":"censored","observed":"2026-03-01T12:00:00+02:00"}` + "\n"
	for _, seed := range []string{
		"",
		histHeader,
		histHeader + run + cut,
		histHeader + run + "{nope\n",
		histHeader + strings.Replace(run, `"10m0s"`, `"0s"`, 1),
		histHeader + strings.Replace(run, `{"team":"a"}`, `["a"]`, 1),
		histHeader + `{"namespace":"default","runtime":"1h","state":"censored"}` + "\n",
		histHeader + strings.Replace(run, `"2026-03-01T12:00:00Z"`, `"0000-01-01T00:00:00+01:00"`, 1),
		`{"kind":"SchedqHistory","version":2}` + "\n" + run,
		"apiVersion: v1\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 64<<10 {
			return
		}
		path := filepath.Join(t.TempDir(), "history.jsonl")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		l, err := loadHistoryFile(path)
		if err != nil {
			if !strings.Contains(err.Error(), path+": line ") {
				t.Fatalf("the error does not name the file and the line: %v", err)
			}
			return
		}
		labels := map[string]bool{}
		for _, o := range l.runs {
			for k := range o.pod.Labels {
				labels[k] = true
			}
		}
		var out bytes.Buffer
		if err := encodeHistory(&out, l.runs, slices.Sorted(maps.Keys(labels))); err != nil {
			t.Fatalf("loaded runs that cannot be written back: %v", err)
		}
		if err := os.WriteFile(path, out.Bytes(), 0o600); err != nil {
			t.Fatal(err)
		}
		again, err := loadHistoryFile(path)
		if err != nil {
			t.Fatalf("the file written back does not load: %v\n%s", err, out.Bytes())
		}
		if len(again.runs) != len(l.runs) {
			t.Fatalf("%d runs written back, %d loaded", len(l.runs), len(again.runs))
		}
		for i, o := range l.runs {
			a := again.runs[i]
			if a.d != o.d || a.cut != o.cut || !a.at.Equal(o.at) || a.pod.UID != o.pod.UID || a.pod.Namespace != o.pod.Namespace ||
				!maps.Equal(a.pod.Labels, o.pod.Labels) || len(a.pod.OwnerReferences) != len(o.pod.OwnerReferences) {
				t.Fatalf("run %d: loaded %+v %+v, read back %+v %+v", i, o, o.pod, a, a.pod)
			}
		}
	})
}
