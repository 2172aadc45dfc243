package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"dcpi/hwsim/elfimage"
	"dcpi/workloads"
)

// TestBadELFSameErrorEverywhere: disasm and sim run read their FILE through
// one check, so a directory, a text file, an x86-64 ELF and truncated ELFs
// get the same one-line error naming what is wrong, with the path as given
// (disasm used to say only "EOF").
func TestBadELFSameErrorEverywhere(t *testing.T) {
	tiny, err := workloads.Binary("tiny")
	if err != nil {
		t.Fatal(err)
	}
	x86 := append([]byte(nil), tiny[:64]...)
	x86[18], x86[19] = 62, 0 // e_machine EM_X86_64
	dir := t.TempDir()
	t.Chdir(dir)
	files := map[string][]byte{
		"text.txt":     []byte("hello\n"),
		"x86":          append(x86, tiny[64:]...),
		"trunc":        tiny[:3000],
		"trunc100":     tiny[:100],
		"magic":        []byte("\x7fELF"),
		"sub/tiny.bin": tiny,
	}
	for name, b := range files {
		if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(name, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		file, want string
		kind       error
	}{
		{"sub", "sub: a directory, not an ELF file", nil},
		{"text.txt", "text.txt: not an ELF file: no ELF magic", elfimage.ErrNotELF},
		{"x86", "x86: unsupported: machine EM_X86_64 (want EM_ALPHA 0x9026)", elfimage.ErrUnsupported},
		{"trunc", "trunc: malformed: section header table (e_shoff 0x", elfimage.ErrMalformed},
		{"trunc100", "trunc100: malformed: program header table (e_phoff 0x40", elfimage.ErrMalformed},
		{"./magic", "./magic: malformed: truncated ELF identification: file is 4 bytes, need 16", elfimage.ErrMalformed},
		{"sub/nope", "sub/nope: not a file, nor an embedded workload", nil},
		// A device is refused before a byte is read (disasm /dev/zero
		// used to read for ever).
		{"/dev/zero", "/dev/zero: not a regular file", nil},
	} {
		for _, cmd := range [][]string{{"disasm"}, {"sim", "run"}} {
			_, _, err := run(t, append(cmd, tc.file)...)
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") ||
				strings.Contains(err.Error(), dir) || (tc.kind != nil && !errors.Is(err, tc.kind)) {
				t.Errorf("dcpi %s %s: err %v, want one line starting %q", strings.Join(cmd, " "), tc.file, err, tc.want)
			}
		}
	}
	// A good file at a relative path is read and named as given.
	out, _, err := run(t, "disasm", "sub/tiny.bin")
	if err != nil || !strings.Contains(out, "sub/tiny.bin:     file format elf64-alpha") {
		t.Errorf("disasm sub/tiny.bin: %v\n%.200s", err, out)
	}
}
