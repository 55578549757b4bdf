package app

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"
	testingclock "k8s.io/utils/clock/testing"
)

// histPod is a pod of ours in namespace default, of team (none if empty)
// and Job job (none if empty), started ran before liveNow, running on n0.
func histPod(uid, team, job string, ran time.Duration) *v1.Pod {
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: uid, Namespace: "default", UID: types.UID(uid),
		Labels: map[string]string{"other": "dropped"}}}
	if team != "" {
		p.Labels["team"] = team
	}
	if job != "" {
		p.OwnerReferences = []metav1.OwnerReference{{Kind: "Job", Name: job, Controller: new(true)}}
	}
	p.Spec.SchedulerName, p.Spec.NodeName, p.Status.Phase = "schedq", "n0", v1.PodRunning
	p.Status.StartTime = &metav1.Time{Time: liveNow.Add(-ran)}
	return p
}

// finish is p succeeded now, fed to h as the informer would.
func finish(h *liveHistory, p *v1.Pod) {
	ended := p.DeepCopy()
	ended.Status.Phase = v1.PodSucceeded
	h.handler().OnUpdate(p, ended)
}

// newTestHistory is a history of ours at liveNow, by label team.
func newTestHistory(clk clock.PassiveClock) *liveHistory {
	return &liveHistory{schedulerName: "schedq", clock: clk, opts: HistoryOptions{Labels: []string{"team"}}}
}

// newTestFile writes h to path, with the pods of running as running,
// logging into log.
func newTestFile(path string, h *liveHistory, running []*v1.Pod, log io.Writer) *historyFile {
	errs := prometheus.NewCounter(prometheus.CounterOpts{Name: "errors_total"})
	return newHistoryFile(path, h, func() []*v1.Pod { return running }, slog.New(slog.NewTextHandler(log, nil)), errs)
}

const histHeader = `{"kind":"SchedqHistory","version":1}` + "\n"

