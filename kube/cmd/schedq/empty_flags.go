package main

import (
	"errors"
	"fmt"

	"github.com/spf13/pflag"
)

// refuseEmpty refuses a string or list flag of flags given with an
// empty value (--gpu-policy ”), which the command would otherwise take
// for the flag left out: none of simulate's and whatif's takes empty as
// a choice. Each such flag is named, in name order.
func refuseEmpty(flags *pflag.FlagSet) error {
	var errs []error
	flags.Visit(func(f *pflag.Flag) {
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
