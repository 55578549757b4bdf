// Package browser_test checks the simulator's HTML report in headless
// Chromium. It is a package of its own so that, when Chromium is missing,
// go test's normal output says so: the package's "ok" line then ends in
// "[no tests to run]".
package browser_test

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/schedq/schedq/kube/sim"
)

// bin is headless Chromium's path, found by TestMain.
var bin string

// TestMain finds Chromium (Debian's chromium package, or $SCHEDQ_CHROMIUM).
// Without it the package is skipped, unless SCHEDQ_BROWSER=required (CI),
// in which case it fails.
func TestMain(m *testing.M) {
	var err error
	if bin, err = chromium(); err != nil {
		if os.Getenv("SCHEDQ_BROWSER") == "required" {
			fmt.Printf("FAIL: %v and SCHEDQ_BROWSER=required\n", err)
			os.Exit(1)
		}
		skip(fmt.Sprintf("%v (set SCHEDQ_BROWSER=required to make this a failure)", err))
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func chromium() (string, error) {
	for _, name := range []string{os.Getenv("SCHEDQ_CHROMIUM"), "chromium", "chromium-browser"} {
		if name == "" {
			continue
		}
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("chromium not found (apt-get install chromium, or set SCHEDQ_CHROMIUM)")
}

// skip prints why the package is skipped, and the line the testing
// package prints when no test ran, which go test turns into
// "[no tests to run]" on the package's "ok" line. It also appends the
// reason to $SCHEDQ_SKIP_REPORT, which .ci/run prints.
func skip(reason string) {
	fmt.Printf("SKIP: browser: %s\ntesting: warning: no tests to run\n", reason)
	if path := os.Getenv("SCHEDQ_SKIP_REPORT"); path != "" {
		f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err == nil {
			fmt.Fprintf(f, "kube/sim/browser: %s\n", reason)
			err = f.Close()
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "browser: recording the skip in %s: %v\n", path, err)
		}
	}
}

func headless(t *testing.T, args ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	base := []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir=" + t.TempDir()}
	cmd := exec.CommandContext(ctx, bin, append(base, args...)...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium %v: %v\n%s", args, err, errOut.String())
	}
	return out.Bytes()
}

// TestReportInBrowser renders the HTML report in headless Chromium and
// checks what a person would see: the title and summary in the DOM, and a
// chart whose series are drawn in their colours.
func TestReportInBrowser(t *testing.T) {
	sc, err := sim.Load("NodeArrival")
	if err != nil {
		t.Fatal(err)
	}
	r, err := sim.Run(sc, sim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	page := filepath.Join(dir, "report.html")
	f, err := os.Create(page)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.WriteHTML(f); err != nil {
		t.Fatal(err)
	}
	f.Close()

	dom := string(headless(t, "--dump-dom", "file://"+page))
	for _, want := range []string{"schedq simulation: NodeArrival", "2160 of 2160 pods scheduled", `data-series="unschedulable"`, "Incoming",
		// the pods bound so far and pending, with the scenario's 13 events
		`id="pods-chart"`, `data-series="scheduled"`, `data-series="pending"`, `id="markers"`, `<li data-t="6m30s">`,
		// a panel per sub-queue, with the run's exact peaks
		`id="queue-panels"`, `data-panel="backoff"`, `data-panel="gated"`, `data-panel="in flight"`,
		fmt.Sprintf(`data-series="active" data-run="run">%d<`, r.Peak.Active),
		fmt.Sprintf(`data-series="unschedulable" data-run="run">%d<`, r.Peak.Unschedulable),
		fmt.Sprintf(`data-series="in flight" data-run="run">%d<`, r.Peak.InFlight),
		// the latency distribution per pod group
		`id="cdf"`, `data-group="waiting"`, `data-group="ssd"`, `data-group="first"`, `id="groups-table"`} {
		if !strings.Contains(dom, want) {
			t.Errorf("rendered page lacks %q", want)
		}
	}
	if n := strings.Count(dom, `class="marker"`); n != 13*6 {
		t.Errorf("%d event markers, want 13 on each of 6 charts", n)
	}

	shot := filepath.Join(dir, "shot.png")
	headless(t, "--window-size=1100,2600", "--hide-scrollbars", "--screenshot="+shot, "file://"+page)
	data, err := os.ReadFile(shot)
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	// The active series is blue (#2563eb) and unschedulable red (#dc2626):
	// both must be on screen.
	if n := count(img, 0x25, 0x63, 0xeb); n < 50 {
		t.Errorf("%d blue pixels: the active series is not drawn", n)
	}
	if n := count(img, 0xdc, 0x26, 0x26); n < 50 {
		t.Errorf("%d red pixels: the unschedulable series is not drawn", n)
	}
	// Scheduled so far and in flight are green (#059669), backoff's panel
	// is empty but framed, its legend square amber (#f59e0b).
	if n := count(img, 0x05, 0x96, 0x69); n < 50 {
		t.Errorf("%d green pixels: the scheduled line is not drawn", n)
	}
	if n := count(img, 0xf5, 0x9e, 0x0b); n < 20 {
		t.Errorf("%d amber pixels: the backoff panel is not drawn", n)
	}
	if os.Getenv("SCHEDQ_KEEP_SCREENSHOT") != "" {
		os.WriteFile(os.Getenv("SCHEDQ_KEEP_SCREENSHOT"), data, 0o644)
	}
}

// count counts the pixels close to a colour.
func count(img image.Image, r, g, b uint8) int {
	n := 0
	bounds := img.Bounds()
	for y := bounds.Min.Y; y < bounds.Max.Y; y++ {
		for x := bounds.Min.X; x < bounds.Max.X; x++ {
			pr, pg, pb, _ := img.At(x, y).RGBA()
			if near(pr>>8, r) && near(pg>>8, g) && near(pb>>8, b) {
				n++
			}
		}
	}
	return n
}

func near(a uint32, b uint8) bool { d := int(a) - int(b); return d > -24 && d < 24 }

// TestComparisonInBrowser renders --compare's page: one page, both runs
// named in its title, each chart with a line per run, and a delta column.
func TestComparisonInBrowser(t *testing.T) {
	sc, err := sim.Load("EarlyRetry")
	if err != nil {
		t.Fatal(err)
	}
	a, err := sim.Run(sc, sim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if sc, err = sim.Load("EarlyRetry"); err != nil {
		t.Fatal(err)
	}
	if err := sc.Set("popFromBackoff", "false"); err != nil {
		t.Fatal(err)
	}
	b, err := sim.Run(sc, sim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	page := filepath.Join(t.TempDir(), "compare.html")
	f, err := os.Create(page)
	if err != nil {
		t.Fatal(err)
	}
	if err := sim.WriteComparisonHTML(f, a, b, "baseline", "popFromBackoff=false", sim.Window{}); err != nil {
		t.Fatal(err)
	}
	f.Close()
	dom := string(headless(t, "--dump-dom", "file://"+page))
	for _, want := range []string{"<title>schedq simulation: EarlyRetry: baseline vs popFromBackoff=false</title>",
		`<th class="n">delta</th>`, `class="n delta"`, `data-series="backoff" data-run="baseline"`,
		`data-series="backoff" data-run="popFromBackoff=false"`, `stroke-dasharray="6 4"`} {
		if !strings.Contains(dom, want) {
			t.Errorf("rendered page lacks %q", want)
		}
	}
	if n := strings.Count(dom, "<h1"); n != 1 {
		t.Errorf("%d pages in one, want 1", n)
	}
}
