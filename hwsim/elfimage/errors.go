package elfimage

import (
	"errors"
	"fmt"
)

// Sentinel errors that callers test with errors.Is. Every error Parse returns
// is an *Error wrapping exactly one of the first three.
var (
	// ErrNotELF: the bytes do not start with the ELF magic.
	ErrNotELF = errors.New("not an ELF file")
	// ErrUnsupported: a well-formed ELF file this simulator cannot run
	// (wrong class, byte order or machine, not ET_EXEC, dynamically linked).
	ErrUnsupported = errors.New("unsupported")
	// ErrMalformed: the file claims to be an ELF executable but its
	// structure is inconsistent (truncated, out-of-file ranges, overlaps,
	// absurd sizes).
	ErrMalformed = errors.New("malformed")
	// ErrStack: BuildStack or ParseStack was given arguments that cannot
	// form (or do not form) a valid initial process stack.
	ErrStack = errors.New("invalid initial stack")
)

// Error is the error type Parse returns: which file, which class of problem
// (one of the sentinels above) and a human-readable detail naming it.
type Error struct {
	Path   string
	Kind   error
	Detail string
}

func (e *Error) Error() string {
	if e.Path == "" {
		return "elfimage: " + e.Kind.Error() + ": " + e.Detail
	}
	return "elfimage: " + e.Path + ": " + e.Kind.Error() + ": " + e.Detail
}

// Unwrap lets errors.Is match the sentinel.
func (e *Error) Unwrap() error { return e.Kind }

func newErr(path string, kind error, format string, args ...any) *Error {
	return &Error{Path: path, Kind: kind, Detail: fmt.Sprintf(format, args...)}
}

func stackErr(format string, args ...any) error {
	return &Error{Kind: ErrStack, Detail: fmt.Sprintf(format, args...)}
}
