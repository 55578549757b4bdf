package main

import (
	"errors"
	"fmt"
	"slices"

	"github.com/spf13/pflag"
)

// refuseEmpty refuses a string or list flag of flags given with an
// empty value (--gpu-policy ”), which the command would otherwise take
// for the flag left out: none of simulate's and whatif's takes empty as
// a choice. Each such flag is named, in name order.
func refuseEmpty(flags *pflag.FlagSet) error {
	return refuseEmptyOf(flags, nil)
}

// schedulerEmptyRefused are the flags of schedq scheduler that take no
// empty value: those it shares with whatif, whose empty value whatif
// refuses (refuseEmpty). The scheduler's other string flags give empty
// a meaning of their own (--address: off, --history-file: none) or check
// their values themselves.
var schedulerEmptyRefused = []string{"history-label", "history-tail"}

// refuseEmptyOf is refuseEmpty for the flags named in only (nil: all).
func refuseEmptyOf(flags *pflag.FlagSet, only []string) error {
	var errs []error
	flags.Visit(func(f *pflag.Flag) {
		if only != nil && !slices.Contains(only, f.Name) {
			return
		}
		empty := f.Value.Type() == "string" && f.Value.String() == ""
		if v, ok := f.Value.(pflag.SliceValue); ok {
			empty = len(v.GetSlice()) == 0
		}
		if empty {
			errs = append(errs, fmt.Errorf("--%s: empty; give a value, or leave the flag out for its default", f.Name))
		}
	})
	return errors.Join(errs...)
}
