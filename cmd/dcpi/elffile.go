package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"dcpi/hwsim/elfimage"
	"dcpi/workloads"
)

// readELF is how every command that takes an Alpha ELF file on its command
// line (disasm, sim run) reads it: the file at arg, or else, when arg has no
// slash and no such file exists, the embedded workload of that name. The
// bytes pass elfimage.CheckFile, so a directory, a text file, an x86 ELF or
// a truncated file gets the same one-line error naming what is wrong in
// every command. arg is reported as given (a relative path stays relative).
func readELF(arg string) (data []byte, embedded bool, err error) {
	st, err := os.Stat(arg)
	switch {
	case err == nil && st.IsDir():
		return nil, false, fmt.Errorf("%s: a directory, not an ELF file", arg)
	case errors.Is(err, fs.ErrNotExist):
		if !strings.Contains(arg, "/") {
			if b, werr := workloads.Binary(arg); werr == nil {
				return b, true, nil
			}
		}
		return nil, false, fmt.Errorf("%s: not a file, nor an embedded workload (%s)", arg, strings.Join(workloads.Names(), ", "))
	case err != nil:
		return nil, false, err
	}
	if data, err = os.ReadFile(arg); err != nil {
		return nil, false, err
	}
	if err := elfimage.CheckFile(data, arg); err != nil {
		return nil, false, elfError(err)
	}
	return data, false, nil
}

// elfError words an elfimage error for a command line, "PATH: KIND:
// DETAIL" without the package's prefix; errors.Is still finds the kind.
func elfError(err error) error {
	var e *elfimage.Error
	if errors.As(err, &e) && e.Path != "" {
		return fmt.Errorf("%s: %w: %s", e.Path, e.Kind, e.Detail)
	}
	return err
}
