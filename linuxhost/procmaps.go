package linuxhost

import (
	"bufio"
	"bytes"
	"strconv"
	"strings"
)

// ProcMapping is one line of /proc/PID/maps that maps a file executable.
type ProcMapping struct {
	Start, End, Offset uint64
	Path               string
}

// ParseProcMaps returns the executable file mappings of a /proc/PID/maps
// text: the mappings already in force when profiling starts, which no
// MMAP2 record will report. Lines it cannot read are skipped.
func ParseProcMaps(text []byte) []ProcMapping {
	var out []ProcMapping
	sc := bufio.NewScanner(bytes.NewReader(text))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 6 || len(f[1]) < 3 || f[1][2] != 'x' || !strings.HasPrefix(f[5], "/") {
			continue
		}
		lo, hi, ok := strings.Cut(f[0], "-")
		if !ok {
			continue
		}
		start, err1 := strconv.ParseUint(lo, 16, 64)
		end, err2 := strconv.ParseUint(hi, 16, 64)
		off, err3 := strconv.ParseUint(f[2], 16, 64)
		if err1 != nil || err2 != nil || err3 != nil || end <= start {
			continue
		}
		out = append(out, ProcMapping{Start: start, End: end, Offset: off, Path: strings.Join(f[5:], " ")})
	}
	return out
}
