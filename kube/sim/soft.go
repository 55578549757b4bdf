package sim

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
)

// softCounter is the log of the simulated scheduler's plugins: instead of
// one line per pod on stderr for the soft constraints schedq does not
// score yet (plugins.Unsupported), it counts the pods per ignored field,
// and the report gives the counts. Safe for concurrent use.
type softCounter struct {
	mu   sync.Mutex
	pods map[string]int // field (plugin): pods scheduled without it
}

func newSoftCounter() *softCounter { return &softCounter{pods: map[string]int{}} }

func (c *softCounter) Enabled(context.Context, slog.Level) bool { return true }
func (c *softCounter) WithAttrs([]slog.Attr) slog.Handler       { return c }
func (c *softCounter) WithGroup(string) slog.Handler            { return c }

// Handle counts the fields of a record's "ignored" attribute.
func (c *softCounter) Handle(_ context.Context, r slog.Record) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	r.Attrs(func(a slog.Attr) bool {
		if fields, ok := a.Value.Any().([]string); ok && a.Key == "ignored" {
			for _, f := range fields {
				c.pods[f]++
			}
		}
		return true
	})
	return nil
}

// SoftCount is how many pods were scheduled without one soft constraint.
type SoftCount struct {
	Constraint string `json:"constraint"`
	Pods       int    `json:"pods"`
}

// counts lists the counts by constraint.
func (c *softCounter) counts() []SoftCount {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []SoftCount
	for f, n := range c.pods {
		out = append(out, SoftCount{f, n})
	}
	slices.SortFunc(out, func(a, b SoftCount) int { return strings.Compare(a.Constraint, b.Constraint) })
	return out
}

// writeSoft prints the soft constraints the run ignored, if any.
func (r *Report) writeSoft(p func(string, ...any)) {
	if len(r.SoftConstraints) == 0 {
		return
	}
	parts := make([]string, len(r.SoftConstraints))
	for i, c := range r.SoftConstraints {
		parts[i] = fmt.Sprintf("%s: %d pods", c.Constraint, c.Pods)
	}
	p("soft constraints scheduled without (schedq does not score them yet): %s", strings.Join(parts, "; "))
}