// TestHistoryFileLoad: what loading makes of each kind of file; a bad one
// is named with its line and field.
func TestHistoryFileLoad(t *testing.T) {
	run := `{"uid":"u1","namespace":"default","labels":{"team":"a"},"controller":{"kind":"Job","name":"j"},"runtime":"10m0s","state":"finished","observed":"2026-03-01T12:00:00Z"}` + "\n"
	cut := `{"namespace":"default","runtime":"1h","state":"censored","observed":"2026-03-01T12:00:00Z"}` + "\n"
	for _, tc := range []struct {
		name     string
		content  *string // nil: no file
		runs     int
		missing  bool
		wantErr  []string // each in the error
		cutFirst bool
	}{
		{name: "missing", missing: true},
		{name: "empty", content: new(string(""))},
		{name: "header only", content: new(histHeader)},
		{name: "two runs", content: new(histHeader + run + cut), runs: 2},
		{name: "not JSON", content: new(histHeader + run + "{nope\n"), wantErr: []string{"line 3", "not a JSON object"}},
		{name: "wrong version", content: new(`{"kind":"SchedqHistory","version":2}` + "\n" + run), wantErr: []string{"line 1", "version: 2 is not supported", "reads version 1"}},
		{name: "no version", content: new(`{"kind":"SchedqHistory"}` + "\n"), wantErr: []string{"line 1", "version: 0"}},
		{name: "another kind of file", content: new("apiVersion: v1\n"), wantErr: []string{"line 1", "header"}},
		{name: "bad runtime", content: new(histHeader + strings.Replace(run, `"10m0s"`, `"ten"`, 1)), wantErr: []string{"line 2", `runtime: "ten" is not a duration`}},
		{name: "runtime not above 0", content: new(histHeader + strings.Replace(run, `"10m0s"`, `"0s"`, 1)), wantErr: []string{"line 2", "runtime: 0s is not above 0"}},
		{name: "bad state", content: new(histHeader + strings.Replace(run, `"finished"`, `"done"`, 1)), wantErr: []string{"line 2", `state: "done"`}},
		{name: "labels of the wrong type", content: new(histHeader + strings.Replace(run, `{"team":"a"}`, `["a"]`, 1)), wantErr: []string{"line 2", "labels: array"}},
		{name: "unknown field", content: new(histHeader + strings.Replace(run, `"uid"`, `"id"`, 1)), wantErr: []string{"line 2", `unknown field "id"`}},
		// Such a time reads, but in UTC it has no four-digit year, and
		// the file written back (in UTC) would fail at every write.
		{name: "observed before year 0 in UTC", content: new(histHeader + strings.Replace(run, `"2026-03-01T12:00:00Z"`, `"0000-01-01T00:00:00+01:00"`, 1)),
			wantErr: []string{"line 2", "observed: 0000-01-01T00:00:00+01:00 is, in UTC, outside the years 0000 to 9999"}},
		{name: "observed after year 9999 in UTC", content: new(histHeader + strings.Replace(run, `"2026-03-01T12:00:00Z"`, `"9999-12-31T23:59:59-01:00"`, 1)),
			wantErr: []string{"line 2", "observed: 9999-12-31T23:59:59-01:00 is, in UTC"}},
		{name: "no observed", content: new(histHeader + `{"namespace":"default","runtime":"1h","state":"censored"}` + "\n"), wantErr: []string{"line 2", "observed: missing"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "history.jsonl")
			if tc.content != nil {
				if err := os.WriteFile(path, []byte(*tc.content), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			l, err := loadHistoryFile(path)
			if len(tc.wantErr) > 0 {
				if err == nil {
					t.Fatalf("loaded %+v, want an error", l)
				}
				for _, want := range append(tc.wantErr, path) {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("error %q does not say %q", err, want)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(l.runs) != tc.runs || l.missing != tc.missing {
				t.Errorf("got %d runs, missing %v; want %d, %v", len(l.runs), l.missing, tc.runs, tc.missing)
			}
		})
	}
}

// TestHistoryFileValidate: Options.Validate refuses a history file that
// does not parse, naming the flag, the file and the line, before
// anything connects, and a file in a directory that is not there or
// where no file can be created (every write would fail).
func TestHistoryFileValidate(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.jsonl")
	if err := os.WriteFile(bad, []byte(histHeader+"{}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "sched.yaml")
	const cfgText = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles:\n- schedulerName: schedq\n" +
		"  pluginConfig:\n  - name: Schedq\n    args: {history: {file: %q}}\n"
	if err := os.WriteFile(cfg, fmt.Appendf(nil, cfgText, bad), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, file, config string
		want               string // empty: valid
	}{
		{name: "missing file", file: filepath.Join(dir, "new.jsonl")},
		{name: "corrupt", file: bad, want: "--history-file: " + bad + ": line 2: runtime"},
		{name: "corrupt, named by the config file", config: cfg, want: "--config " + cfg + ": profiles[0].pluginConfig[0].args.history.file: " + bad + ": line 2: runtime"},
		{name: "no directory", file: filepath.Join(dir, "nodir", "h.jsonl"), want: "--history-file: " + filepath.Join(dir, "nodir", "h.jsonl") + ": the directory"},
		{name: "a directory no file can be created in", file: "/proc/h.jsonl", want: "--history-file: /proc/h.jsonl: the directory /proc: no file can be created in it"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := Options{SchedulerName: "schedq", QPS: 50, Burst: 100, LeaseDuration: 15 * time.Second, RenewDeadline: 10 * time.Second, RetryPeriod: 2 * time.Second}
			o.History.File, o.Config.File = tc.file, tc.config
			err := o.Validate()
			switch {
			case tc.want == "" && err != nil:
				t.Fatal(err)
			case tc.want == "" && (o.History.loaded == nil || !o.History.loaded.missing):
				t.Errorf("loaded %+v, want a missing file", o.History.loaded)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("error %v, want %q", err, tc.want)
			}
		})
	}
}

// TestHistoryFileRoundTrip: a history written and loaded back gives the
// same estimates, each class and censoring kept, and the pods running at
// the write count as censored; the other labels are not written.
func TestHistoryFileRoundTrip(t *testing.T) {
	clk := testingclock.NewFakeClock(liveNow)
	h := newTestHistory(clk)
	for i := range 12 {
		finish(h, histPod(fmt.Sprint("a", i), "a", "", time.Duration(10+i)*time.Minute))
	}
	for i := range 6 {
		h.handler().OnDelete(histPod(fmt.Sprint("acut", i), "a", "", 15*time.Minute))
	}
	for i := range 8 {
		finish(h, histPod(fmt.Sprint("j", i), "", "job", time.Duration(30+i)*time.Minute))
	}
	running := []*v1.Pod{histPod("r0", "a", "", 20*time.Minute), histPod("r1", "a", "", 25*time.Minute)}
	path := filepath.Join(t.TempDir(), "history.jsonl")
	newTestFile(path, h, running, io.Discard).save(true)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "dropped") {
		t.Errorf("the file keeps a label not configured:\n%s", b)
	}
	l, err := loadHistoryFile(path)
	if err != nil {
		t.Fatal(err)
	}
	back := newTestHistory(clk)
	newTestFile(path, back, nil, io.Discard).seed(l)

	// What the history was with the running pods cut at the write.
	want := newTestHistory(clk)
	runs, _ := h.kept()
	for _, o := range runs {
		want.add(o)
	}
	for _, p := range running {
		want.handler().OnDelete(p)
	}
	for _, tc := range []struct {
		name string
		pod  *v1.Pod
	}{
		{"team a", histPod("x", "a", "", 0)},
		{"the job", histPod("y", "", "job", 0)},
		{"a class without runs", histPod("z", "b", "", 0)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, got := want.history(), back.history()
			for _, q := range []float64{0.1, 0.5, 0.9} {
				for _, elapsed := range []time.Duration{0, 12 * time.Minute} {
					wd, wok := w.Quantile(tc.pod, elapsed, q)
					gd, gok := got.Quantile(tc.pod, elapsed, q)
					if wd != gd || wok != gok {
						t.Errorf("quantile %v after %v: got %v %v, want %v %v", q, elapsed, gd, gok, wd, wok)
					}
				}
			}
		})
	}
	if got, _ := back.kept(); len(got) != 12+6+8+2 {
		t.Errorf("%d runs loaded, want %d", len(got), 12+6+8+2)
	}
}

// TestHistoryFileKeepsLatest: loading more runs than the history keeps
// leaves the latest historyMax.
func TestHistoryFileKeepsLatest(t *testing.T) {
	var b strings.Builder
	b.WriteString(histHeader)
	for i := range historyMax + 5 {
		fmt.Fprintf(&b, `{"uid":"u%d","namespace":"default","runtime":"%ds","state":"finished","observed":"2026-03-01T12:00:00Z"}`+"\n", i, i+1)
	}
	path := filepath.Join(t.TempDir(), "history.jsonl")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	l, err := loadHistoryFile(path)
	if err != nil {
		t.Fatal(err)
	}
	h := newTestHistory(testingclock.NewFakeClock(liveNow))
	newTestFile(path, h, nil, io.Discard).seed(l)
	runs, _ := h.kept()
	if len(runs) != historyMax || runs[0].d != 6*time.Second || runs[len(runs)-1].d != (historyMax+5)*time.Second {
		t.Errorf("kept %d runs from %v to %v, want %d from 6s to %v", len(runs), runs[0].d, runs[len(runs)-1].d, historyMax, (historyMax+5)*time.Second)
	}
	if len(h.byUID) != historyMax {
		t.Errorf("%d UIDs indexed, want %d", len(h.byUID), historyMax)
	}
}

// TestHistoryFileWriteOutsideLock: while a write is under way the
// history's lock is free: the informer's handler learns and a forecast
// reads the history (run with -race: the write works on its copy).
func TestHistoryFileWriteOutsideLock(t *testing.T) {
	clk := testingclock.NewFakeClock(liveNow)
	h := newTestHistory(clk)
	for i := range 50 {
		finish(h, histPod(fmt.Sprint("a", i), "a", "", time.Duration(i+1)*time.Minute))
	}
	w := newTestFile(filepath.Join(t.TempDir(), "history.jsonl"), h, []*v1.Pod{histPod("r", "a", "", time.Hour)}, io.Discard)
	inWrite, release := make(chan struct{}), make(chan struct{})
	var buf bytes.Buffer
	w.write = func(_ string, encode func(io.Writer) error) error {
		close(inWrite)
		<-release
		return encode(&buf)
	}
	var wrote sync.WaitGroup
	wrote.Go(func() { w.save(true) })
	<-inWrite
	if !h.mu.TryLock() {
		close(release)
		wrote.Wait()
		t.Fatal("the write holds the history's lock")
	}
	h.mu.Unlock()
	var learning sync.WaitGroup
	for i := range 4 {
		learning.Go(func() {
			finish(h, histPod(fmt.Sprint("b", i), "a", "", time.Minute))
			h.history()
		})
	}
	close(release) // the encoding runs while they learn
	learning.Wait()
	wrote.Wait()
	if n := strings.Count(buf.String(), "\n"); n != 1+50+1 {
		t.Errorf("the write has %d lines, want the header, the 50 runs copied before it and the running pod", n)
	}
	if runs, _ := h.kept(); len(runs) != 54 {
		t.Errorf("%d runs kept, want 54", len(runs))
	}
}

// errAfter is a writer that fails once it has taken n bytes.
type errAfter struct {
	w io.Writer
	n int
}

func (e *errAfter) Write(b []byte) (int, error) {
	if len(b) > e.n {
		k, _ := e.w.Write(b[:e.n])
		e.n = 0
		return k, errors.New("disk full")
	}
	e.n -= len(b)
	return e.w.Write(b)
}

// TestHistoryFileAtomic: a write that fails leaves the file as it was and
// no temporary file behind, and is logged and counted; one that succeeds
// replaces the file.
func TestHistoryFileAtomic(t *testing.T) {
	const old = histHeader + `{"namespace":"default","runtime":"1h0m0s","state":"finished","observed":"2026-03-01T12:00:00Z"}` + "\n"
	for _, tc := range []struct {
		name   string
		break_ func(t *testing.T, w *historyFile, dir string) // nil: the write succeeds
	}{
		{name: "succeeds"},
		{name: "fails while writing", break_: func(t *testing.T, w *historyFile, dir string) {
			w.write = func(path string, encode func(io.Writer) error) error {
				return writeAtomic(path, func(out io.Writer) error { return encode(&errAfter{w: out, n: 40}) })
			}
		}},
		{name: "directory not writable", break_: func(t *testing.T, w *historyFile, dir string) {
			if err := os.Chmod(dir, 0o500); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.Chmod(dir, 0o700) })
			if f, err := os.CreateTemp(dir, "probe"); err == nil { // root writes anyway
				f.Close()
				os.Remove(f.Name())
				t.Skip("the directory stays writable to this user")
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "history.jsonl")
			if err := os.WriteFile(path, []byte(old), 0o600); err != nil {
				t.Fatal(err)
			}
			h := newTestHistory(testingclock.NewFakeClock(liveNow))
			for i := range 20 {
				finish(h, histPod(fmt.Sprint("a", i), "a", "", time.Minute))
			}
			var log bytes.Buffer
			w := newTestFile(path, h, nil, &log)
			if tc.break_ != nil {
				tc.break_(t, w, dir)
			}
			w.save(false)
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			failed := tc.break_ != nil
			if got := string(b) == old; got != failed {
				t.Errorf("file unchanged: %v, want %v; it holds:\n%s", got, failed, b)
			}
			if !failed && strings.Count(string(b), "\n") != 21 {
				t.Errorf("the file has not the 20 runs:\n%s", b)
			}
			if n := testutil.ToFloat64(w.errors); n != map[bool]float64{true: 1}[failed] {
				t.Errorf("%v errors counted, failed %v", n, failed)
			}
			if failed != strings.Contains(log.String(), "writing the history file failed") {
				t.Errorf("log %q, failed %v", log.String(), failed)
			}
			if entries, _ := os.ReadDir(dir); len(entries) != 1 {
				t.Errorf("the directory holds %v, want the file alone", entries)
			}
		})
	}
}

