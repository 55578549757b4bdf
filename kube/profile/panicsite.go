package profile

import (
	"reflect"
	"runtime"
	"strings"

	fwk "k8s.io/kube-scheduler/framework"
)

// pluginTypes maps the type of each plugin instance built for a
// framework ("import/path.Type", a pointer's element type) to the
// plugin's name, so that a panic's stack names the plugin it came from.
func pluginTypes(built map[string]fwk.Plugin) map[string]string {
	out := make(map[string]string, len(built))
	for name, pl := range built {
		t := reflect.TypeOf(pl)
		if t == nil {
			continue
		}
		if t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		if t.Name() != "" {
			out[t.PkgPath()+"."+t.Name()] = name
		}
	}
	return out
}

// PanicSite names the plugin of f, and the method of it (the extension
// point: Filter, Score, Reserve...), that the panic being recovered came
// from. Call it from the deferred function that recovers, on the
// panicking goroutine: the panicking frames are still on its stack. It
// reports the first frame after the panic that is a method of one of
// f's plugins (a wrapper's, if the plugin wraps another), and ok false
// if none is. O(stack depth).
func (f *Framework) PanicSite() (plugin, method string, ok bool) {
	if f == nil || len(f.types) == 0 {
		return "", "", false
	}
	pcs := make([]uintptr, 64)
	frames := runtime.CallersFrames(pcs[:runtime.Callers(2, pcs)])
	panicked := false
	for {
		fr, more := frames.Next()
		if fr.Function == "runtime.gopanic" {
			panicked = true
		} else if panicked {
			if typ, m := receiverOf(fr.Function); typ != "" {
				if name, found := f.types[typ]; found {
					return name, m, true
				}
			}
		}
		if !more {
			return "", "", false
		}
	}
}

// receiverOf splits a method's function name ("path/pkg.(*T).M" or
// "path/pkg.T.M", M perhaps followed by ".func1") into "path/pkg.T" and
// M; "" for a function that is no method.
func receiverOf(fn string) (typ, method string) {
	slash := strings.LastIndexByte(fn, '/')
	parts := strings.Split(fn[slash+1:], ".")
	if len(parts) < 3 {
		return "", ""
	}
	t := strings.TrimSuffix(strings.TrimPrefix(parts[1], "(*"), ")")
	return fn[:slash+1] + parts[0] + "." + t, parts[2]
}
