package app

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/schedq/schedq"
)

// state is what the health endpoints report.
type state struct {
	synced  atomic.Bool
	leading atomic.Bool
}

func (s *state) ready() (bool, string) {
	switch {
	case !s.synced.Load():
		return false, "informers not synced"
	case s.leading.Load():
		return true, "ok: leading"
	}
	return true, "ok: standby"
}

// Handler serves /metrics, /healthz, /readyz, /debug/queue (the queue
// dump) and /debug/queue/{namespace}/{name} (Explain). The debug
// endpoints answer JSON, or text with ?format=text.
func Handler(reg *prometheus.Registry, q queueView, ready func() (bool, string)) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		ok, msg := ready()
		if !ok {
			http.Error(w, msg, http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, msg)
	})
	mux.HandleFunc("GET /debug/queue", func(w http.ResponseWriter, r *http.Request) {
		d := q.Dump()
		write(w, r, d, d.String())
	})
	mux.HandleFunc("GET /debug/queue/{namespace}/{name}", func(w http.ResponseWriter, r *http.Request) {
		key := types.NamespacedName{Namespace: r.PathValue("namespace"), Name: r.PathValue("name")}
		x, err := q.Explain(key)
		if errors.Is(err, schedq.ErrNotFound) {
			http.Error(w, fmt.Sprintf("pod %s is not in schedq's queue: it is unknown, bound, or not ours", key), http.StatusNotFound)
			return
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		write(w, r, x, x.String())
	})
	return mux
}

func write(w http.ResponseWriter, r *http.Request, v any, text string) {
	if r.URL.Query().Get("format") == "text" {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprint(w, text)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.Encode(v)
}

func metav1ObjectMeta(namespace, name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Namespace: namespace, Name: name}
}
