package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"dcpi/analysis/instrument"
	"dcpi/simhost"
)

// printCCTCounts prints a CCT-mode dump (dcpi pp counts); save writes the
// tree (instrument.CCTProfile.WriteSaved) for dcpi pp upload.
func printCCTCounts(w io.Writer, bin, dump []byte, original, save, by string, top int, asJSON bool) error {
	p, err := instrument.ReadCCT(bin, dump)
	if err != nil {
		return err
	}
	var orig []byte
	if original != "" {
		if orig, _, err = simhost.ReadELF(original); err != nil {
			return err
		}
	}
	rep, err := instrument.NewCCTReport(p, orig, top)
	if err != nil {
		return err
	}
	if by != "" && p.Tree.Metric(by) < 0 {
		return fmt.Errorf("--by %s: the tree's metrics are %s", by, strings.Join(p.Tree.Metrics, ", "))
	}
	if save != "" {
		if err := simhost.WriteFileWith(save, p.WriteSaved); err != nil {
			return fmt.Errorf("save: %w", err)
		}
	}
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	return rep.Write(w, by, top)
}
