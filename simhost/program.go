package simhost

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"dcpi/hwsim"
	"dcpi/hwsim/elfimage"
	"dcpi/wire"
	"dcpi/workloads"
)

// ProgramSeparator separates the programs of one command line:
// dcpi profile -- ./a : ./b arg.
const ProgramSeparator = ":"

// MaxProgramBytes bounds the file read as a program (a static Alpha binary
// of the workloads is under 1 MB).
const MaxProgramBytes = 256 << 20

// Program is one program a simulated host runs: a file of the user's or an
// embedded workload.
type Program struct {
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
	// MachineConfig installs), and Key its content key.
	Data []byte
	Key  wire.ImageKey
}

// User reports whether the program is a file of the user's.
func (p Program) User() bool { return p.Data != nil }

// EmbeddedPrograms are the named embedded workloads with their default
// arguments.
func EmbeddedPrograms(names []string) ([]Program, error) {
	var progs []Program
	for _, n := range names {
		wl, ok := workloads.ByName(n)
		if !ok {
			return nil, fmt.Errorf("no embedded workload %q (have %s)", n, strings.Join(workloads.Names(), ", "))
		}
		path := workloads.BinDir + "/" + n
		progs = append(progs, Program{Given: n, Path: path, Argv: append([]string{path}, wl.DefaultArgs...)})
	}
	return progs, nil
}

// ChoosePrograms is what a node runs (dcpi node): the programs of a
// command line after -- (args, split by SplitPrograms), or the embedded
// workloads names, or those of mix (default: "default"). Programs after --
// with a mix or names are refused: the two ways exclude each other.
func ChoosePrograms(mix string, names, args []string) ([]Program, error) {
	if len(args) > 0 {
		if mix != "" || len(names) > 0 {
			return nil, fmt.Errorf("programs after -- and --mix or --workloads: give one or the other")
		}
		return SplitPrograms(args)
	}
	if len(names) > 0 {
		return EmbeddedPrograms(names)
	}
	if mix == "" {
		mix = "default"
	}
	progs, ok := workloads.Mixes()[mix]
	if !ok {
		return nil, fmt.Errorf("no mix %q (mixes: %s)", mix, strings.Join(workloads.MixNames(), ", "))
	}
	return EmbeddedPrograms(progs)
}

// CheckStacks refuses call stacks (--stacks, node.stacks) while this
// build cannot encode the batches that carry them (wire.StackVersion).
func CheckStacks() error {
	if wire.Version < wire.StackVersion {
		return fmt.Errorf("--stacks: this build encodes batches up to version %d; call stacks need version %d", wire.Version, wire.StackVersion)
	}
	return nil
}

// SplitPrograms splits a command line's programs, "PROG [ARGS...] [: PROG
// [ARGS...]]...", and loads each (LoadProgram). A ":" is a separator
// only as an argument of its own.
func SplitPrograms(args []string) ([]Program, error) {
	var progs []Program
	start := 0
	for i := 0; i <= len(args); i++ {
		if i < len(args) && args[i] != ProgramSeparator {
			continue
		}
		if i == start {
			return nil, fmt.Errorf("empty program between %q separators: write PROG [ARGS...] : PROG [ARGS...]", ProgramSeparator)
		}
		p, err := LoadProgram(args[start], args[start+1:i])
		if err != nil {
			return nil, err
		}
		progs = append(progs, p)
		start = i + 1
	}
	return progs, nil
}

// LoadProgram reads the user's program file and checks that the
// simulated host can run it (a static Alpha Linux ELF executable), so
// that bad input is refused before anything is written. A name without a
// slash that is no file names an embedded workload (its default
// arguments when none are given).
func LoadProgram(given string, args []string) (Program, error) {
	st, err := os.Stat(given)
	if errors.Is(err, fs.ErrNotExist) && !strings.ContainsRune(given, '/') {
		if wl, ok := workloads.ByName(given); ok {
			path := workloads.BinDir + "/" + given
			if len(args) == 0 {
				args = wl.DefaultArgs
			}
			return Program{Given: given, Path: path, Argv: append([]string{path}, args...)}, nil
		}
		return Program{}, fmt.Errorf("%s: no such file, nor an embedded workload (%s)", given, strings.Join(workloads.Names(), ", "))
	}
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return Program{}, fmt.Errorf("%s: no such file", given)
	case err != nil:
		return Program{}, err
	case st.IsDir():
		return Program{}, fmt.Errorf("%s: is a directory, not an Alpha executable", given)
	case !st.Mode().IsRegular():
		return Program{}, fmt.Errorf("%s: not a regular file", given)
	case st.Size() > MaxProgramBytes:
		return Program{}, fmt.Errorf("%s: %d bytes, larger than the %d MB a simulated host loads", given, st.Size(), MaxProgramBytes>>20)
	}
	data, err := os.ReadFile(given)
	if err != nil {
		return Program{}, err
	}
	im, err := elfimage.Parse(data, given)
	if err != nil {
		return Program{}, err
	}
	key, err := wire.ParseImageKey(im.ID.String())
	if err != nil {
		return Program{}, fmt.Errorf("%s: %w", given, err)
	}
	abs, err := filepath.Abs(given)
	if err != nil {
		return Program{}, err
	}
	path := filepath.ToSlash(abs)
	return Program{Given: given, Path: path, Argv: append([]string{path}, args...), Data: data, Key: key}, nil
}

// InstallPrograms puts the user's program files into the simulated file
// system (MachineConfig has put the embedded workloads there).
func InstallPrograms(hc *hwsim.Config, progs []Program) {
	for _, p := range progs {
		if p.User() {
			if hc.Files == nil {
				hc.Files = map[string][]byte{}
			}
			hc.Files[p.Path] = p.Data
		}
	}
}

// ProgramCommands shows the programs as the command line gave them, with
// their arguments.
func ProgramCommands(progs []Program) string {
	cmds := make([]string, len(progs))
	for i, p := range progs {
		cmds[i] = strings.Join(append([]string{p.Given}, p.Argv[1:]...), " ")
	}
	return strings.Join(cmds, " "+ProgramSeparator+" ")
}

// ProgramList names the programs for a progress or summary line.
func ProgramList(progs []Program) string {
	names := make([]string, len(progs))
	for i, p := range progs {
		names[i] = p.Given
	}
	return strings.Join(names, " ")
}
