package oracle

import (
	"encoding/json"
	"fmt"
	"io"

	"dcpi/hwsim"
	"dcpi/internal/writefile"
)

// Options is one dcpi pp oracle run.
type Options struct {
	// Machine is the simulated host; its Files hold the program (or its
	// embedded workloads do), its Stdout takes the program's output.
	Machine hwsim.Config
	// Path is the program as installed on the machine; Args the command
	// as given (Args[0] the program as named, then its arguments), which
	// the report repeats.
	Path string
	Args []string
	// Top is the hot paths and contexts per image the report keeps.
	Top int
	// Save is a file to write the path counts and the trees to
	// (docs/paths.md), for comparing an instrumented profile against.
	Save string
	// Warn is told of the images whose paths could not be numbered.
	Warn io.Writer
}

// RunReport runs the program under the oracle and returns its report,
// with the program's exit status, having written the save file first
// when asked for one: the report and the file come from the same run.
func RunReport(opt Options) (*Report, error) {
	warn := opt.Warn
	if warn == nil {
		warn = io.Discard
	}
	o, proc, err := Run(opt.Machine, opt.Path, append([]string{opt.Path}, opt.Args[1:]...), warn)
	if err != nil {
		return nil, err
	}
	rep := NewReport(o, opt.Machine.Files, opt.Args, opt.Top)
	rep.ExitStatus = proc.ExitStatus()
	if opt.Save != "" {
		if err := writefile.With(opt.Save, o.WriteSaved); err != nil {
			return nil, fmt.Errorf("save: %w", err)
		}
	}
	return rep, nil
}

// ExitCode is the program's exit code as a shell reports it (128 plus
// the signal for one killed by a signal).
func (r *Report) ExitCode() int { return hwsim.ExitCode(r.ExitStatus) }

// WriteJSON writes the report as indented JSON.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}
