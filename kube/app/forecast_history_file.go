package app

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"
)

// historyFileVersion is the version of the history file's format: its
// first line is {"kind":"SchedqHistory","version":1}.
const historyFileVersion = 1

// historyFileKind is the kind the first line of a history file names.
const historyFileKind = "SchedqHistory"

// historyWriteEvery is how often the history file is written, if the
// runs changed since the last write.
const historyWriteEvery = time.Minute

// historyLineMax bounds a line of the history file: a run with its class
// is a few hundred bytes.
const historyLineMax = 1 << 20

// historyFileMax bounds the whole history file, in bytes: a larger file
// (or one that is not a regular file, such as a pipe or a device, which
// could be endless and which the writes would replace) is refused at the
// load, naming the file and the bound, before anything is read into
// memory; a write keeps the latest runs that fit. The latest historyMax
// runs of a few hundred bytes each are about 2 MB.
const historyFileMax = 64 << 20

// historyHeader is the first line of a history file.
type historyHeader struct {
	Kind    string `json:"kind"`
	Version int    `json:"version"`
}

// historyRun is one line after the first: one run.
type historyRun struct {
	UID        types.UID         `json:"uid,omitempty"`
	Namespace  string            `json:"namespace"`
	Labels     map[string]string `json:"labels,omitempty"` // the values of the --history-label labels only
	Controller *historyOwner     `json:"controller,omitempty"`
	Runtime    string            `json:"runtime"` // a Go duration: 1m30s
	State      string            `json:"state"`   // finished or censored
	Observed   time.Time         `json:"observed"`
}

// historyOwner is a run's controller: its class without labels.
type historyOwner struct {
	Kind string `json:"kind"`
	Name string `json:"name"`
}

// The values of historyRun.State.
const (
	runFinished = "finished"
	runCensored = "censored"
)

// loadedHistory is what a history file held when the scheduler started.
type loadedHistory struct {
	// runs are the file's latest historyMax, oldest first: those the
	// history keeps (a file within historyFileMax can hold a hundred
	// times more, each a pod in memory).
	runs    []observed
	dropped int  // the file's runs before those
	missing bool // no file: an empty history
	// path is the file's, its symbolic links followed: where it is
	// written.
	path string
}

// loadHistoryFile reads the runs of the history file at path. A missing
// file or an empty one is an empty history; a file that does not parse,
// is larger than historyFileMax or is not a regular file is an error
// naming the file (and the line and the field, or the bound). O(lines).
func loadHistoryFile(path string) (*loadedHistory, error) {
	return loadHistoryFileMax(path, historyFileMax)
}

// loadHistoryFileMax is loadHistoryFile with a bound of limit bytes.
func loadHistoryFileMax(path string, limit int64) (*loadedHistory, error) {
	real, err := followLinks(path)
	if err != nil {
		return nil, err
	}
	// Stat first: opening a named pipe would block until a writer came.
	st, err := os.Stat(real)
	if errors.Is(err, fs.ErrNotExist) {
		return &loadedHistory{missing: true, path: real}, checkHistoryDir(real)
	}
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: not a regular file but %s: each write replaces the history file with a new one", path, fileKind(st.Mode()))
	}
	if st.Size() > limit {
		return nil, tooLarge(path, limit)
	}
	f, err := os.Open(real)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := &loadedHistory{path: real}
	// One byte past limit tells a file that grew since the Stat.
	lr := &io.LimitedReader{R: f, N: limit + 1}
	sc := bufio.NewScanner(lr)
	sc.Buffer(nil, historyLineMax)
	line := 0
	for sc.Scan() {
		line++
		var err error
		if line == 1 {
			err = parseHistoryHeader(sc.Bytes())
		} else {
			var o observed
			if o, err = parseHistoryRun(sc.Bytes()); err == nil {
				out.runs = append(out.runs, o)
				if len(out.runs) == 2*historyMax { // the history keeps the latest historyMax
					out.runs = append(out.runs[:0], out.runs[historyMax:]...)
				}
			}
		}
		if err != nil {
			if lr.N == 0 { // the line cut at the bound
				return nil, tooLarge(path, limit)
			}
			return nil, fmt.Errorf("%s: line %d: %w", path, line, err)
		}
	}
	if lr.N == 0 {
		return nil, tooLarge(path, limit)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: line %d: %w", path, line+1, err)
	}
	if n := len(out.runs); cap(out.runs) > historyMax {
		// Not the array of the window, which still points at dropped runs.
		latest := out.runs[max(0, n-historyMax):]
		out.runs = make([]observed, len(latest))
		copy(out.runs, latest)
	}
	out.dropped = max(0, line-1) - len(out.runs)
	return out, checkHistoryDir(real)
}

