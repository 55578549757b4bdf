package main

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// setVersion gives root and each of its subcommands a --version (-v)
// flag that prints v and runs nothing else. It is the command's own flag,
// not cobra's, which prints before the arguments are checked and ignores
// any other flag: an argument beside it is refused as any unknown one
// is, and another flag is refused by name.
func setVersion(root *cobra.Command, v string) {
	for _, c := range append([]*cobra.Command{root}, root.Commands()...) {
		c.Flags().BoolP("version", "v", false, "version for "+c.Name())
		versionArgs(c)
		versionRun(c, v)
	}
}

// versionOn reports whether cmd's --version is given.
func versionOn(cmd *cobra.Command) bool {
	on, _ := cmd.Flags().GetBool("version")
	return on
}

// versionArgs makes c take no argument with --version, and its own
// otherwise.
func versionArgs(c *cobra.Command) {
	args := c.Args
	if args == nil {
		return // cobra's: none for a subcommand, a subcommand's name for the root
	}
	c.Args = func(cmd *cobra.Command, a []string) error {
		if versionOn(cmd) {
			return cobra.NoArgs(cmd, a)
		}
		return args(cmd, a)
	}
}

// versionRun makes c print v with --version (and no other flag), and run
// as before otherwise; the root, which runs nothing, shows its usage.
func versionRun(c *cobra.Command, v string) {
	run := c.RunE
	if run == nil {
		run = func(cmd *cobra.Command, _ []string) error { return cmd.Help() }
	}
	c.RunE = func(cmd *cobra.Command, args []string) error {
		if !versionOn(cmd) {
			return run(cmd, args)
		}
		if err := versionAlone(cmd); err != nil {
			return err
		}
		_, err := fmt.Fprintln(cmd.OutOrStdout(), v)
		return err
	}
}

// versionAlone refuses the flags given beside --version.
func versionAlone(cmd *cobra.Command) error {
	var other []string
	cmd.Flags().Visit(func(f *pflag.Flag) {
		if f.Name != "version" {
			other = append(other, "--"+f.Name)
		}
	})
	if len(other) > 0 {
		return fmt.Errorf("--version: prints the version and runs nothing; not with %s", strings.Join(other, ", "))
	}
	return nil
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
