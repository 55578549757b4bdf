package app

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
)

// libraryQuiet is how often the libraries' logs (client-go's event
// broadcaster, k8s.io/apiserver's delegated authentication, through klog)
// may repeat a warning or error with the same message and error. They
// repeat on their own schedules, whatever the scheduler does: the event
// broadcaster once per failed write of each event (and retries each up to
// 12 times), the authentication's CA watchers every ~45 s while the
// cluster lacks the CA they look for.
const libraryQuiet = 5 * time.Minute

// libraryLogger returns the logger the libraries log to: next, with at
// most one warning or error per message and error text and libraryQuiet
// (the repeats are counted, as the scheduler's own are), and the handler
// to run for the summaries.
func libraryLogger(next slog.Handler) (logr.Logger, *quietHandler) {
	h := newQuietHandlerKeyed(next, libraryQuiet, func(r slog.Record) string {
		key := r.Message
		r.Attrs(func(a slog.Attr) bool {
			if a.Key == "err" {
				key += "\x00" + fmt.Sprint(a.Value.Any())
				return false
			}
			return true
		})
		return key
	})
	return logr.FromSlogHandler(h), h
}

// startEvents starts recording events to the API server. The broadcaster
// logs each failed write through the logger in ctx, the library logger.
func startEvents(ctx context.Context, client kubernetes.Interface, lib logr.Logger) (events.EventBroadcaster, error) {
	b := events.NewBroadcaster(&events.EventSinkImpl{Interface: client.EventsV1()})
	if err := b.StartRecordingToSinkWithContext(klog.NewContext(ctx, lib)); err != nil {
		return nil, fmt.Errorf("event broadcaster: %w", err)
	}
	return b, nil
}
