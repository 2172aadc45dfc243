package simhost

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"

	"dcpi/hwsim/elfimage"
	"dcpi/workloads"
)

// ReadELF is how every command that takes an Alpha ELF file on its
// command line (disasm, sim run, pp) reads it: the file at arg, or else,
// when arg has no slash and no such file exists, the embedded workload of
// that name. Only a regular file of at most MaxProgramBytes is read (a
// device such as /dev/zero would be read forever), and the bytes pass
// elfimage.CheckFile, so a directory, a text file, an x86 ELF or a
// truncated file gets the same one-line error naming what is wrong in
// every command. arg is reported as given (a relative path stays
// relative).
func ReadELF(arg string) (data []byte, embedded bool, err error) {
	st, err := os.Stat(arg)
	switch {
	case err == nil && st.IsDir():
		return nil, false, fmt.Errorf("%s: a directory, not an ELF file", arg)
	case err == nil && !st.Mode().IsRegular():
		return nil, false, fmt.Errorf("%s: not a regular file", arg)
	case err == nil && st.Size() > MaxProgramBytes:
		return nil, false, fmt.Errorf("%s: %d bytes, larger than the %d MB a simulated host loads", arg, st.Size(), MaxProgramBytes>>20)
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
	if data, err = readAtMost(arg, MaxProgramBytes); err != nil {
		return nil, false, err
	}
	if err := elfimage.CheckFile(data, arg); err != nil {
		return nil, false, ELFError(err)
	}
	return data, false, nil
}

// readAtMost reads the file at name, refusing it when it holds more than
// limit bytes (it may have grown since it was looked at).
func readAtMost(name string, limit int64) ([]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("%s: larger than the %d MB a simulated host loads", name, limit>>20)
	}
	return data, nil
}

// ELFError words an elfimage error for a command line, "PATH: KIND:
// DETAIL" without the package's prefix; errors.Is still finds the kind.
func ELFError(err error) error {
	var e *elfimage.Error
	if errors.As(err, &e) && e.Path != "" {
		return fmt.Errorf("%s: %w: %s", e.Path, e.Kind, e.Detail)
	}
	return err
}

// InstallFile installs FILE in the simulated file system and returns its
// simulated path: an existing host file goes to /bin/BASENAME, otherwise
// FILE must name an embedded workload (MachineConfig put it in /bin). A
// host file that is no Alpha executable the simulator can run is refused
// here, named as given.
func InstallFile(files map[string][]byte, file string) (string, error) {
	data, embedded, err := ReadELF(file)
	if err != nil {
		return "", err
	}
	if embedded {
		return workloads.BinDir + "/" + file, nil
	}
	if _, err := elfimage.Parse(data, file); err != nil {
		return "", ELFError(err)
	}
	p := workloads.BinDir + "/" + path.Base(file)
	files[p] = data
	return p, nil
}