// TestHistoryFileOneRunPerPod: a pod running when the file was written
// counts as censored after a restart until it is seen to end, and then
// as one finished run, whether it ends with the scheduler watching or
// while it was down; one still running at the next write stays one
// censored run, the longer.
func TestHistoryFileOneRunPerPod(t *testing.T) {
	for _, tc := range []struct {
		name     string
		after    func(h *liveHistory, p *v1.Pod) // after the restart
		running  bool                            // p runs at the second write
		wantCut  bool
		wantTime time.Duration
	}{
		{name: "ends after the restart", after: func(h *liveHistory, p *v1.Pod) { finish(h, p) }, wantTime: 40 * time.Minute},
		{name: "ended while down", after: func(h *liveHistory, p *v1.Pod) {
			ended := p.DeepCopy()
			ended.Status.Phase = v1.PodSucceeded
			h.handler().OnAdd(ended, true)
		}, wantTime: 40 * time.Minute},
		{name: "still running", after: func(h *liveHistory, p *v1.Pod) { h.handler().OnAdd(p, true) }, running: true, wantCut: true, wantTime: 40 * time.Minute},
		{name: "deleted while down", after: func(*liveHistory, *v1.Pod) {}, wantCut: true, wantTime: 30 * time.Minute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := testingclock.NewFakeClock(liveNow)
			path := filepath.Join(t.TempDir(), "history.jsonl")
			first := newTestHistory(clk)
			finish(first, histPod("other", "a", "", time.Minute))
			p := histPod("p", "a", "", 30*time.Minute)
			newTestFile(path, first, []*v1.Pod{p}, io.Discard).save(true)

			clk.Step(10 * time.Minute) // the restart
			p.Status.StartTime = &metav1.Time{Time: clk.Now().Add(-40 * time.Minute)}
			l, err := loadHistoryFile(path)
			if err != nil {
				t.Fatal(err)
			}
			second := newTestHistory(clk)
			var running []*v1.Pod
			if tc.running {
				running = []*v1.Pod{p}
			}
			w := newTestFile(path, second, running, io.Discard)
			w.seed(l)
			tc.after(second, p)
			w.save(true)
			if l, err = loadHistoryFile(path); err != nil {
				t.Fatal(err)
			}
			var ofP []observed
			for _, o := range l.runs {
				if o.pod.UID == "p" {
					ofP = append(ofP, o)
				}
			}
			if len(l.runs) != 2 || len(ofP) != 1 || ofP[0].cut != tc.wantCut || ofP[0].d != tc.wantTime {
				t.Fatalf("%d runs, of p %+v; want 2, p's one with cut %v after %v", len(l.runs), ofP, tc.wantCut, tc.wantTime)
			}
		})
	}
}