// followLinks is path with its symbolic links followed to the file they
// name, which need not exist: the history is written there, where a
// rename over the link would replace the link with a file of its own and
// leave the file it named behind, never written again. At most 40 links,
// as Linux allows.
func followLinks(path string) (string, error) {
	for range 40 {
		st, err := os.Lstat(path)
		if err != nil || st.Mode()&fs.ModeSymlink == 0 {
			return path, nil // not a link, or missing: the load says which
		}
		target, err := os.Readlink(path)
		if err != nil {
			return "", err
		}
		if !filepath.IsAbs(target) {
			target = filepath.Join(filepath.Dir(path), target)
		}
		path = target
	}
	return "", fmt.Errorf("%s: more than 40 symbolic links", path)
}

// fileKind names the kind of a file that is not a regular one.
func fileKind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeDevice != 0:
		return "a device"
	}
	return "a special file (" + m.Type().String() + ")"
}

// tooLarge is the error for a history file at path larger than max
// bytes. The file is left as it is.
func tooLarge(path string, max int64) error {
	return fmt.Errorf("%s: larger than the limit of %s for a history file: move it away, or keep its header and latest lines, to start", path, byteLimit(max))
}

// byteLimit says a limit of max bytes: "4194304 bytes (4 MiB)".
func byteLimit(max int64) string {
	limit := fmt.Sprintf("%d bytes", max)
	if max >= 1<<20 && max%(1<<20) == 0 {
		limit += fmt.Sprintf(" (%d MiB)", max>>20)
	}
	return limit
}

// checkHistoryDir refuses a history file whose directory is not one, or
// where no file can be created (writeAtomic writes a new file beside
// it): every write would fail, and the runtimes learnt would be lost at
// the next restart. It creates a file there and removes it.
func checkHistoryDir(path string) error {
	dir := filepath.Dir(path)
	st, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("%s: the directory: %w", path, err)
	}
	if !st.IsDir() {
		return fmt.Errorf("%s: %s is not a directory", path, dir)
	}
	probe, err := os.CreateTemp(dir, tempPattern(path, "probe"))
	if err != nil {
		if pe := new(fs.PathError); errors.As(err, &pe) {
			err = pe.Err
		}
		return fmt.Errorf("%s: the directory %s: no file can be created in it: %w", path, dir, err)
	}
	probe.Close()
	return os.Remove(probe.Name())
}

// decodeStrict decodes one JSON object from b into v, refusing unknown
// fields and anything after the object.
func decodeStrict(b []byte, v any) error {
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			return fmt.Errorf("%s: %s is not a %s", te.Field, te.Value, te.Type)
		}
		return fmt.Errorf("not a JSON object of the format: %v", err)
	}
	if d.More() {
		return errors.New("more than one JSON object")
	}
	return nil
}

// parseHistoryHeader checks the first line: the kind and the version.
func parseHistoryHeader(b []byte) error {
	var h historyHeader
	if err := decodeStrict(b, &h); err != nil {
		return fmt.Errorf("the header %s: %w", b, err)
	}
	if h.Kind != historyFileKind {
		return fmt.Errorf("kind: %q, not %q: not a history file of schedq's", h.Kind, historyFileKind)
	}
	if h.Version != historyFileVersion {
		return fmt.Errorf("version: %d is not supported: this schedq reads version %d", h.Version, historyFileVersion)
	}
	return nil
}

