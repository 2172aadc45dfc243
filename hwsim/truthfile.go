package hwsim

import (
	"bufio"
	"cmp"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"dcpi/hwsim/alpha"
)

// The ground truth file (docs/groundtruth.md): a version line, then three
// sections, each a "[name]" line, a line of column names and tab-separated
// rows sorted by image and address:
//
//	[pcs]      image pc executed head_cycles stall_<cause>... <event>...
//	[edges]    image from to count
//	[regwaits] image pc reg operand producer cause count cycles
//
// Addresses are 0x-prefixed lower-case hex, counts decimal; an image path
// that holds a tab, a newline or a leading quote is written Go-quoted.

// GroundTruthVersion is the first line of a ground truth file.
const GroundTruthVersion = "dcpi-ground-truth v3"

// The sections of a ground truth file, in the order they are written.
const (
	sectionPCs      = "[pcs]"
	sectionEdges    = "[edges]"
	sectionRegWaits = "[regwaits]"
)

// pcsHeader is the column line of the pcs section: its stall and event
// columns follow package alpha's causes and events.
func pcsHeader() string {
	var b strings.Builder
	b.WriteString("image\tpc\texecuted\thead_cycles")
	for s := alpha.StallCause(0); s < alpha.NumStallCauses; s++ {
		b.WriteString("\tstall_" + s.String())
	}
	for e := alpha.Event(0); e < alpha.NumEvents; e++ {
		b.WriteString("\t" + e.String())
	}
	return b.String()
}

const (
	edgesHeader    = "image\tfrom\tto\tcount"
	regWaitsHeader = "image\tpc\treg\toperand\tproducer\tcause\tcount\tcycles"
)

// EncodeGroundTruth writes truth, by image path, in the ground truth file
// format.
func EncodeGroundTruth(w io.Writer, truth map[string]*alpha.GroundTruth) error {
	bw := bufio.NewWriter(w)
	paths := make([]string, 0, len(truth))
	for p, g := range truth {
		if g != nil {
			paths = append(paths, p)
		}
	}
	slices.Sort(paths)
	fmt.Fprintln(bw, GroundTruthVersion)

	fmt.Fprintln(bw, sectionPCs)
	fmt.Fprintln(bw, pcsHeader())
	for _, path := range paths {
		g, name := truth[path], imageField(path)
		pcs := make([]uint64, 0, len(g.PCs))
		for pc, t := range g.PCs {
			if t != nil {
				pcs = append(pcs, pc)
			}
		}
		slices.Sort(pcs)
		for _, pc := range pcs {
			t := g.PCs[pc]
			fmt.Fprintf(bw, "%s\t%#x\t%d\t%d", name, pc, t.Executed, t.HeadCycles)
			for _, v := range t.Stall {
				fmt.Fprintf(bw, "\t%d", v)
			}
			for _, v := range t.Events {
				fmt.Fprintf(bw, "\t%d", v)
			}
			bw.WriteByte('\n')
		}
	}

	fmt.Fprintln(bw, sectionEdges)
	fmt.Fprintln(bw, edgesHeader)
	for _, path := range paths {
		g, name := truth[path], imageField(path)
		edges := make([]alpha.Edge, 0, len(g.Edges))
		for e := range g.Edges {
			edges = append(edges, e)
		}
		slices.SortFunc(edges, func(a, b alpha.Edge) int {
			return cmp.Or(cmp.Compare(a.From, b.From), cmp.Compare(a.To, b.To))
		})
		for _, e := range edges {
			fmt.Fprintf(bw, "%s\t%#x\t%#x\t%d\n", name, e.From, e.To, g.Edges[e])
		}
	}

	fmt.Fprintln(bw, sectionRegWaits)
	fmt.Fprintln(bw, regWaitsHeader)
	for _, path := range paths {
		g, name := truth[path], imageField(path)
		keys := make([]alpha.RegWait, 0, len(g.RegWaits))
		for k := range g.RegWaits {
			keys = append(keys, k)
		}
		slices.SortFunc(keys, compareRegWaits)
		for _, k := range keys {
			v := g.RegWaits[k]
			fmt.Fprintf(bw, "%s\t%#x\t%d\t%s\t%#x\t%s\t%d\t%d\n", name, k.PC, k.Reg, k.Operand, k.Producer, k.Cause, v.Count, v.Cycles)
		}
	}
	return bw.Flush()
}

