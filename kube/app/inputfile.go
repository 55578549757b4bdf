package app

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// MaxInputFileBytes bounds a file the scheduler reads at its start: a
// kubeconfig, its --config, the HTTPS port's certificates, keys, CAs and
// kubeconfigs. Real ones are a few kilobytes (a CA bundle some hundred);
// the bound is --config's (profile.MaxConfigBytes).
const MaxInputFileBytes = 4 << 20

// checkInputFile refuses, before anything reads it, a file at path that
// is not a regular file (a device such as /dev/zero, which client-go and
// crypto/tls would read for ever; a named pipe, whose open blocks until a
// writer comes) or is larger than limit bytes, as the history file is
// refused (loadHistoryFile): the error says which (fileKind, byteLimit);
// the caller names the flag and the file. A file that is not there is
// not refused here: its reader says so as it always did. Symbolic links
// are followed. O(1).
func checkInputFile(path string, limit int64) error {
	st, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return err
	case !st.Mode().IsRegular():
		return fmt.Errorf("not a regular file but %s", fileKind(st.Mode()))
	case st.Size() > limit:
		return fmt.Errorf("larger than the limit of %s for an input file", byteLimit(limit))
	}
	return nil
}
