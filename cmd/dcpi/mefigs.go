package main

import (
	"fmt"
	"io"

	"dcpi/hwsim/alpha"
	"dcpi/simhost"
)

// parseModels reads --models: CPU model names, at least one.
func parseModels(names []string) ([]alpha.Model, error) {
	var out []alpha.Model
	for _, name := range names {
		m, err := alpha.ModelByName(name)
		if err != nil {
			return nil, fmt.Errorf("--models: %w", err)
		}
		out = append(out, m)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("--models: name at least one CPU model")
	}
	return out, nil
}

// figure is a measured figure that draws itself and summarizes itself.
type figure interface {
	WriteSVG(io.Writer) error
	WriteText(io.Writer) error
}

// emitFigure writes f's SVG to out (if named), then f as JSON or as its
// text summary to w.
func emitFigure(w io.Writer, f figure, out string, asJSON bool) error {
	if out != "" {
		if err := simhost.WriteFileWith(out, f.WriteSVG); err != nil {
			return err
		}
	}
	if asJSON {
		return writeJSON(w, f)
	}
	if err := f.WriteText(w); err != nil {
		return err
	}
	if out != "" {
		fmt.Fprintf(w, "wrote %s\n", out)
	}
	return nil
}
