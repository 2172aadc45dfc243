package simhost

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// DumpFiles opens the dump files instrumented programs append to on the
// simulated host (hwsim.Config.OpenAppend): only a plain file name ending
// in .pp.out, created in dcpi's working directory, so a simulated program
// can write nothing else on the host.
type DumpFiles struct {
	mu    sync.Mutex
	files map[string]*os.File
}

func (d *DumpFiles) Open(path string) (io.Writer, error) {
	name := filepath.Base(path)
	if name != strings.TrimPrefix(path, "./") || !strings.HasSuffix(name, ".pp.out") || name == ".pp.out" {
		return nil, errors.New("only NAME.pp.out in the working directory")
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if f := d.files[name]; f != nil {
		return f, nil
	}
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	if d.files == nil {
		d.files = map[string]*os.File{}
	}
	d.files[name] = f
	return f, nil
}
