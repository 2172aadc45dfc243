package hwsim

import (
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"dcpi/hwsim/elfimage"
)

// DefaultSysroot is where Debian's Alpha cross toolchain (libc6.1-alpha-cross)
// installs the dynamic loader and the C library: /lib/ld-linux.so.2 of a
// dynamically linked program is /usr/alpha-linux-gnu/lib/ld-linux.so.2 here,
// as qemu-alpha -L /usr/alpha-linux-gnu reads it.
const DefaultSysroot = "/usr/alpha-linux-gnu"

// MaxSysrootFile caps a file read from the sysroot, in bytes: the largest
// library of the cross toolchain is a few megabytes.
const MaxSysrootFile = 256 << 20

// ErrOutsideSysroot: a path, or a symbolic link on the way, would leave the
// sysroot. The simulated file system treats the sysroot as its root
// directory, as chroot does, so this happens only for a link loop or too
// many links.
var ErrOutsideSysroot = errors.New("path escapes the sysroot")

// Sysroot is a host directory seen read-only as the simulated file
// system's root (below Config.Files): /lib/libc.so.6.1 is DIR/lib/libc.so.6.1.
// Every path is resolved one component at a time, with ".." stopping at
// the root and symbolic links (absolute ones relative to the root) followed
// inside it, so nothing outside DIR is ever read.
type Sysroot struct{ Dir string }

// maxLinks is Linux's MAXSYMLINKS: more links than this in one lookup is ELOOP.
const maxLinks = 40

// Resolve returns the host path of the simulated absolute path name, and
// the simulated path it resolved to (links followed).
func (s Sysroot) Resolve(name string) (host, sim string, err error) {
	if s.Dir == "" {
		return "", "", fs.ErrNotExist
	}
	var done []string
	todo := strings.Split(name, "/")
	links := 0
	for len(todo) > 0 {
		c := todo[0]
		todo = todo[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			if len(done) > 0 {
				done = done[:len(done)-1]
			}
			continue
		}
		h := filepath.Join(s.Dir, filepath.Join(append(done, c)...))
		fi, err := os.Lstat(h)
		if err != nil {
			return "", "", err
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			if len(todo) > 0 && !fi.IsDir() {
				return "", "", fs.ErrNotExist // ENOTDIR, as far as a loader cares
			}
			done = append(done, c)
			continue
		}
		if links++; links > maxLinks {
			return "", "", fmt.Errorf("%s: %w (more than %d links)", name, ErrOutsideSysroot, maxLinks)
		}
		target, err := os.Readlink(h)
		if err != nil {
			return "", "", err
		}
		if strings.HasPrefix(target, "/") {
			done = done[:0]
		}
		todo = append(strings.Split(target, "/"), todo...)
	}
	return filepath.Join(s.Dir, filepath.Join(done...)), "/" + strings.Join(done, "/"), nil
}

// ReadFile reads the simulated path name from the sysroot: a regular file
// of at most MaxSysrootFile bytes.
func (s Sysroot) ReadFile(name string) (data []byte, sim string, err error) {
	host, sim, err := s.Resolve(name)
	if err != nil {
		return nil, "", err
	}
	f, err := os.Open(host)
	if err != nil {
		return nil, "", err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, "", err
	}
	if !st.Mode().IsRegular() {
		return nil, "", fmt.Errorf("%s: not a regular file", name)
	}
	data, err = io.ReadAll(io.LimitReader(f, MaxSysrootFile+1))
	if err != nil {
		return nil, "", err
	}
	if len(data) > MaxSysrootFile {
		return nil, "", fmt.Errorf("%s: larger than %d MB", name, MaxSysrootFile>>20)
	}
	return data, sim, nil
}

// simFile is a file of the simulated file system: a program of
// Config.Files or a file or directory of the sysroot.
type simFile struct {
	path string // simulated path, links resolved
	data []byte
	dir  bool
	ino  uint64

	im    *elfimage.Image // parsed on first exec or executable mapping (dynload.go)
	imErr error
}

// vfs is the machine's read-only file system: Config.Files over the
// sysroot, each file read from the host once.
type vfs struct {
	root  Sysroot
	files map[string]*simFile // by the path asked for, cleaned; nil: absent
}

func (m *Machine) fsys() *vfs {
	if m.vfs == nil {
		m.vfs = &vfs{root: Sysroot{Dir: m.cfg.Sysroot}, files: map[string]*simFile{}}
	}
	return m.vfs
}

// lookup finds the file at the simulated path name (relative paths are
// relative to /, the simulated working directory).
func (m *Machine) lookup(name string) (*simFile, errno) {
	if name == "" {
		return nil, eNOENT
	}
	if !strings.HasPrefix(name, "/") {
		name = "/" + name
	}
	v := m.fsys()
	if f, ok := v.files[name]; ok {
		if f == nil {
			return nil, eNOENT
		}
		return f, 0
	}
	f := m.lookupUncached(v, name)
	v.files[name] = f
	if f == nil {
		return nil, eNOENT
	}
	return f, 0
}

func (m *Machine) lookupUncached(v *vfs, name string) *simFile {
	clean := path.Clean(name)
	if data, ok := m.cfg.Files[clean]; ok {
		return &simFile{path: clean, data: data, ino: inode(clean)}
	}
	host, sim, err := v.root.Resolve(name)
	if err != nil {
		return nil
	}
	if f, ok := v.files[sim]; ok && f != nil && sim != name {
		return f // another name of a file already read
	}
	st, err := os.Stat(host)
	if err != nil {
		return nil
	}
	if st.IsDir() {
		return &simFile{path: sim, dir: true, ino: inode(sim)}
	}
	data, _, err := v.root.ReadFile(sim)
	if err != nil {
		return nil
	}
	f := &simFile{path: sim, data: data, ino: inode(sim)}
	v.files[sim] = f
	return f
}

// inode numbers a file by its resolved path: ld.so compares st_dev and
// st_ino to tell whether a library is already loaded.
func inode(p string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(p))
	return h.Sum64()>>1 | 1
}

// readProgram returns the bytes of the program or interpreter at path:
// Config.Files, then the sysroot.
func (m *Machine) readProgram(name string) (*simFile, error) {
	f, err := m.lookup(name)
	switch {
	case err != 0 && m.cfg.Sysroot == "":
		return nil, fmt.Errorf("%s: %w (no sysroot configured)", name, ErrNoProgram)
	case err != 0:
		return nil, fmt.Errorf("%s: %w in sysroot %s", name, ErrNoProgram, m.cfg.Sysroot)
	case f.dir:
		return nil, fmt.Errorf("%s: a directory, not a program", name)
	}
	return f, nil
}