// parseHistoryRun parses one run.
func parseHistoryRun(b []byte) (observed, error) {
	var r historyRun
	if err := decodeStrict(b, &r); err != nil {
		return observed{}, err
	}
	d, err := time.ParseDuration(r.Runtime)
	switch {
	case err != nil:
		return observed{}, fmt.Errorf("runtime: %q is not a duration (such as 90s or 1h2m)", r.Runtime)
	case d <= 0:
		return observed{}, fmt.Errorf("runtime: %v is not above 0", d)
	case r.State != runFinished && r.State != runCensored:
		return observed{}, fmt.Errorf("state: %q is neither %q nor %q", r.State, runFinished, runCensored)
	case r.Observed.IsZero():
		return observed{}, errors.New("observed: missing")
	case r.Observed.UTC().Year() < 0 || r.Observed.UTC().Year() > 9999:
		// The file is written in UTC, whose year must have four digits:
		// a run kept with such a time could never be written back.
		return observed{}, fmt.Errorf("observed: %s is, in UTC, outside the years 0000 to 9999", r.Observed.Format(time.RFC3339))
	case r.Controller != nil && (r.Controller.Kind == "" || r.Controller.Name == ""):
		return observed{}, errors.New("controller: needs both kind and name")
	}
	p := &v1.Pod{}
	p.UID, p.Namespace, p.Labels = r.UID, r.Namespace, r.Labels
	if c := r.Controller; c != nil {
		p.OwnerReferences = []metav1.OwnerReference{{Kind: c.Kind, Name: c.Name, Controller: new(true)}}
	}
	return observed{pod: p, d: d, cut: r.State == runCensored, at: r.Observed}, nil
}

// historyFile writes the runs of a liveHistory to its file: every
// historyWriteEvery if they changed, and at shutdown. The pods running
// at the write go in as censored runs, so that after a restart they
// count until they are seen to finish (liveHistory.add replaces them).
type historyFile struct {
	path    string
	hist    *liveHistory
	running func() []*v1.Pod // the pods of ours running now; nil: none
	log     *slog.Logger
	errors  prometheus.Counter
	// write replaces the file with what encode writes (writeAtomic).
	write func(path string, encode func(io.Writer) error) error
	max   int64 // the file's bound: historyFileMax

	written uint64 // hist.gen at the last write that succeeded
}

// newHistoryFile writes h to path, with the running pods listed by
// running, counting its failures in errs.
func newHistoryFile(path string, h *liveHistory, running func() []*v1.Pod, log *slog.Logger, errs prometheus.Counter) *historyFile {
	return &historyFile{path: path, hist: h, running: running, log: log, errors: errs, write: writeAtomic, max: historyFileMax}
}

// seed puts the runs loaded from the file into the history, oldest
// first: the history keeps the latest historyMax.
func (w *historyFile) seed(l *loadedHistory) {
	if l.missing {
		w.log.Info("history file does not exist: the forecasts' history starts empty", "file", w.path)
	}
	for _, o := range l.runs {
		w.hist.add(o)
	}
	_, w.written = w.hist.kept()
	if !l.missing {
		w.log.Info("history file loaded", "file", w.path, "runs", len(l.runs), "oldestDropped", l.dropped)
	}
}

// loop writes the file every historyWriteEvery if the runs changed, and
// once more when ctx ends. Run in its own goroutine.
func (w *historyFile) loop(ctx context.Context, timers clock.Clock) {
	for {
		t := timers.NewTimer(historyWriteEvery)
		select {
		case <-ctx.Done():
			t.Stop()
			w.save(true)
			return
		case <-t.C():
			w.save(false)
		}
	}
}

// save writes the file if the runs changed since the last write, or
// always. The runs are copied under the history's lock and written after
// it is released. A failure is logged and counted, never fatal: the next
// write tries again.
func (w *historyFile) save(always bool) {
	runs, gen := w.hist.kept()
	if !always && gen == w.written {
		return
	}
	runs = w.withRunning(runs)
	labels := w.hist.opts.Labels
	dropped := 0
	err := w.write(w.path, func(out io.Writer) (err error) {
		dropped, err = encodeHistoryMax(out, runs, labels, w.max)
		return err
	})
	if err == nil && dropped > 0 {
		w.log.Warn("history file: runs left out, the oldest, to keep the file within its limit (or a line within its own)", "file", w.path, "runs", dropped, "limit", w.max)
	}
	if err != nil {
		w.errors.Inc()
		w.log.Error("writing the history file failed: the forecasts' history would start from the last file written", "file", w.path, "err", err)
		return
	}
	w.written = gen
}