// TestHistoryFileLoop: the file is written once a minute if the runs
// changed since the last write, and at shutdown.
func TestHistoryFileLoop(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change []bool // per minute: a run learnt in it
		want   int    // writes, the last at shutdown
	}{
		{name: "no change", change: []bool{false, false}, want: 1},
		{name: "a change a minute", change: []bool{true, true, true}, want: 4},
		{name: "one change", change: []bool{false, true, false}, want: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := newTestHistory(clock.RealClock{})
				w := newTestFile("unused", h, nil, io.Discard)
				var writes int
				w.write = func(string, func(io.Writer) error) error { writes++; return nil }
				ctx, cancel := context.WithCancel(t.Context())
				done := make(chan struct{})
				go func() {
					defer close(done)
					w.loop(ctx, clock.RealClock{})
				}()
				for i, c := range tc.change {
					if c {
						p := histPod(fmt.Sprint("p", i), "a", "", 0)
						p.Status.StartTime = &metav1.Time{Time: time.Now().Add(-time.Minute)}
						finish(h, p)
					}
					time.Sleep(historyWriteEvery) // virtual: synctest's clock
					synctest.Wait()
				}
				cancel()
				<-done
				if writes != tc.want {
					t.Errorf("%d writes, want %d", writes, tc.want)
				}
			})
		})
	}
}

