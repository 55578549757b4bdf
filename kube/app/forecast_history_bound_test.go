package app

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"
	testingclock "k8s.io/utils/clock/testing"
)

// histRunLine is a finished run of uid, of runtime s seconds.
func histRunLine(uid string, s int) string {
	return fmt.Sprintf(`{"uid":%q,"namespace":"default","runtime":"%ds","state":"finished","observed":"2026-03-01T12:00:00Z"}`+"\n", uid, s)
}

// fileSum is the SHA-256 of the file at path, or of nothing if it is
// not a regular file.
func fileSum(t *testing.T, path string) [32]byte {
	t.Helper()
	if st, err := os.Stat(path); err != nil || !st.Mode().IsRegular() {
		return [32]byte{}
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return sha256.Sum256(b)
}

// TestHistoryFileBound: a history file larger than its bound, or one
// that is not a regular file (a pipe or a device, which could be
// endless and which a write would replace), is refused before it is
// read whole, naming the file and the bound, and is left as it was; a
// file at the bound loads.
func TestHistoryFileBound(t *testing.T) {
	two := histHeader + histRunLine("a", 1) + histRunLine("b", 2)
	for _, tc := range []struct {
		name string
		// make creates the file at path in dir and returns the bound to
		// load it with (0: historyFileMax, through Options.Validate).
		make    func(t *testing.T, dir, path string) int64
		runs    int
		wantErr []string // each in the error; none: it loads
	}{
		{name: "at the bound", runs: 2, make: func(t *testing.T, _, path string) int64 {
			writeFile(t, path, two)
			return int64(len(two))
		}},
		{name: "a byte past the bound", wantErr: []string{fmt.Sprintf("larger than the limit of %d bytes for", len(two)-1)}, make: func(t *testing.T, _, path string) int64 {
			writeFile(t, path, two)
			return int64(len(two)) - 1
		}},
		{name: "past historyFileMax, through --history-file", wantErr: []string{"--history-file: ", "larger than the limit of 67108864 bytes (64 MiB)"},
			make: func(t *testing.T, _, path string) int64 {
				writeFile(t, path, histHeader)
				if err := os.Truncate(path, historyFileMax+1); err != nil { // sparse: nothing written
					t.Fatal(err)
				}
				return 0
			}},
		// A file whose size says nothing (those of /proc read as 0
		// bytes) is read to the bound, and no further.
		{name: "longer than its size says", wantErr: []string{"larger than the limit of 8 bytes"}, make: func(t *testing.T, _, path string) int64 {
			if err := os.Symlink("/proc/self/maps", path); err != nil {
				t.Fatal(err)
			}
			return 8
		}},
		// Opening a pipe would wait for a writer, and what it gives may
		// never end.
		{name: "a named pipe", wantErr: []string{"--history-file: ", "not a regular file but a named pipe"}, make: func(t *testing.T, _, path string) int64 {
			if err := syscall.Mkfifo(path, 0o600); err != nil {
				t.Skip("no named pipes here:", err)
			}
			return 0
		}},
		{name: "a device", wantErr: []string{"--history-file: ", "not a regular file but a device"}, make: func(t *testing.T, _, path string) int64 {
			if err := os.Symlink("/dev/zero", path); err != nil {
				t.Fatal(err)
			}
			return 0
		}},
		{name: "a directory", wantErr: []string{"--history-file: ", "not a regular file but a directory"}, make: func(t *testing.T, _, path string) int64 {
			if err := os.Mkdir(path, 0o700); err != nil {
				t.Fatal(err)
			}
			return 0
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "history.jsonl")
			max := tc.make(t, dir, path)
			before := fileSum(t, path)
			var runs int
			var err error
			if max == 0 {
				o := Options{SchedulerName: "schedq", QPS: 50, Burst: 100, LeaseDuration: 15 * time.Second, RenewDeadline: 10 * time.Second, RetryPeriod: 2 * time.Second}
				o.History.File = path
				if err = o.Validate(); err == nil {
					runs = len(o.History.loaded.runs)
				}
			} else {
				var l *loadedHistory
				if l, err = loadHistoryFileMax(path, max); err == nil {
					runs = len(l.runs)
				}
			}
			if len(tc.wantErr) == 0 {
				if err != nil {
					t.Fatal(err)
				}
				if runs != tc.runs {
					t.Errorf("%d runs loaded, want %d", runs, tc.runs)
				}
				return
			}
			if err == nil {
				t.Fatalf("loaded %d runs, want an error", runs)
			}
			for _, want := range append(tc.wantErr, path+": ") {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not say %q", err, want)
				}
			}
			if after := fileSum(t, path); after != before {
				t.Error("the refused file changed")
			}
			if ents, _ := os.ReadDir(dir); len(ents) != 1 {
				t.Errorf("%d entries in the directory, want the file alone", len(ents))
			}
		})
	}
}

