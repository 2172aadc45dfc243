// Package heldout owns dcpi calc's held-out programs: small public
// benchmark kernels (the Stanford Integer Benchmarks' Bubble, Towers and
// Perm, BYTE's Sieve, MiBench's CRC32 and bitcount) that the estimator
// was never tuned on, and walklist, the linked-list walk of the
// "never misleads" check, which its tests assert on. Their C sources
// (src/), the Makefile that builds them and the committed static 21164
// ELF binaries (bin/) are here; the binaries are embedded so that tests
// and internal/tools/calcaccuracy run them with nothing installed. It
// does not run them: dcpi profile does (docs/dcpicalc.md, "Held out").
package heldout

import (
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

//go:embed bin
var files embed.FS

// ErrUnknown is returned (wrapped) for a program that is not embedded.
var ErrUnknown = errors.New("unknown held-out program")

// Program is one embedded program with the arguments the accuracy
// check runs it with: about 2,000-3,000 CYCLES samples on one host.
type Program struct {
	Name string
	Args []string
	// HeldOut: no test or tuning looked at it (walklist is the issue's
	// example, and its test asserts on it).
	HeldOut bool
	// Source is where the kernel comes from.
	Source string
}

// Programs lists the programs in the order of the accuracy table.
var Programs = []Program{
	{"bubble", []string{"120"}, true, "Stanford Integer Benchmarks (Hennessy), Bubble"},
	{"towers", []string{"140"}, true, "Stanford Integer Benchmarks (Hennessy), Towers"},
	{"perm", []string{"100"}, true, "Stanford Integer Benchmarks (Hennessy), Perm"},
	{"sieve", []string{"1000"}, true, "BYTE Sieve of Eratosthenes (Gilbreath, 1981)"},
	{"crc32", []string{"64", "200"}, true, "MiBench telecomm CRC32"},
	{"bitcnt", []string{"350000"}, true, "MiBench automotive bitcount"},
	{"walklist", nil, false, "the issue's linked-list walk (nodes scattered over 8 MB)"},
}

// Binary returns the committed binary of name.
func Binary(name string) ([]byte, error) {
	b, err := files.ReadFile("bin/" + name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: %s", ErrUnknown, name)
	}
	return b, err
}

// WriteBinary writes name's binary into dir (executable) and returns its
// path, for dcpi profile, which runs files.
func WriteBinary(dir, name string) (string, error) {
	b, err := Binary(name)
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, b, 0o755); err != nil {
		return "", fmt.Errorf("held-out %s: %w", name, err)
	}
	return path, nil
}
