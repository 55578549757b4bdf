//go:build !linux

package cluster

import "syscall"

// sysProcAttr: only Linux can tie a child's life to its parent's.
func sysProcAttr() *syscall.SysProcAttr { return nil }
