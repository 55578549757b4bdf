package sim

import (
	"fmt"
	"io"
	"os"
)

// openLimited opens an input file, refusing one larger than limit bytes
// before reading any of it, with an error naming the file. A file with
// no size to check first (a pipe, a device: /dev/zero would be read for
// ever) fails as it is read, once more than limit bytes came.
func openLimited(path string, limit int64) (io.ReadCloser, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if st.Size() > limit {
		f.Close()
		return nil, fmt.Errorf("%s: %d bytes, more than the limit of %d", path, st.Size(), limit)
	}
	return &limitedFile{File: f, left: limit, limit: limit}, nil
}

// limitedFile is a file that fails a read once more than limit bytes
// have come (left counts down; below 0, too many).
type limitedFile struct {
	*os.File
	left, limit int64
}

func (l *limitedFile) Read(p []byte) (int, error) {
	if l.left < 0 {
		return 0, fmt.Errorf("more than the limit of %d bytes", l.limit)
	}
	if int64(len(p)) > l.left+1 {
		p = p[:l.left+1]
	}
	n, err := l.File.Read(p)
	if l.left -= int64(n); l.left < 0 {
		return 0, fmt.Errorf("more than the limit of %d bytes", l.limit)
	}
	return n, err
}

// InputFile is a file a run reads: Source says where it was named ("trace",
// "snapshot", "scheduler.config").
type InputFile struct {
	Source, Path string
}

// InputFiles lists the files the scenario's trace, snapshot and
// scheduler.config will read, so that a caller can refuse to write over them. A snapshot directory
// that cannot be listed yields no files (the run reports the error).
// O(files in the snapshot directory).
func (s *Scenario) InputFiles() []InputFile {
	var out []InputFile
	if s.Trace != nil {
		nodes, pods := s.Trace.files()
		out = append(out, InputFile{"trace", nodes}, InputFile{"trace", pods})
	}
	if s.Snapshot != "" {
		files, _ := snapshotFiles(s.Snapshot)
		for _, f := range files {
			out = append(out, InputFile{"snapshot", f})
		}
	}
	if s.Scheduler.Config != "" {
		out = append(out, InputFile{"scheduler.config", s.Scheduler.Config})
	}
	return out
}
