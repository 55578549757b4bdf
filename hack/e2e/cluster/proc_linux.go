package cluster

import "syscall"

// sysProcAttr makes the kernel kill a server if the test process dies
// without stopping it (a test timeout, a panic, kill -9), so no etcd or
// kube-apiserver outlives its test binary.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