// withRunning is runs with the pods running now added as censored runs,
// the latest, each in place of the run its pod has (by UID) if that is
// censored too: that run is dropped from its place, as liveHistory.add
// does, so that the file stays oldest first and the latest historyMax
// runs are the ones written.
func (w *historyFile) withRunning(runs []observed) []observed {
	if w.running == nil {
		return runs
	}
	at := map[types.UID]int{}
	for i, o := range runs {
		if o.pod.UID != "" {
			at[o.pod.UID] = i
		}
	}
	now := w.hist.clock.Now()
	replaced := map[int]bool{}
	var added []observed
	for _, p := range w.running() {
		if p.Status.StartTime == nil || !ours(w.hist.schedulerName, w.hist.profiles, p.Spec.SchedulerName) {
			continue
		}
		d := now.Sub(p.Status.StartTime.Time)
		if d <= 0 {
			continue
		}
		if i, ok := at[p.UID]; ok && p.UID != "" {
			if !runs[i].cut || replaced[i] {
				continue
			}
			replaced[i] = true
		}
		added = append(added, observed{pod: p, d: d, cut: true, at: now})
	}
	if len(replaced) > 0 {
		kept := runs[:0] // runs is the caller's copy (liveHistory.kept)
		for i, o := range runs {
			if !replaced[i] {
				kept = append(kept, o)
			}
		}
		runs = kept
	}
	runs = append(runs, added...)
	if n := len(runs); n > historyMax {
		runs = runs[n-historyMax:]
	}
	return runs
}

// encodeHistory writes the header and one line per run, with the values
// of labels only, within historyFileMax. O(runs).
func encodeHistory(out io.Writer, runs []observed, labels []string) error {
	_, err := encodeHistoryMax(out, runs, labels, historyFileMax)
	return err
}

// encodeHistoryMax writes the header and the latest runs whose lines
// fit in max bytes with it, leaving out a line longer than
// historyLineMax: what it writes, loadHistoryFileMax reads back (a run
// read in can be written longer: "1h" as "1h0m0s", "<" as "\u003c").
// It returns how many runs it left out. O(runs).
func encodeHistoryMax(out io.Writer, runs []observed, labels []string, max int64) (dropped int, err error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	if err := enc.Encode(historyHeader{Kind: historyFileKind, Version: historyFileVersion}); err != nil {
		return 0, err
	}
	head := buf.Len()
	ends := make([]int, len(runs))
	for i, o := range runs {
		if err := enc.Encode(runLine(o, labels)); err != nil {
			return 0, err
		}
		ends[i] = buf.Len()
	}
	b := buf.Bytes()
	line := func(i int) []byte {
		if i == 0 {
			return b[head:ends[0]]
		}
		return b[ends[i-1]:ends[i]]
	}
	keep := make([]bool, len(runs))
	size := int64(head)
	for i := len(runs) - 1; i >= 0; i-- {
		n := int64(len(line(i)))
		if n > historyLineMax {
			continue
		}
		if size+n > max {
			break
		}
		keep[i], size = true, size+n
	}
	bw := bufio.NewWriter(out)
	bw.Write(b[:head])
	for i := range runs {
		if keep[i] {
			bw.Write(line(i))
		} else {
			dropped++
		}
	}
	return dropped, bw.Flush()
}

// runLine is o as a line of the file: its class (the values of labels,
// its controller, its namespace), not the whole pod.
func runLine(o observed, labels []string) historyRun {
	r := historyRun{UID: o.pod.UID, Namespace: o.pod.Namespace, Runtime: o.d.String(), State: runFinished, Observed: o.at.UTC()}
	if o.cut {
		r.State = runCensored
	}
	for _, l := range labels {
		if v, ok := o.pod.Labels[l]; ok {
			if r.Labels == nil {
				r.Labels = map[string]string{}
			}
			r.Labels[l] = v
		}
	}
	for _, ref := range o.pod.OwnerReferences {
		if ref.Controller != nil && *ref.Controller {
			r.Controller = &historyOwner{Kind: ref.Kind, Name: ref.Name}
			break
		}
	}
	return r
}