func compareRegWaits(a, b alpha.RegWait) int {
	return cmp.Or(cmp.Compare(a.PC, b.PC), cmp.Compare(a.Operand, b.Operand), cmp.Compare(a.Reg, b.Reg),
		cmp.Compare(a.Producer, b.Producer), cmp.Compare(a.Cause, b.Cause))
}

// imageField is path as a field: Go-quoted if it could not be read back
// as it is.
func imageField(path string) string {
	if path == "" || strings.ContainsAny(path, "\t\n\r") || path[0] == '"' {
		return strconv.Quote(path)
	}
	return path
}

// ReadGroundTruth reads a ground truth file that EncodeGroundTruth (or
// Machine.WriteGroundTruth) wrote, returning the collections by image
// path. Malformed input is an error naming the line.
func ReadGroundTruth(r io.Reader) (map[string]*alpha.GroundTruth, error) {
	p := truthParser{truth: map[string]*alpha.GroundTruth{}}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		p.line++
		if err := p.parse(sc.Text()); err != nil {
			return nil, fmt.Errorf("ground truth line %d: %w", p.line, err)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("ground truth line %d: %w", p.line+1, err)
	}
	if p.line == 0 {
		return nil, fmt.Errorf("ground truth: empty input, want %q", GroundTruthVersion)
	}
	if p.wantHeader != "" {
		return nil, fmt.Errorf("ground truth line %d: section %s has no column line", p.line, p.section)
	}
	return p.truth, nil
}

// truthParser is ReadGroundTruth's state between lines.
type truthParser struct {
	truth      map[string]*alpha.GroundTruth
	line       int
	section    string          // the current section, "" before the first
	wantHeader string          // the column line the next line must be
	seen       map[string]bool // sections read
}

func (p *truthParser) parse(line string) error {
	switch {
	case p.line == 1:
		if line != GroundTruthVersion {
			return fmt.Errorf("not a ground truth file of this version: got %.60q, want %q", line, GroundTruthVersion)
		}
		return nil
	case p.wantHeader != "":
		if line != p.wantHeader {
			return fmt.Errorf("section %s: column line %.80q, want %.80q", p.section, line, p.wantHeader)
		}
		p.wantHeader = ""
		return nil
	case line == sectionPCs || line == sectionEdges || line == sectionRegWaits:
		if p.seen[line] {
			return fmt.Errorf("section %s appears twice", line)
		}
		if p.seen == nil {
			p.seen = map[string]bool{}
		}
		p.seen[line] = true
		p.section = line
		switch line {
		case sectionPCs:
			p.wantHeader = pcsHeader()
		case sectionEdges:
			p.wantHeader = edgesHeader
		default:
			p.wantHeader = regWaitsHeader
		}
		return nil
	}
	f := strings.Split(line, "\t")
	switch p.section {
	case sectionPCs:
		return p.pcRow(f)
	case sectionEdges:
		return p.edgeRow(f)
	case sectionRegWaits:
		return p.regWaitRow(f)
	}
	return fmt.Errorf("row %.40q before any section", line)
}

// image returns the collection named by field s.
func (p *truthParser) image(s string) (*alpha.GroundTruth, error) {
	path := s
	if s == "" {
		return nil, fmt.Errorf("empty image path")
	}
	if s[0] == '"' {
		var err error
		if path, err = strconv.Unquote(s); err != nil {
			return nil, fmt.Errorf("image %.60s: bad quoting", s)
		}
	}
	g := p.truth[path]
	if g == nil {
		g = alpha.NewGroundTruth()
		p.truth[path] = g
	}
	return g, nil
}

func fieldCount(f []string, want int) error {
	if len(f) != want {
		return fmt.Errorf("%d fields, want %d", len(f), want)
	}
	return nil
}

// addr parses a 0x-prefixed hex address.
func addr(col, s string) (uint64, error) {
	h, ok := strings.CutPrefix(s, "0x")
	if !ok {
		return 0, fmt.Errorf("%s %.30q: want 0x and hex digits", col, s)
	}
	v, err := strconv.ParseUint(h, 16, 64)
	if err != nil {
		return 0, fmt.Errorf("%s %.30q: want 0x and hex digits", col, s)
	}
	return v, nil
}

