package simhost

import (
	"bytes"
	"debug/elf"
	"fmt"
	"path"

	"dcpi/hwsim"
	"dcpi/hwsim/elfimage"
	"dcpi/wire"
)

// libDirs are where glibc's ld.so looks for a DT_NEEDED library that no
// cache or run path names (its built-in system directories).
var libDirs = []string{"/lib", "/usr/lib", "/lib/alpha-linux-gnu", "/usr/lib/alpha-linux-gnu"}

// maxSharedObjects bounds the closure SharedObjects follows.
const maxSharedObjects = 256

// SharedObjects returns the files a dynamically linked program loads at
// start-up, from the host directory sysroot: its interpreter and the
// closure of its DT_NEEDED libraries, each with its content key and
// simulated path, so that a cluster host can upload them beside the
// program for the analysis tools (libraries a program dlopen's later are
// not known before it runs; the image finder looks for those in the
// sysroot). A static program has none. A library that cannot be found or
// read is an error naming it.
func SharedObjects(sysroot string, prog []byte, given string) ([]Program, error) {
	im, err := elfimage.Parse(prog, given)
	if err != nil {
		return nil, ELFError(err)
	}
	if im.Interp == "" {
		return nil, nil
	}
	root := hwsim.Sysroot{Dir: sysroot}
	var out []Program
	seen := map[string]bool{}
	add := func(sim string, data []byte) error {
		o, err := elfimage.ParseObject(data, sim)
		if err != nil {
			return ELFError(err)
		}
		key, err := wire.ParseImageKey(o.ID.String())
		if err != nil {
			return fmt.Errorf("%s: %w", sim, err)
		}
		out = append(out, Program{Given: sim, Path: sim, Data: data, Key: key})
		return nil
	}
	data, sim, err := root.ReadFile(im.Interp)
	if err != nil {
		return nil, fmt.Errorf("%s: interpreter %s: not in sysroot %q: %w", given, im.Interp, sysroot, err)
	}
	seen[sim] = true
	if err := add(sim, data); err != nil {
		return nil, err
	}
	todo := []struct {
		data []byte
		name string
	}{{prog, given}}
	for len(todo) > 0 && len(out) < maxSharedObjects {
		cur := todo[0]
		todo = todo[1:]
		f, err := elf.NewFile(bytes.NewReader(cur.data))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", cur.name, err)
		}
		needed, err := f.ImportedLibraries()
		if err != nil {
			return nil, fmt.Errorf("%s: DT_NEEDED: %w", cur.name, err)
		}
		for _, lib := range needed {
			d, s, err := findLibrary(root, lib)
			if err != nil {
				return nil, fmt.Errorf("%s: library %s needed by %s: not in sysroot %q", given, lib, cur.name, sysroot)
			}
			if seen[s] {
				continue
			}
			seen[s] = true
			if err := add(s, d); err != nil {
				return nil, err
			}
			todo = append(todo, struct {
				data []byte
				name string
			}{d, s})
		}
	}
	return out, nil
}

func findLibrary(root hwsim.Sysroot, lib string) ([]byte, string, error) {
	if path.IsAbs(lib) {
		return root.ReadFile(lib)
	}
	var last error
	for _, d := range libDirs {
		data, sim, err := root.ReadFile(d + "/" + lib)
		if err == nil {
			return data, sim, nil
		}
		last = err
	}
	return nil, "", last
}
