package sim

import "errors"

func (s *sim) loadSnapshot(path string) error { return errors.New("snapshot: not implemented") }
