package paperfigs

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"dcpi/hwsim/alpha"
	"dcpi/internal/writefile"
)

// Figure is what every figure here can be written as.
type Figure interface {
	WriteSVG(io.Writer) error
	WriteText(io.Writer) error
}

// Emit writes f's SVG to the file svg when one is named, then f to w as
// indented JSON or as its text, which ends with a line naming the SVG.
func Emit(w io.Writer, f Figure, svg string, asJSON bool) error {
	if svg != "" {
		if err := writefile.With(svg, f.WriteSVG); err != nil {
			return err
		}
	}
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(f)
	}
	if err := f.WriteText(w); err != nil {
		return err
	}
	if svg != "" {
		_, err := fmt.Fprintf(w, "wrote %s\n", svg)
		return err
	}
	return nil
}

// Models reads CPU model names (at least one), as the figures' --models
// flag gives them.
func Models(names []string) ([]alpha.Model, error) {
	var out []alpha.Model
	for _, name := range names {
		m, err := alpha.ModelByName(name)
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	if len(out) == 0 {
		return nil, errors.New("name at least one CPU model")
	}
	return out, nil
}

// SetRuns makes o.Runs the workloads names, in order, each with the
// arguments a spec NAME:ARG,ARG gives it (NAME: for none), else those
// DefaultSkid gives it, else its own.
func (o *SkidOptions) SetRuns(names, specs []string) error {
	args := map[string][]string{}
	for _, r := range DefaultSkid().Runs {
		args[r.Workload] = r.Args
	}
	for _, spec := range specs {
		name, list, ok := strings.Cut(spec, ":")
		if !ok || name == "" {
			return fmt.Errorf("%q: want NAME:ARG,ARG", spec)
		}
		args[name] = nil
		if list != "" {
			args[name] = strings.Split(list, ",")
		}
	}
	o.Runs = nil
	for _, name := range names {
		o.Runs = append(o.Runs, SkidRun{Workload: name, Args: args[name]})
	}
	if len(o.Runs) == 0 {
		return errors.New("name at least one workload")
	}
	return nil
}

// checkInterval refuses a period or interval range that is empty or
// starts at 0.
func checkInterval(what string, r [2]uint64) error {
	if r[0] < 1 || r[1] < r[0] {
		return fmt.Errorf("paperfigs: %s %d-%d: want 1 <= min <= max", what, r[0], r[1])
	}
	return nil
}
