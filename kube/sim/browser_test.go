package sim

import (
	"bytes"
	"context"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// chromium finds headless Chromium (Debian's chromium package). Without
// it the browser test is skipped, unless SCHEDQ_BROWSER=required (CI).
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{os.Getenv("SCHEDQ_CHROMIUM"), "chromium", "chromium-browser"} {
		if name == "" {
			continue
		}
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("SCHEDQ_BROWSER") == "required" {
		t.Fatal("chromium not found and SCHEDQ_BROWSER=required (apt-get install chromium)")
	}
	t.Skip("chromium not found; apt-get install chromium to run this test")
	return ""
}

func headless(t *testing.T, bin string, args ...string) []byte {
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
	bin := chromium(t)
	r := run(t, load(t, "NodeArrival"))
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

	dom := string(headless(t, bin, "--dump-dom", "file://"+page))
	for _, want := range []string{"schedq simulation: NodeArrival", "2160 of 2160 pods scheduled", `id="chart"`, `data-series="unschedulable"`, "Incoming"} {
		if !strings.Contains(dom, want) {
			t.Errorf("rendered page lacks %q", want)
		}
	}

	shot := filepath.Join(dir, "shot.png")
	headless(t, bin, "--window-size=1100,900", "--screenshot="+shot, "file://"+page)
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
