package cluster

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"
)

// StopEtcd stops etcd (SIGTERM, then SIGKILL after the stop timeout) and
// leaves kube-apiserver running: it answers, but cannot read or write
// anything until StartEtcd.
func (c *Cluster) StopEtcd() { c.stopProcess(&c.etcd) }

// StartEtcd starts etcd again after StopEtcd, on the same ports and data,
// and waits until it is healthy. (The API server may take a little longer
// to notice: wait for what the test needs, not for this alone.)
func (c *Cluster) StartEtcd(ctx context.Context) error {
	c.mu.Lock()
	p, stopped := c.etcd, c.stopped
	c.mu.Unlock()
	if stopped {
		return errors.New("cluster is stopped")
	}
	if p != nil && !p.exited() {
		return errors.New("etcd is already running")
	}
	// The member exists now: it rejoins rather than bootstraps.
	args := slices.DeleteFunc(slices.Clone(c.etcdArgs), func(a string) bool { return a == "--initial-cluster-state=new" })
	appendLine(c.EtcdLog(), fmt.Sprintf("===== schedq e2e: starting etcd again at %s =====", time.Now().Format(time.RFC3339Nano)))
	np, err := startProcess(c.etcdBin, args, c.EtcdLog())
	if err != nil {
		return err
	}
	c.mu.Lock()
	c.etcd = np
	c.mu.Unlock()
	if err := waitReady(ctx, c.opts.StartTimeout, np, func(ctx context.Context) error { return etcdHealthy(ctx, c.etcdURL) }); err != nil {
		return fmt.Errorf("etcd did not become ready again: %w\n--- end of %s ---\n%s", err, np.logPath, np.logTail(40))
	}
	return nil
}

// Ready waits until kube-apiserver's /readyz succeeds (it checks etcd too).
func (c *Cluster) Ready(ctx context.Context) error {
	c.mu.Lock()
	p := c.apiserver
	c.mu.Unlock()
	if p == nil {
		return errors.New("kube-apiserver is not running")
	}
	client := c.httpClient()
	defer client.CloseIdleConnections()
	return waitReady(ctx, c.opts.StartTimeout, p, func(ctx context.Context) error { return c.readyz(ctx, client) })
}
