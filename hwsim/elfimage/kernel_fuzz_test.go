package elfimage

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"dcpi/hwsim/vmunix"
)

// FuzzParseKernel feeds the kernel image parser (ParseKernel, which hwsim
// boots vmunix with: its segments lie above user space) and CheckFile
// (the tools' check of any Alpha ELF file, objects too) the embedded
// vmunix and damaged copies of it: each returns an image or an *Error of
// a Parse kind, never panics (they recover a panic as an "internal
// error", which fails the target too); a kernel image's segments lie in
// [UserAddrLimit, KernelAddrLimit) and inside the file, and its symbols
// look up as hwsim's kernel loader looks them up.
func FuzzParseKernel(f *testing.F) {
	k := vmunix.Image()
	f.Add(bytes.Clone(k))
	for _, c := range corruptions(k) {
		// The table was written for a user binary: skip what a kernel
		// lacks (a TLS segment, ...).
		func() {
			defer func() { recover() }()
			f.Add(mutate(k, c.fn))
		}()
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		checkErr := func(what string, err error) {
			t.Helper()
			var e *Error
			if !errors.As(err, &e) || !(e.Kind == ErrNotELF || e.Kind == ErrUnsupported || e.Kind == ErrMalformed) {
				t.Fatalf("%s: error %v (%T) is not an *Error with a Parse sentinel", what, err, err)
			}
			if strings.Contains(err.Error(), "internal error") {
				t.Fatalf("%s recovered from a panic: %v", what, err)
			}
		}
		if err := CheckFile(b, "fuzz"); err != nil {
			checkErr("CheckFile", err)
		}
		im, err := ParseKernel(b, vmunix.Path)
		if err != nil {
			checkErr("ParseKernel", err)
			if im != nil {
				t.Fatalf("image and error both returned")
			}
			return
		}
		if err := CheckFile(b, "fuzz"); err != nil {
			t.Fatalf("ParseKernel accepts what CheckFile refuses: %v", err)
		}
		if len(im.Segments) == 0 {
			t.Fatalf("kernel image without segments")
		}
		for i, s := range im.Segments {
			if s.Filesz > s.Memsz || uint64(len(s.Data)) != s.Filesz || s.Offset+s.Filesz < s.Offset || s.Offset+s.Filesz > uint64(len(b)) ||
				!bytes.Equal(s.Data, b[s.Offset:s.Offset+s.Filesz]) || s.Vaddr < UserAddrLimit || s.Vaddr+s.Memsz < s.Vaddr || s.Vaddr+s.Memsz > KernelAddrLimit {
				t.Fatalf("segment %d inconsistent: %+v", i, s)
			}
		}
		for _, name := range []string{"entSys", "entInt", "entMM", "cpu_idle", "cpu_data", "kernel_stacks", "timeslice_ticks"} {
			if sym, ok := im.SymbolNamed(name); ok {
				if s, off, ok := im.Lookup(sym.Addr); ok && s.Addr+off != sym.Addr {
					t.Fatalf("Lookup(%#x) = %+v + %#x", sym.Addr, s, off)
				}
			}
		}
	})
}