// TestHistoryFileAcrossRun: the scheduler (run, on a fake clientset)
// starts from the runs of its --history-file and, at shutdown, writes
// them back with the pod it saw running, as censored. It runs in a
// synctest bubble: the start-up's polls pass in virtual time and
// synctest.Wait tells when the caches have synced, where the test spun
// on /readyz.
func TestHistoryFileAcrossRun(t *testing.T) {
	path := filepath.Join(t.TempDir(), "history.jsonl")
	const kept = histHeader + `{"uid":"old","namespace":"default","runtime":"10m0s","state":"finished","observed":"2026-03-01T12:00:00Z"}` + "\n"
	if err := os.WriteFile(path, []byte(kept), 0o600); err != nil {
		t.Fatal(err)
	}
	synctest.Test(t, func(t *testing.T) {
		running := testPod("r", "schedq", "1")
		running.Spec.NodeName, running.Status.Phase = "n0", v1.PodRunning
		running.Status.StartTime = &metav1.Time{Time: time.Now().Add(-time.Hour)}
		client := fakeCluster(roomyNode("n0"), &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, running)
		got := make(chan *liveState, 1)
		served := make(chan http.Handler, 1)
		o := Options{SchedulerName: "schedq", forecasting: func(_ *forecaster, ls *liveState) { got <- ls },
			serving: func(h http.Handler) { served <- h }}
		o.History.File = path
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() {
			done <- run(ctx, clients{sched: client, events: client, lease: client}, nil, nil, o, slog.New(slog.NewTextHandler(io.Discard, nil)))
		}()
		ls, h := <-got, <-served
		time.Sleep(time.Second) // virtual: the start-up's sync polls pass
		synctest.Wait()
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/readyz", nil))
		if rec.Code != http.StatusOK || len(ls.pods.List()) != 1 {
			t.Fatalf("after start-up: /readyz %d %q, %d pods listed; want 200 and the running pod", rec.Code, rec.Body, len(ls.pods.List()))
		}
		cancel()
		if err := <-done; err != nil {
			t.Fatalf("run: %v", err)
		}
		l, err := loadHistoryFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if len(l.runs) != 2 || l.runs[0].pod.UID != "old" || l.runs[0].d != 10*time.Minute || l.runs[0].cut ||
			l.runs[1].pod.UID != running.UID || !l.runs[1].cut || l.runs[1].d < time.Hour {
			t.Errorf("the file after the run: %+v; want the old run, then the running pod censored after an hour or more", l.runs)
		}
	})
}

