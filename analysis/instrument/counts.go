package instrument

import (
	"bytes"
	"debug/elf"
	"fmt"
)

// ReadManifest returns the manifest of an instrumented ELF and its hash.
func ReadManifest(instrumented []byte) (*Manifest, [16]byte, error) {
	var hash [16]byte
	f, err := elf.NewFile(bytes.NewReader(instrumented))
	if err != nil {
		return nil, hash, fmt.Errorf("instrumented image: %w", err)
	}
	s := f.Section(ManifestSection)
	if s == nil {
		return nil, hash, fmt.Errorf("instrumented image: no %s section: not written by dcpi pp instrument", ManifestSection)
	}
	b, err := s.Data()
	if err != nil {
		return nil, hash, fmt.Errorf("instrumented image: %s: %w", ManifestSection, err)
	}
	return decodeManifest(b)
}

// Edge is a control transfer from the instruction at From to To (To is
// From+4 for a fall-through).
type Edge struct{ From, To uint64 }

// Counts are a pixie profile: executions of each counted basic block (by
// its first address) and of each counted edge, summed over the records.
type Counts struct {
	Manifest *Manifest
	Records  int
	Blocks   map[uint64]uint64
	Edges    map[Edge]uint64
}

// ReadCounts reads a dump with the instrumented image that wrote it.
func ReadCounts(instrumented, dump []byte) (*Counts, error) {
	m, recs, sum, err := readSummed(instrumented, dump, ModePixie, " (read it with ReadPaths)")
	if err != nil {
		return nil, err
	}
	return countsOf(m, sum, len(recs))
}

func countsOf(m *Manifest, sum []uint64, records int) (*Counts, error) {
	get := func(i int) (uint64, error) {
		if i < 0 || i >= len(sum) {
			return 0, fmt.Errorf("manifest: counter %d out of range (%d counters)", i, len(sum))
		}
		return sum[i], nil
	}
	c := &Counts{Manifest: m, Records: records, Blocks: map[uint64]uint64{}, Edges: map[Edge]uint64{}}
	for _, p := range m.Procs {
		for _, b := range p.Blocks {
			if b.Counter < 0 {
				continue
			}
			v, err := get(b.Counter)
			if err != nil {
				return nil, err
			}
			c.Blocks[b.Start] = v
		}
		for _, br := range p.Branches {
			t, err := get(br.Taken)
			if err != nil {
				return nil, err
			}
			f, err := get(br.Fall)
			if err != nil {
				return nil, err
			}
			c.Edges[Edge{br.PC, br.Target}] += t
			c.Edges[Edge{br.PC, br.PC + 4}] += f
		}
		for _, j := range p.Jumps {
			if j.Slots < 0 || j.Counter < 0 || j.Counter+j.Slots > len(sum) {
				return nil, fmt.Errorf("manifest: jump at %#x: counters out of range", j.PC)
			}
			for k := range j.Slots {
				if v := sum[j.Counter+k]; v > 0 {
					c.Edges[Edge{j.PC, j.Lo + 4*uint64(k)}] += v
				}
			}
		}
	}
	return c, nil
}

// readSummed reads the manifest of an instrumented image of the given mode
// (hint ends the error for another mode) and the records of its dump, and
// sums the records' counters: every process's (forked children, images
// before an execve).
func readSummed(instrumented, dump []byte, mode, hint string) (m *Manifest, recs []Record, sum []uint64, err error) {
	m, hash, err := ReadManifest(instrumented)
	if err != nil {
		return nil, nil, nil, err
	}
	if m.Mode != mode {
		return nil, nil, nil, fmt.Errorf("instrumented image: mode %q, not %s%s", m.Mode, mode, hint)
	}
	recs, err = ParseDump(dump, hash, m.Counters)
	if err != nil {
		return nil, nil, nil, err
	}
	if len(recs) == 0 {
		return nil, nil, nil, fmt.Errorf("dump: no records (did the program exit through exit_group?)")
	}
	sum = make([]uint64, m.Counters)
	for _, r := range recs {
		for i, v := range r.Counters {
			sum[i] += v
		}
	}
	return m, recs, sum, nil
}
