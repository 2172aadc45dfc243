package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"dcpi/hwsim"
	"dcpi/hwsim/elfimage"
	"dcpi/wire"
	"dcpi/workloads"
)

// programSeparator separates the programs of one command line:
// dcpi profile -- ./a : ./b arg.
const programSeparator = ":"

// maxProgramBytes bounds the file read as a program (a static Alpha binary
// of the workloads is under 1 MB).
const maxProgramBytes = 256 << 20

// program is one program a simulated host runs: a file of the user's or an
// embedded workload.
type program struct {
	// Given is the program as the command line named it, for messages.
	Given string
	// Path is where the program lives in the simulated file system, and
	// so the path its image records carry: an embedded workload's
	// /bin/NAME, or the absolute path of the user's file, so that the
	// analysis tools find the file later where it was profiled.
	Path string
	// Argv is the program's argument vector; argv[0] is Path.
	Argv []string
	// Data is the user's file (nil for an embedded workload, which
	// machineConfig installs), and Key its content key.
	Data []byte
	Key  wire.ImageKey
}

// user reports whether the program is a file of the user's.
func (p program) user() bool { return p.Data != nil }

// embeddedPrograms are the named embedded workloads with their default
// arguments.
func embeddedPrograms(names []string) ([]program, error) {
	var progs []program
	for _, n := range names {
		wl, ok := workloadByName(n)
		if !ok {
			return nil, fmt.Errorf("no embedded workload %q (have %s)", n, strings.Join(workloadNames(), ", "))
		}
		path := workloads.BinDir + "/" + n
		progs = append(progs, program{Given: n, Path: path, Argv: append([]string{path}, wl.DefaultArgs...)})
	}
	return progs, nil
}

// splitPrograms splits a command line's programs, "PROG [ARGS...] [: PROG
// [ARGS...]]...", and loads each (loadProgram). A ":" is a separator
// only as an argument of its own.
func splitPrograms(args []string) ([]program, error) {
	var progs []program
	start := 0
	for i := 0; i <= len(args); i++ {
		if i < len(args) && args[i] != programSeparator {
			continue
		}
		if i == start {
			return nil, fmt.Errorf("empty program between %q separators: write PROG [ARGS...] : PROG [ARGS...]", programSeparator)
		}
		p, err := loadProgram(args[start], args[start+1:i])
		if err != nil {
			return nil, err
		}
		progs = append(progs, p)
		start = i + 1
	}
	return progs, nil
}

// loadProgram reads the user's program file and checks that the
// simulated host can run it (a static Alpha Linux ELF executable), so
// that bad input is refused before anything is written. A name without a
// slash that is no file names an embedded workload (its default
// arguments when none are given).
func loadProgram(given string, args []string) (program, error) {
	st, err := os.Stat(given)
	if errors.Is(err, fs.ErrNotExist) && !strings.ContainsRune(given, '/') {
		if wl, ok := workloadByName(given); ok {
			path := workloads.BinDir + "/" + given
			if len(args) == 0 {
				args = wl.DefaultArgs
			}
			return program{Given: given, Path: path, Argv: append([]string{path}, args...)}, nil
		}
		return program{}, fmt.Errorf("%s: no such file, nor an embedded workload (%s)", given, strings.Join(workloadNames(), ", "))
	}
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return program{}, fmt.Errorf("%s: no such file", given)
	case err != nil:
		return program{}, err
	case st.IsDir():
		return program{}, fmt.Errorf("%s: is a directory, not an Alpha executable", given)
	case !st.Mode().IsRegular():
		return program{}, fmt.Errorf("%s: not a regular file", given)
	case st.Size() > maxProgramBytes:
		return program{}, fmt.Errorf("%s: %d bytes, larger than the %d MB a simulated host loads", given, st.Size(), maxProgramBytes>>20)
	}
	data, err := os.ReadFile(given)
	if err != nil {
		return program{}, err
	}
	im, err := elfimage.Parse(data, given)
	if err != nil {
		return program{}, err
	}
	key, err := wire.ParseImageKey(im.ID.String())
	if err != nil {
		return program{}, fmt.Errorf("%s: %w", given, err)
	}
	abs, err := filepath.Abs(given)
	if err != nil {
		return program{}, err
	}
	path := filepath.ToSlash(abs)
	return program{Given: given, Path: path, Argv: append([]string{path}, args...), Data: data, Key: key}, nil
}

// installPrograms puts the user's program files into the simulated file
// system (machineConfig has put the embedded workloads there).
func installPrograms(hc *hwsim.Config, progs []program) {
	for _, p := range progs {
		if p.user() {
			if hc.Files == nil {
				hc.Files = map[string][]byte{}
			}
			hc.Files[p.Path] = p.Data
		}
	}
}

// programCommands shows the programs as the command line gave them, with
// their arguments.
func programCommands(progs []program) string {
	cmds := make([]string, len(progs))
	for i, p := range progs {
		cmds[i] = strings.Join(append([]string{p.Given}, p.Argv[1:]...), " ")
	}
	return strings.Join(cmds, " "+programSeparator+" ")
}

// programList names the programs for a progress or summary line.
func programList(progs []program) string {
	names := make([]string, len(progs))
	for i, p := range progs {
		names[i] = p.Given
	}
	return strings.Join(names, " ")
}

// programsOnlyAfterDash is the cobra.Args of a command that takes programs
// after "--" and nothing else: a word that is not a flag is never ignored
// (dcpi node ./prog once profiled the default mix). usage is the
// command's form with programs, for the message.
func programsOnlyAfterDash(usage string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if dash := cmd.ArgsLenAtDash(); dash < 0 && len(args) > 0 || dash > 0 {
			return fmt.Errorf("unexpected argument %q: programs go after --, as in %s", args[0], usage)
		}
		return nil
	}
}
