package hwsim

import (
	"fmt"
	"hash/fnv"
	"os"
	"path"
	"strings"

	"dcpi/hwsim/elfimage"
	"dcpi/hwsim/sysroot"
)

// DefaultSysroot is where Debian's Alpha cross toolchain (libc6.1-alpha-cross)
// installs the dynamic loader and the C library (sysroot.Default).
const DefaultSysroot = sysroot.Default

// Sysroot is a confined host directory (package sysroot).
type Sysroot = sysroot.Root

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
