package cluster

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
)

// process is a server running as a child process, its output appended to
// a log file.
type process struct {
	path    string
	logPath string
	cmd     *exec.Cmd
	done    chan struct{} // closed when the process has exited
	err     error         // Wait's result, valid once done is closed

	stopOnce sync.Once
}

func startProcess(path string, args []string, logPath string) (*process, error) {
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(logFile, "===== %s %s\n", path, strings.Join(args, " "))
	cmd := exec.Command(path, args...)
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("starting %s: %w", path, err)
	}
	p := &process{path: path, logPath: logPath, cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		logFile.Close()
		close(p.done)
	}()
	return p, nil
}

func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

func (p *process) exitErr() error {
	select {
	case <-p.done:
		if p.err == nil {
			return fmt.Errorf("exit status 0")
		}
		return p.err
	default:
		return nil
	}
}

// stop sends SIGTERM, waits up to grace for the process to exit, then
// sends SIGKILL and waits for it.
func (p *process) stop(grace time.Duration) {
	p.stopOnce.Do(func() {
		if p.exited() {
			return
		}
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
			return
		case <-time.After(grace):
		}
		_ = p.cmd.Process.Kill()
		<-p.done
	})
	<-p.done
}

// portInUse reports whether the log says a port was taken, the one start
// failure worth retrying with other ports.
func (p *process) portInUse() bool {
	return strings.Contains(fileTail(p.logPath, 200), "address already in use")
}

func (p *process) logTail(n int) string { return fileTail(p.logPath, n) }

// fileTail returns the last n lines of a file (reads at most the last
// 256 KiB).
func fileTail(path string, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Sprintf("(cannot read %s: %v)", path, err)
	}
	defer f.Close()
	const max = 256 << 10
	st, err := f.Stat()
	if err != nil {
		return err.Error()
	}
	off := st.Size() - max
	if off < 0 {
		off = 0
	}
	buf := make([]byte, st.Size()-off)
	if _, err := f.ReadAt(buf, off); err != nil {
		return err.Error()
	}
	return lastLines(string(buf), n)
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func appendLine(path, line string) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return
	}
	fmt.Fprintln(f, line)
	f.Close()
}

func commandOutput(ctx context.Context, path string, args ...string) (string, error) {
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Stdout = &out
	cmd.Stderr = &out
	err := cmd.Run()
	return out.String(), err
}
