package node

import (
	"errors"
	"fmt"
	pathpkg "path"
	"strings"
)

// PerProcessAll in Config.PerProcess keeps every image's profile per
// process.
const PerProcessAll = "all"

// ErrPerProcess: a Config.PerProcess entry names no image.
var ErrPerProcess = errors.New("bad per-process image")

// CheckPerProcess checks Config.PerProcess: image paths ("/bin/sort"),
// base names ("sort"), or "all" alone.
func CheckPerProcess(images []string) error {
	for _, im := range images {
		switch {
		case im == PerProcessAll && len(images) > 1:
			return fmt.Errorf("%w: %q with other images (it names every one)", ErrPerProcess, im)
		case im == "" || strings.ContainsRune(im, 0) || strings.HasSuffix(im, "/"):
			return fmt.Errorf("%w: %q (want an image path, a file name or %q)", ErrPerProcess, im, PerProcessAll)
		}
	}
	return nil
}

// perProcess decides which images' profiles keep the PID: DCPI kept
// per-process profiles for the images the configuration named (sec.
// 4.3) and merged every other image's processes. An entry with a '/' is
// a path, one without a base name.
type perProcess struct {
	all          bool
	paths, bases map[string]bool
	// decided caches the answer per path, so an entry costs the daemon
	// one map lookup, as the paths alone did.
	decided map[string]bool
}

func newPerProcess(images []string) perProcess {
	p := perProcess{paths: map[string]bool{}, bases: map[string]bool{}, decided: map[string]bool{}}
	for _, im := range images {
		switch {
		case im == PerProcessAll:
			p.all = true
		case strings.ContainsRune(im, '/'):
			p.paths[im] = true
		default:
			p.bases[im] = true
		}
	}
	return p
}

// keeps reports whether the image at path keeps the PID.
func (p *perProcess) keeps(path string) bool {
	if p.all {
		return true
	}
	if len(p.paths) == 0 && len(p.bases) == 0 {
		return false
	}
	d, ok := p.decided[path]
	if !ok {
		d = p.paths[path] || p.bases[pathpkg.Base(path)]
		p.decided[path] = d
	}
	return d
}
