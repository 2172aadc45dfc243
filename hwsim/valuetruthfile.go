package hwsim

import (
	"bufio"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"

	"dcpi/hwsim/alpha"
)

// The value truth file (docs/groundtruth.md, "The value truth file"):
// value sampling's ground truth, a version line and two sections of
// tab-separated rows sorted by image and address:
//
//	[loads]  image pc dcache scache bcache memory latencies
//	[values] image pc kind total other values
//
// latencies and values are space-separated value:count pairs (cycles in
// decimal, register values in 0x hex), in order of first appearance, and
// "other:N" for the occurrences past the histogram's exact entries.

// ValueTruthVersion is the first line of a value truth file.
const ValueTruthVersion = "dcpi-value-truth v1"

const (
	sectionLoads  = "[loads]"
	sectionValues = "[values]"
	loadsHeader   = "image\tpc\tdcache\tscache\tbcache\tmemory\tlatencies"
	valuesHeader  = "image\tpc\tkind\ttotal\tother\tvalues"
)

// valueKinds are the [values] section's kinds, in the order written.
var valueKinds = []string{"result", "ra", "rb"}

func kindHistogram(v *alpha.PCValues, kind string) *alpha.Histogram {
	switch kind {
	case "result":
		return &v.Result
	case "ra":
		return &v.OperandA
	case "rb":
		return &v.OperandB
	}
	return nil
}

// EncodeValueTruth writes truth, by image path, in the value truth file
// format. Per-level latency histograms (PCValues.LevelLatency) are not
// written: the file has each load's levels and its latencies.
func EncodeValueTruth(w io.Writer, truth map[string]*alpha.ValueTruth) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintln(bw, ValueTruthVersion)
	paths := slices.Sorted(maps.Keys(truth))
	fmt.Fprintln(bw, sectionLoads)
	fmt.Fprintln(bw, loadsHeader)
	for _, path := range paths {
		g := truth[path]
		if g == nil {
			continue
		}
		for _, pc := range slices.Sorted(maps.Keys(g.PCs)) {
			v := g.PCs[pc]
			if v.Latency.Total() == 0 {
				continue
			}
			fmt.Fprintf(bw, "%s\t%#x\t%d\t%d\t%d\t%d\t%s\n", imageField(path), pc, v.Levels[0], v.Levels[1], v.Levels[2], v.Levels[3],
				histogramField(&v.Latency, "%d"))
		}
	}
	fmt.Fprintln(bw, sectionValues)
	fmt.Fprintln(bw, valuesHeader)
	for _, path := range paths {
		g := truth[path]
		if g == nil {
			continue
		}
		for _, pc := range slices.Sorted(maps.Keys(g.PCs)) {
			for _, kind := range valueKinds {
				h := kindHistogram(g.PCs[pc], kind)
				if n := h.Total(); n > 0 {
					fmt.Fprintf(bw, "%s\t%#x\t%s\t%d\t%d\t%s\n", imageField(path), pc, kind, n, h.Other, histogramField(h, "%#x"))
				}
			}
		}
	}
	return bw.Flush()
}

func histogramField(h *alpha.Histogram, format string) string {
	var b strings.Builder
	for i, e := range h.Values {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, format+":%d", e.Value, e.Count)
	}
	if h.Other > 0 {
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "other:%d", h.Other)
	}
	return b.String()
}

// WriteValueTruthOf writes the value truth of machines, summed per image
// and instruction, in the value truth file format.
func WriteValueTruthOf(w io.Writer, machines ...*Machine) error {
	sum := map[string]*alpha.ValueTruth{}
	for _, m := range machines {
		if m.values == nil {
			return fmt.Errorf("hwsim: ground truth was not collected (Config.GroundTruth)")
		}
		for path, g := range m.values {
			if sum[path] == nil {
				sum[path] = alpha.NewValueTruth()
			}
			sum[path].Add(g)
		}
	}
	return EncodeValueTruth(w, sum)
}