// writeFile writes s to path.
func writeFile(t *testing.T, path, s string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestHistoryFileWriteWithinBound: a write keeps the file within its
// bound, with the latest runs that fit, and leaves out a line too long
// to be read back, so that the scheduler never writes a file it would
// refuse at its next start; what it leaves out is logged.
func TestHistoryFileWriteWithinBound(t *testing.T) {
	long := strings.Repeat("<", historyLineMax/3) // each written as \u003c: six bytes
	for _, tc := range []struct {
		name    string
		max     int64
		longAt  int // the run with a namespace too long for a line, or -1
		want    []string
		dropped string // in the log
	}{
		{name: "all fit", max: historyFileMax, longAt: -1, want: []string{"r0", "r1", "r2", "r3", "r4"}},
		{name: "the latest that fit", max: int64(len(histHeader)) + 3*int64(len(histRunLine("r0", 1))) + 10, longAt: -1,
			want: []string{"r2", "r3", "r4"}, dropped: "runs=2"},
		{name: "a line too long to read back", max: historyFileMax, longAt: 2, want: []string{"r0", "r1", "r3", "r4"}, dropped: "runs=1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newTestHistory(testingclock.NewFakeClock(liveNow))
			for i := range 5 {
				p := histPod(fmt.Sprint("r", i), "", "", time.Second)
				if i == tc.longAt {
					p.Namespace = long
				}
				h.add(observed{pod: p, d: time.Second, at: liveNow})
			}
			path := filepath.Join(t.TempDir(), "history.jsonl")
			var log bytes.Buffer
			w := newTestFile(path, h, []*v1.Pod{}, &log)
			w.max = tc.max
			w.save(true)
			if st, err := os.Stat(path); err != nil || st.Size() > tc.max {
				t.Fatalf("the file: %v, %v; want at most %d bytes", st, err, tc.max)
			}
			l, err := loadHistoryFileMax(path, tc.max)
			if err != nil {
				t.Fatalf("the file written does not load back: %v", err)
			}
			var got []string
			for _, o := range l.runs {
				got = append(got, string(o.pod.UID))
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("runs written %v, want %v", got, tc.want)
			}
			switch {
			case tc.dropped == "" && strings.Contains(log.String(), "left out"):
				t.Errorf("the log says runs were left out: %s", log.String())
			case tc.dropped != "" && (!strings.Contains(log.String(), "left out") || !strings.Contains(log.String(), tc.dropped)):
				t.Errorf("the log does not say %s were left out: %s", tc.dropped, log.String())
			}
		})
	}
}

// TestHistoryFileFollowsLinks: a --history-file that is a symbolic link
// is written where the link leads (the link stays), whether the file
// there exists yet or not: a write renamed over the link replaced it with
// a file of its own, and the file it named (on a volume that outlives
// the container, say) was never written again.
func TestHistoryFileFollowsLinks(t *testing.T) {
	kept := histHeader + histRunLine("old", 600)
	for _, tc := range []struct {
		name   string
		exists bool // the file the link names
		rel    bool // the link's target is relative
		want   []string
	}{
		{name: "to a file", exists: true, want: []string{"old", "new"}},
		{name: "to no file yet", want: []string{"new"}},
		{name: "relative, to a file", exists: true, rel: true, want: []string{"old", "new"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			dir, volume := filepath.Join(root, "etc"), filepath.Join(root, "volume")
			for _, d := range []string{dir, volume} {
				if err := os.Mkdir(d, 0o700); err != nil {
					t.Fatal(err)
				}
			}
			target, link := filepath.Join(volume, "history.jsonl"), filepath.Join(dir, "history.jsonl")
			if tc.exists {
				writeFile(t, target, kept)
			}
			to := target
			if tc.rel {
				to = filepath.Join("..", "volume", "history.jsonl")
			}
			if err := os.Symlink(to, link); err != nil {
				t.Fatal(err)
			}
			o := Options{Clock: testingclock.NewFakeClock(liveNow)}
			o.History.File = link
			h := newTestHistory(testingclock.NewFakeClock(liveNow))
			ctx, cancel := context.WithCancel(t.Context())
			done, err := startHistoryFile(ctx, o, h, cache.NewStore(cache.MetaNamespaceKeyFunc), prometheus.NewRegistry(), slog.New(slog.NewTextHandler(io.Discard, nil)))
			if err != nil {
				t.Fatal(err)
			}
			finish(h, histPod("new", "a", "", time.Minute))
			cancel() // the last write
			<-done
			if st, err := os.Lstat(link); err != nil || st.Mode()&os.ModeSymlink == 0 {
				t.Fatalf("the link is now %v (%v); want it still a link", st.Mode(), err)
			}
			l, err := loadHistoryFile(target)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, o := range l.runs {
				got = append(got, string(o.pod.UID))
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("the file the link names holds %v, want %v", got, tc.want)
			}
		})
	}
}

// TestHistoryFileLoadKeepsLatest: loading keeps in memory only the runs
// the history keeps, the latest historyMax, however many the file holds
// within its bound (one of 64 MiB holds some 600,000 short runs, each a
// pod in memory: most of a gigabyte); loading more than 2×historyMax
// runs keeps the latest, in order.
func TestHistoryFileLoadKeepsLatest(t *testing.T) {
	for _, tc := range []struct {
		name string
		runs int
	}{
		{name: "fewer than kept", runs: 3},
		{name: "just past the history", runs: historyMax + 5},
		{name: "past two windows", runs: 2*historyMax + 7},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b strings.Builder
			b.WriteString(histHeader)
			for i := range tc.runs {
				b.WriteString(histRunLine(fmt.Sprint("u", i), i+1))
			}
			path := filepath.Join(t.TempDir(), "history.jsonl")
			writeFile(t, path, b.String())
			l, err := loadHistoryFile(path)
			if err != nil {
				t.Fatal(err)
			}
			want := min(tc.runs, historyMax)
			if l.dropped != tc.runs-want {
				t.Errorf("%d runs said dropped, want %d", l.dropped, tc.runs-want)
			}
			if len(l.runs) != want || cap(l.runs) > historyMax {
				t.Fatalf("%d runs loaded (room for %d), want %d, room for at most %d", len(l.runs), cap(l.runs), want, historyMax)
			}
			for i, o := range l.runs {
				if uid := fmt.Sprint("u", tc.runs-want+i); string(o.pod.UID) != uid {
					t.Fatalf("run %d is %s, want %s: the latest, oldest first", i, o.pod.UID, uid)
				}
			}
		})
	}
}
