package sim

import (
	"fmt"
	"os"
)

// openLimited opens an input file, refusing one larger than limit bytes
// before reading any of it, with an error naming the file.
func openLimited(path string, limit int64) (*os.File, error) {
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
	return f, nil
}
