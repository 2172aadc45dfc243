package localrun

import (
	"io"
	"sync"
)

// stopReader is the terminal's input as the first host's programs read
// it. The simulated machine reads its standard input inside a system
// call, so a program waiting for a line would keep the machine (and
// Ctrl-C) waiting with it; once Stop is called, a read under way or to
// come returns end of file instead, the program goes on, and the machine
// stops at its next look at the stop request. The read left waiting on
// the terminal is abandoned to its goroutine: the process is about to
// exit.
type stopReader struct {
	r        io.Reader
	stopped  chan struct{}
	stopOnce sync.Once

	mu      sync.Mutex
	pending chan readResult // the read under way, nil when none
	left    []byte          // what an earlier read got beyond the caller's buffer
	leftErr error           // and the error that came with it
}

type readResult struct {
	b   []byte
	err error
}

func newStopReader(r io.Reader) *stopReader {
	return &stopReader{r: r, stopped: make(chan struct{})}
}

// Stop makes every read from now on, and the one waiting, end of file.
func (s *stopReader) Stop() { s.stopOnce.Do(func() { close(s.stopped) }) }

func (s *stopReader) Read(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.left) > 0 {
		n := copy(p, s.left)
		s.left = s.left[n:]
		if len(s.left) > 0 {
			return n, nil
		}
		err := s.leftErr
		s.leftErr = nil
		return n, err
	}
	select {
	case <-s.stopped:
		return 0, io.EOF
	default:
	}
	if s.pending == nil {
		ch := make(chan readResult, 1)
		buf := make([]byte, len(p))
		go func() {
			n, err := s.r.Read(buf)
			ch <- readResult{buf[:n], err}
		}()
		s.pending = ch
	}
	select {
	case res := <-s.pending:
		s.pending = nil
		n := copy(p, res.b)
		if s.left = res.b[n:]; len(s.left) > 0 {
			s.leftErr = res.err
			return n, nil
		}
		return n, res.err
	case <-s.stopped:
		return 0, io.EOF
	}
}
