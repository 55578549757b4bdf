package main

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"
)

// setVersion gives root and each of its subcommands a --version flag that
// prints v.
func setVersion(root *cobra.Command, v string) {
	root.Version = v
	root.SetVersionTemplate("{{.Version}}\n")
	for _, c := range root.Commands() {
		c.Version = v
	}
}

// version describes this build from its build information: schedq's
// module version, the version of the queue library it was built with, the
// source revision if the build recorded one, and the Go toolchain.
func version(bi *debug.BuildInfo, ok bool) string {
	if !ok {
		return fmt.Sprintf("schedq (no build information) %s %s/%s", runtime.Version(), runtime.GOOS, runtime.GOARCH)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "schedq %s", orDevel(bi.Main.Version))
	if bi.Main.Path != "" {
		fmt.Fprintf(&b, "\n  module   %s %s", bi.Main.Path, orDevel(bi.Main.Version))
	}
	for _, d := range bi.Deps {
		if d.Path == "github.com/schedq/schedq" {
			fmt.Fprintf(&b, "\n  queue    %s %s", d.Path, orDevel(d.Version))
		}
	}
	if rev := setting(bi, "vcs.revision"); rev != "" {
		fmt.Fprintf(&b, "\n  revision %s", rev)
		if t := setting(bi, "vcs.time"); t != "" {
			fmt.Fprintf(&b, " (%s)", t)
		}
		if setting(bi, "vcs.modified") == "true" {
			b.WriteString(", with uncommitted changes")
		}
	}
	goos, goarch := setting(bi, "GOOS"), setting(bi, "GOARCH")
	if goos == "" {
		goos, goarch = runtime.GOOS, runtime.GOARCH
	}
	fmt.Fprintf(&b, "\n  go       %s %s/%s", bi.GoVersion, goos, goarch)
	return b.String()
}

// orDevel is a module version, or "(devel)" for a build from a source tree.
func orDevel(v string) string {
	if v == "" {
		return "(devel)"
	}
	return v
}

func setting(bi *debug.BuildInfo, key string) string {
	for _, s := range bi.Settings {
		if s.Key == key {
			return s.Value
		}
	}
	return ""
}
