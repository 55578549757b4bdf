//go:build unix

package sim

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// fifo makes a named pipe at path that gives data to the first reader
// that opens it: a file with no size to check before reading, as
// /dev/zero or a process substitution is.
func fifo(t *testing.T, path, data string) {
	t.Helper()
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Skipf("no named pipes here: %v", err)
	}
	go func() {
		f, err := os.OpenFile(path, os.O_WRONLY, 0) // until a reader opens it
		if err != nil {
			return
		}
		f.WriteString(data) // a reader that stops early gives EPIPE
		f.Close()
	}()
	t.Cleanup(func() { // a writer no reader came for
		if f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0); err == nil {
			f.Close()
		}
	})
}

// TestInputsWithNoSizeAreReadUpToTheLimit: a snapshot or a trace file
// that is no regular file (a pipe, a device: /dev/zero would be read for
// ever) is read up to the limit a regular one is held to, then refused,
// naming the limit.
func TestInputsWithNoSizeAreReadUpToTheLimit(t *testing.T) {
	const pad = "# padding past the limit of 100 bytes\n"
	for _, tc := range []struct {
		name string
		sc   func(dir string) *Scenario
	}{
		{"snapshot", func(dir string) *Scenario {
			path := filepath.Join(dir, "snap.yaml")
			fifo(t, path, "apiVersion: v1\nkind: Node\nmetadata: {name: n1}\n"+strings.Repeat(pad, 4))
			return snapshotScenario(path)
		}},
		{"trace", func(dir string) *Scenario {
			os.WriteFile(filepath.Join(dir, "openb_node_list_all_node.csv"), []byte("sn,cpu_milli,memory_mib,gpu,model\nn1,1000,1024,0,\n"), 0o600)
			fifo(t, filepath.Join(dir, "openb_pod_list_default.csv"), "name,cpu_milli,memory_mib,num_gpu,gpu_milli\np1,100,100,0,0\np2,100,100,0,0\np3,100,100,0,0\np4,100,100,0,0\n")
			return traceScenario(dir)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer func(s, tr int64) { maxSnapshotFileBytes, maxTraceFileBytes = s, tr }(maxSnapshotFileBytes, maxTraceFileBytes)
			maxSnapshotFileBytes, maxTraceFileBytes = 100, 100
			_, err := Run(tc.sc(t.TempDir()), Options{})
			if err == nil || !strings.Contains(err.Error(), "more than the limit of 100 bytes") {
				t.Fatalf("error %v, want the limit's", err)
			}
		})
	}
}