// writeAtomic replaces the file at path with what encode writes: into a
// temporary file in the same directory (named by tempPattern), synced,
// then renamed over path. The new file keeps the permission bits of the
// file it replaces (0600 when there is none): an operator's chmod would
// otherwise be undone by the next write. On any failure the file at path
// is left as it was and the temporary one removed.
func writeAtomic(path string, encode func(io.Writer) error) (err error) {
	tmp, err := os.CreateTemp(filepath.Dir(path), tempPattern(path, "tmp"))
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if st, serr := os.Stat(path); serr == nil && st.Mode().IsRegular() {
		if err = tmp.Chmod(st.Mode().Perm()); err != nil {
			return err
		}
	}
	if err = encode(tmp); err != nil {
		return err
	}
	if err = tmp.Sync(); err != nil {
		return err
	}
	if err = tmp.Close(); err != nil {
		return err
	}
	if err = os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	syncDir(filepath.Dir(path))
	return nil
}

// tempPattern is os.CreateTemp's pattern of the files the history file
// at path is written through (kind "tmp") or its directory probed with
// ("probe"): ".history.jsonl.tmp" and CreateTemp's random decimal
// number, hidden, beside the file.
func tempPattern(path, kind string) string {
	return "." + filepath.Base(path) + "." + kind + "*"
}

// removeStaleTemps removes the temporary files that writes (and probes)
// of the history file at path left behind when the process died between
// creating and renaming (or removing) them: the regular files of path's
// directory named exactly by tempPattern, the * a decimal number, as
// CreateTemp makes it. Nothing else, in that directory or below it, is
// touched. Called at start, before the first write. It returns the names
// removed, and the first error (a file that cannot be removed stays).
func removeStaleTemps(path string) (removed []string, err error) {
	dir := filepath.Dir(path)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	for _, e := range entries {
		if !e.Type().IsRegular() || !isOurTemp(path, e.Name()) {
			continue
		}
		if rerr := os.Remove(filepath.Join(dir, e.Name())); rerr != nil {
			if err == nil {
				err = rerr
			}
			continue
		}
		removed = append(removed, e.Name())
	}
	return removed, err
}

// isOurTemp says whether name is one of tempPattern(path, ...)'s.
func isOurTemp(path, name string) bool {
	for _, kind := range []string{"tmp", "probe"} {
		pre := strings.TrimSuffix(tempPattern(path, kind), "*")
		num, ok := strings.CutPrefix(name, pre)
		if !ok || num == "" {
			continue
		}
		if strings.Trim(num, "0123456789") == "" {
			return true
		}
	}
	return false
}

// syncDir syncs dir, so that a rename in it survives a power loss; where
// a directory cannot be synced the rename stands as it is.
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
}

// startHistoryFile seeds h from o.History.File (as LoadHistory loaded it)
// and writes it there until ctx ends, counting the failed writes in
// scheduler_forecast_history_write_errors_total on reg. The channel is
// closed after the last write.
func startHistoryFile(ctx context.Context, o Options, h *liveHistory, pods cache.Store, reg prometheus.Registerer, log *slog.Logger) (<-chan struct{}, error) {
	if err := o.History.load(); err != nil {
		return nil, fmt.Errorf("%s: %w", o.source("history-file"), err)
	}
	errs := prometheus.NewCounter(prometheus.CounterOpts{Subsystem: "scheduler", Name: "forecast_history_write_errors_total",
		Help: "Writes of the forecasts' history file (--history-file) that failed; the file keeps its last contents."})
	if err := reg.Register(errs); err != nil {
		return nil, err
	}
	path := o.History.File
	if p := o.History.loaded.path; p != "" {
		path = p // its links followed
	}
	w := newHistoryFile(path, h, func() []*v1.Pod { return runningPods(pods) }, log, errs)
	w.seed(o.History.loaded)
	// Left by a process that died mid-write; never fatal.
	removed, err := removeStaleTemps(path)
	if len(removed) > 0 {
		log.Info("history file: removed the temporary files an earlier write left behind", "file", path, "removed", removed)
	}
	if err != nil {
		log.Warn("history file: the temporary files an earlier write left behind could not all be removed", "file", path, "err", err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		w.loop(ctx, o.Clock)
	}()
	return done, nil
}

// runningPods lists the pods of store on a node, started and not ended.
// O(pods).
func runningPods(store cache.Store) []*v1.Pod {
	var out []*v1.Pod
	for _, obj := range store.List() {
		if p, ok := obj.(*v1.Pod); ok && p.Spec.NodeName != "" && p.Status.StartTime != nil && !terminal(p) {
			out = append(out, p)
		}
	}
	return out
}