// historyWithCensoredP is a history holding p's run censored at liveNow
// (30 minutes, as seeding adds a running pod), then others finished runs
// of other pods (o0, o1, ...); 10 minutes later p has run 40 minutes.
func historyWithCensoredP(others int) (*liveHistory, *v1.Pod) {
	clk := testingclock.NewFakeClock(liveNow)
	h := newTestHistory(clk)
	p := histPod("p", "a", "", 30*time.Minute)
	h.add(observed{pod: p, d: 30 * time.Minute, cut: true, at: liveNow})
	for i := range others {
		finish(h, histPod(fmt.Sprint("o", i), "a", "", time.Minute))
	}
	clk.Step(10 * time.Minute)
	p.Status.StartTime = &metav1.Time{Time: clk.Now().Add(-40 * time.Minute)}
	return h, p
}

// TestHistoryReplacedRunIsTheLatest: a pod's censored run (running at
// the last write, loaded after a restart) that its finished run replaces
// becomes the latest run, as if it had been recorded when it finished:
// it is listed (and written) last, and the history, full, evicts the
// oldest of the others before it. Before, the finished run kept the
// censored run's place, the oldest, and the next run evicted it.
func TestHistoryReplacedRunIsTheLatest(t *testing.T) {
	for _, tc := range []struct {
		name   string
		others int // finished runs of other pods after p's censored one
		then   int // runs of other pods after p finishes
		// wantFirst is the UID of the oldest run kept, wantLast the latest.
		wantFirst, wantLast string
	}{
		{name: "listed last", others: 3, wantFirst: "o0", wantLast: "p"},
		{name: "full: the next run evicts the oldest other", others: historyMax - 1, then: 1, wantFirst: "o1", wantLast: "n0"},
		{name: "full: kept until the others before it are evicted", others: historyMax - 1, then: historyMax - 1, wantFirst: "p", wantLast: fmt.Sprint("n", historyMax-2)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, p := historyWithCensoredP(tc.others)
			finish(h, p)
			for i := range tc.then {
				finish(h, histPod(fmt.Sprint("n", i), "a", "", time.Minute))
			}
			runs, _ := h.kept()
			want := min(historyMax, 1+tc.others+tc.then)
			if len(runs) != want || len(h.byUID) != want {
				t.Fatalf("%d runs kept, %d indexed, want %d", len(runs), len(h.byUID), want)
			}
			if first, last := string(runs[0].pod.UID), string(runs[len(runs)-1].pod.UID); first != tc.wantFirst || last != tc.wantLast {
				t.Errorf("runs from %s to %s, want from %s to %s", first, last, tc.wantFirst, tc.wantLast)
			}
			var ofP []observed
			for _, o := range runs {
				if o.pod.UID == "p" {
					ofP = append(ofP, o)
				}
			}
			if len(ofP) != 1 || ofP[0].cut || ofP[0].d != 40*time.Minute || h.censored("p") {
				t.Errorf("p's runs %+v, want one finished run of 40m", ofP)
			}
		})
	}
}