// count parses a decimal count.
func count(col, s string) (uint64, error) {
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s %.30q: want a decimal count", col, s)
	}
	return v, nil
}

func (p *truthParser) pcRow(f []string) error {
	if err := fieldCount(f, 4+int(alpha.NumStallCauses)+int(alpha.NumEvents)); err != nil {
		return err
	}
	g, err := p.image(f[0])
	if err != nil {
		return err
	}
	pc, err := addr("pc", f[1])
	if err != nil {
		return err
	}
	if g.PCs[pc] != nil {
		return fmt.Errorf("pc %#x of %s appears twice", pc, f[0])
	}
	t := &alpha.PCTruth{}
	if t.Executed, err = count("executed", f[2]); err != nil {
		return err
	}
	if t.HeadCycles, err = count("head_cycles", f[3]); err != nil {
		return err
	}
	for i := range t.Stall {
		if t.Stall[i], err = count("stall_"+alpha.StallCause(i).String(), f[4+i]); err != nil {
			return err
		}
	}
	for i := range t.Events {
		if t.Events[i], err = count(alpha.Event(i).String(), f[4+len(t.Stall)+i]); err != nil {
			return err
		}
	}
	g.PCs[pc] = t
	return nil
}

func (p *truthParser) edgeRow(f []string) error {
	if err := fieldCount(f, 4); err != nil {
		return err
	}
	g, err := p.image(f[0])
	if err != nil {
		return err
	}
	var e alpha.Edge
	if e.From, err = addr("from", f[1]); err != nil {
		return err
	}
	if e.To, err = addr("to", f[2]); err != nil {
		return err
	}
	if _, dup := g.Edges[e]; dup {
		return fmt.Errorf("edge %#x -> %#x of %s appears twice", e.From, e.To, f[0])
	}
	n, err := count("count", f[3])
	if err != nil {
		return err
	}
	g.Edges[e] = n
	return nil
}

func (p *truthParser) regWaitRow(f []string) error {
	if err := fieldCount(f, 8); err != nil {
		return err
	}
	g, err := p.image(f[0])
	if err != nil {
		return err
	}
	var k alpha.RegWait
	if k.PC, err = addr("pc", f[1]); err != nil {
		return err
	}
	reg, err := strconv.ParseUint(f[2], 10, 8)
	if err != nil || reg > 63 {
		return fmt.Errorf("reg %.30q: want 0-63", f[2])
	}
	k.Reg = uint8(reg)
	switch f[3] {
	case alpha.OperandRa.String():
		k.Operand = alpha.OperandRa
	case alpha.OperandRb.String():
		k.Operand = alpha.OperandRb
	default:
		return fmt.Errorf("operand %.30q: want ra or rb", f[3])
	}
	if k.Producer, err = addr("producer", f[4]); err != nil {
		return err
	}
	var ok bool
	if k.Cause, ok = alpha.ParseStallCause(f[5]); !ok {
		return fmt.Errorf("cause %.30q: not a stall cause", f[5])
	}
	if _, dup := g.RegWaits[k]; dup {
		return fmt.Errorf("register wait %s pc %#x reg %d %s producer %#x %s appears twice", f[0], k.PC, k.Reg, k.Operand, k.Producer, k.Cause)
	}
	var w alpha.WaitTotal
	if w.Count, err = count("count", f[6]); err != nil {
		return err
	}
	if w.Cycles, err = count("cycles", f[7]); err != nil {
		return err
	}
	g.RegWaits[k] = w
	return nil
}

// WriteGroundTruthOf writes the ground truth of several machines (a fleet
// running the same programs) summed per image and instruction, in
// WriteGroundTruth's format.
func WriteGroundTruthOf(w io.Writer, machines ...*Machine) error {
	if len(machines) == 1 {
		return machines[0].WriteGroundTruth(w)
	}
	sum := map[string]*alpha.GroundTruth{}
	for _, m := range machines {
		if m.truth == nil {
			return fmt.Errorf("hwsim: ground truth was not collected (Config.GroundTruth)")
		}
		for path, g := range m.truth {
			if sum[path] == nil {
				sum[path] = alpha.NewGroundTruth()
			}
			sum[path].Add(g)
		}
	}
	return EncodeGroundTruth(w, sum)
}
