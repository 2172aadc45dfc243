// Package sysroot reads files of a host directory that a simulated Alpha
// Linux host sees as its root directory (a dynamic loader's and its
// libraries' home, like qemu-alpha -L): every lookup is confined to the
// directory. It owns path resolution and reading, not the simulated file
// system's descriptors (package hwsim) or parsing (package elfimage).
package sysroot

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Default is where Debian's Alpha cross toolchain (libc6.1-alpha-cross)
// installs the dynamic loader and the C library: /lib/ld-linux.so.2 of a
// dynamically linked program is /usr/alpha-linux-gnu/lib/ld-linux.so.2 here,
// as qemu-alpha -L /usr/alpha-linux-gnu reads it.
const Default = "/usr/alpha-linux-gnu"

// MaxFile caps a file read from the sysroot, in bytes: the largest
// library of the cross toolchain is a few megabytes.
const MaxFile = 256 << 20

// ErrLoop: a lookup followed more symbolic links than Linux allows
// (a loop). ".." and links cannot leave the root: the root is the
// simulated root directory, as under chroot.
var ErrLoop = errors.New("too many levels of symbolic links")

// Root is a host directory seen read-only as the simulated file
// system's root (below Config.Files): /lib/libc.so.6.1 is DIR/lib/libc.so.6.1.
// Every path is resolved one component at a time, with ".." stopping at
// the root and symbolic links (absolute ones relative to the root) followed
// inside it, so nothing outside DIR is ever read.
type Root struct{ Dir string }

// maxLinks is Linux's MAXSYMLINKS: more links than this in one lookup is ELOOP.
const maxLinks = 40

// Resolve returns the host path of the simulated absolute path name, and
// the simulated path it resolved to (links followed).
func (s Root) Resolve(name string) (host, sim string, err error) {
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
			return "", "", fmt.Errorf("%s: %w (more than %d)", name, ErrLoop, maxLinks)
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
// of at most MaxFile bytes.
func (s Root) ReadFile(name string) (data []byte, sim string, err error) {
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
	data, err = io.ReadAll(io.LimitReader(f, MaxFile+1))
	if err != nil {
		return nil, "", err
	}
	if len(data) > MaxFile {
		return nil, "", fmt.Errorf("%s: larger than %d MB", name, MaxFile>>20)
	}
	return data, sim, nil
}