// TestHistoryFileRunningRunIsTheLatest: a pod whose censored run the
// history keeps and that still runs at a write is written as the latest
// run, with its longer elapsed time, not at its old place: the file stays
// oldest first, and when the runs and the running pods are more than the
// history keeps, the oldest of the others is left out, not it.
func TestHistoryFileRunningRunIsTheLatest(t *testing.T) {
	for _, tc := range []struct {
		name                string
		others              int  // finished runs of other pods after p's censored one
		q                   bool // q, a pod the history has no run of, runs at the write too
		wantFirst, wantLast string
	}{
		{name: "written last", others: 2, wantFirst: "o0", wantLast: "p"},
		{name: "full: the oldest other is left out", others: historyMax - 1, q: true, wantFirst: "o1", wantLast: "q"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, p := historyWithCensoredP(tc.others)
			running := []*v1.Pod{p}
			if tc.q {
				running = append(running, histPod("q", "a", "", time.Minute))
			}
			path := filepath.Join(t.TempDir(), "history.jsonl")
			newTestFile(path, h, running, io.Discard).save(true)
			l, err := loadHistoryFile(path)
			if err != nil {
				t.Fatal(err)
			}
			want := min(historyMax, 1+tc.others+len(running)-1)
			if len(l.runs) != want {
				t.Fatalf("%d runs written, want %d", len(l.runs), want)
			}
			if first, last := string(l.runs[0].pod.UID), string(l.runs[len(l.runs)-1].pod.UID); first != tc.wantFirst || last != tc.wantLast {
				t.Errorf("runs from %s to %s, want from %s to %s", first, last, tc.wantFirst, tc.wantLast)
			}
			var ofP []observed
			for _, o := range l.runs {
				if o.pod.UID == "p" {
					ofP = append(ofP, o)
				}
			}
			if len(ofP) != 1 || !ofP[0].cut || ofP[0].d != 40*time.Minute {
				t.Errorf("p's runs %+v, want one censored run of 40m", ofP)
			}
		})
	}
}

// TestHistoryFileKeepsMode: a write keeps the permission bits of the file
// it replaces; a new file is 0600. Each write made a new file of mode
// 0600, undoing an operator's chmod.
func TestHistoryFileKeepsMode(t *testing.T) {
	for _, tc := range []struct {
		name string
		mode os.FileMode // of the file before the write; 0: none
		want os.FileMode
	}{
		{name: "readable by all", mode: 0o644, want: 0o644},
		{name: "readable by the group", mode: 0o640, want: 0o640},
		{name: "owner only", mode: 0o600, want: 0o600},
		{name: "no file yet", want: 0o600},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "history.jsonl")
			if tc.mode != 0 {
				if err := os.WriteFile(path, []byte(histHeader), 0o600); err != nil {
					t.Fatal(err)
				}
				if err := os.Chmod(path, tc.mode); err != nil { // not under the umask
					t.Fatal(err)
				}
			}
			if err := writeAtomic(path, func(out io.Writer) error { _, err := io.WriteString(out, histHeader); return err }); err != nil {
				t.Fatal(err)
			}
			st, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			if got := st.Mode().Perm(); got != tc.want {
				t.Errorf("mode %v after the write, want %v", got, tc.want)
			}
		})
	}
}

