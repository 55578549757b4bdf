//go:build unix

package sim

import (
	"syscall"
	"time"
)

// cpuTime is the user and system CPU time the process has used so far, or
// 0 if it cannot be read.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