// ReadValueTruth reads a value truth file that EncodeValueTruth wrote,
// returning the collections by image path. Errors name the line.
func ReadValueTruth(r io.Reader) (map[string]*alpha.ValueTruth, error) {
	out := map[string]*alpha.ValueTruth{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	n, section, header := 0, "", false
	for sc.Scan() {
		n++
		line := sc.Text()
		err := func() error {
			switch {
			case n == 1:
				if line != ValueTruthVersion {
					return fmt.Errorf("not a value truth file (want %q first)", ValueTruthVersion)
				}
				return nil
			case line == sectionLoads || line == sectionValues:
				section, header = line, true
				return nil
			case header:
				want := loadsHeader
				if section == sectionValues {
					want = valuesHeader
				}
				if line != want {
					return fmt.Errorf("column names %.60q, want %q", line, want)
				}
				header = false
				return nil
			case section == "":
				return fmt.Errorf("row before any section")
			}
			f := strings.Split(line, "\t")
			if len(f) != 6+b2i(section == sectionLoads) {
				return fmt.Errorf("%d fields", len(f))
			}
			path := f[0]
			if path == "" {
				return fmt.Errorf("empty image path")
			}
			if path[0] == '"' {
				var err error
				if path, err = strconv.Unquote(path); err != nil {
					return fmt.Errorf("image %.60s: bad quoting", f[0])
				}
			}
			pc, err := strconv.ParseUint(strings.TrimPrefix(f[1], "0x"), 16, 64)
			if err != nil || !strings.HasPrefix(f[1], "0x") {
				return fmt.Errorf("address %.30q", f[1])
			}
			g := out[path]
			if g == nil {
				g = alpha.NewValueTruth()
				out[path] = g
			}
			v := g.PCs[pc]
			if v == nil {
				v = &alpha.PCValues{}
				g.PCs[pc] = v
			}
			if section == sectionLoads {
				for i := range alpha.NumLevels {
					if v.Levels[i], err = strconv.ParseUint(f[2+i], 10, 64); err != nil {
						return fmt.Errorf("level count %.30q", f[2+i])
					}
				}
				return parseHistogram(&v.Latency, f[6], 10)
			}
			h := kindHistogram(v, f[2])
			if h == nil {
				return fmt.Errorf("kind %.20q: want result, ra or rb", f[2])
			}
			if err := parseHistogram(h, f[5], 16); err != nil {
				return err
			}
			if total, err := strconv.ParseUint(f[3], 10, 64); err != nil || total != h.Total() {
				return fmt.Errorf("total %.30q: the values add up to %d", f[3], h.Total())
			}
			return nil
		}()
		if err != nil {
			return nil, fmt.Errorf("value truth line %d: %w", n, err)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if n == 0 {
		return nil, fmt.Errorf("value truth: empty file")
	}
	return out, nil
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// parseHistogram reads value:count pairs (values in base) and other:N
// into h.
func parseHistogram(h *alpha.Histogram, s string, base int) error {
	for _, pair := range strings.Fields(s) {
		k, c, ok := strings.Cut(pair, ":")
		count, err := strconv.ParseUint(c, 10, 64)
		if !ok || err != nil {
			return fmt.Errorf("histogram entry %.30q", pair)
		}
		if k == "other" {
			h.Other += count
			continue
		}
		if base == 16 {
			if !strings.HasPrefix(k, "0x") {
				return fmt.Errorf("histogram value %.30q: want 0x hex", k)
			}
			k = k[2:]
		}
		v, err := strconv.ParseUint(k, base, 64)
		if err != nil {
			return fmt.Errorf("histogram value %.30q", k)
		}
		if count == 0 {
			// EncodeValueTruth never writes one: a histogram lists the
			// values seen, each at least once.
			return fmt.Errorf("histogram entry %.30q: a value counted 0 times", pair)
		}
		if len(h.Values) >= alpha.TruthValues {
			return fmt.Errorf("more than %d values", alpha.TruthValues)
		}
		h.Values = append(h.Values, alpha.ValueCount{Value: v, Count: count})
	}
	return nil
}