// TestHistoryFileRemovesStaleTemps: at start the temporary files that a
// write (or the directory's probe) left behind when the process died
// mid-write are removed: only ours, named exactly as writeAtomic and
// checkHistoryDir name them, in the file's directory. Nothing removed
// them, and each crash left one more.
func TestHistoryFileRemovesStaleTemps(t *testing.T) {
	for _, tc := range []struct {
		name    string
		file    string // created in the history file's directory
		dir     bool   // a directory, not a file
		link    bool   // a symbolic link to a file elsewhere
		removed bool
	}{
		{name: "a write's", file: ".history.jsonl.tmp123456", removed: true},
		{name: "another write's", file: ".history.jsonl.tmp1", removed: true},
		{name: "a probe's", file: ".history.jsonl.probe42", removed: true},
		{name: "no number", file: ".history.jsonl.tmp"},
		{name: "not a number", file: ".history.jsonl.tmp12x"},
		{name: "another file's", file: ".other.jsonl.tmp123"},
		{name: "not hidden", file: "history.jsonl.tmp123"},
		{name: "a directory of the name", file: ".history.jsonl.tmp99", dir: true},
		{name: "a link of the name", file: ".history.jsonl.tmp77", link: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "history.jsonl")
			if err := os.WriteFile(path, []byte(histHeader), 0o600); err != nil {
				t.Fatal(err)
			}
			stale := filepath.Join(dir, tc.file)
			switch {
			case tc.dir:
				if err := os.Mkdir(stale, 0o700); err != nil {
					t.Fatal(err)
				}
			case tc.link:
				if err := os.Symlink(filepath.Join(t.TempDir(), "elsewhere"), stale); err != nil {
					t.Fatal(err)
				}
			default:
				if err := os.WriteFile(stale, []byte("half a write"), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			var o Options
			o.History.File = path
			o.Clock = testingclock.NewFakeClock(liveNow)
			h := newTestHistory(o.Clock)
			ctx, cancel := context.WithCancel(t.Context())
			done, err := startHistoryFile(ctx, o, h, cache.NewStore(cache.MetaNamespaceKeyFunc), prometheus.NewRegistry(), slog.New(slog.NewTextHandler(io.Discard, nil)))
			if err != nil {
				t.Fatal(err)
			}
			cancel()
			<-done
			_, err = os.Lstat(stale)
			if gone := errors.Is(err, os.ErrNotExist); gone != tc.removed {
				t.Errorf("%s removed: %v, want %v", tc.file, gone, tc.removed)
			}
			if _, err := loadHistoryFile(path); err != nil {
				t.Errorf("the history file after the run: %v", err)
			}
		})
	}
}

// TestHistoryFileIsNoOtherFile: --history-file, which each write
// replaces, is refused where it names a file the scheduler reads or
// writes besides, naming both: the certificate pair --cert-dir writes
// (where it is not there yet, so that the history's load finds nothing to
// refuse) and the files it reads.
func TestHistoryFileIsNoOtherFile(t *testing.T) {
	dir := t.TempDir()
	os.Mkdir(filepath.Join(dir, "certs"), 0o700) // there, empty: the pair will be written in it
	cfg := configFile(t, cfgHeader)
	for _, tc := range []struct {
		name   string
		change func(o *Options)
		want   string
	}{
		{"the certificate --cert-dir writes", func(o *Options) {
			o.Serving.Secure.ServerCert.CertDirectory = filepath.Join(dir, "certs")
			o.History.File = filepath.Join(dir, "certs", "schedq.crt")
		}, "--history-file " + filepath.Join(dir, "certs", "schedq.crt") + " is the certificate --cert-dir " + filepath.Join(dir, "certs") + " writes"},
		{"its key", func(o *Options) {
			o.Serving.Secure.ServerCert.CertDirectory = filepath.Join(dir, "certs")
			o.History.File = filepath.Join(dir, "certs", "..", "certs", "schedq.key")
		}, "is the key --cert-dir " + filepath.Join(dir, "certs") + " writes"},
		{"--config", func(o *Options) { o.Config.File, o.History.File = cfg, cfg }, "--history-file " + cfg + " is the input --config " + cfg},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := valid()
			o.Serving = NewServingOptions()
			tc.change(&o)
			err := o.Validate()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
		})
	}
}
