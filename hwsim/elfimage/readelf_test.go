package elfimage

// Parsers for the text binutils prints, so tests can compare Parse with
// alpha-linux-gnu-readelf and alpha-linux-gnu-objdump.

import (
	"bufio"
	"bytes"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

type readelfPhdr struct {
	typ                              string
	off, vaddr, filesz, memsz, align uint64
	flags                            string // "R E", "RW ", ...
}

type readelfSym struct {
	num   int
	value uint64
	size  uint64
	typ   string // FUNC, OBJECT, NOTYPE, ...
	bind  string // LOCAL, GLOBAL, WEAK
	ndx   string // "UND", "ABS", or a section number
	name  string
}

type readelfOut struct {
	entry   uint64
	phdrs   []readelfPhdr
	syms    []readelfSym
	buildID string
}

var (
	reEntry   = regexp.MustCompile(`(?m)^\s*Entry point(?: address:)?\s+0x([0-9a-f]+)`)
	rePhdr    = regexp.MustCompile(`^\s+(\w+)\s+0x([0-9a-f]+)\s+0x([0-9a-f]+)\s+0x([0-9a-f]+)\s+0x([0-9a-f]+)\s+0x([0-9a-f]+)\s+([RWE ]{3})\s+0x([0-9a-f]+)$`)
	reSym     = regexp.MustCompile(`^\s*(\d+):\s+([0-9a-f]+)\s+(0x[0-9a-f]+|\d+)\s+(\w+)\s+(\w+)\s+(\w+)\s+(?:\[[^\]]*\]\s+)?(\w+)\s?(.*)$`)
	reBuildID = regexp.MustCompile(`Build ID: ([0-9a-f]+)`)
)

func hexU(t testing.TB, s string) uint64 {
	t.Helper()
	v, err := strconv.ParseUint(strings.TrimPrefix(s, "0x"), 16, 64)
	if err != nil {
		t.Fatalf("bad hex %q: %v", s, err)
	}
	return v
}

// parseReadelf reads the output of readelf -lsnW (with or without -hS).
func parseReadelf(t testing.TB, out []byte) readelfOut {
	t.Helper()
	var r readelfOut
	m := reEntry.FindSubmatch(out)
	if m == nil {
		t.Fatalf("readelf output has no entry point")
	}
	r.entry = hexU(t, string(m[1]))
	if m := reBuildID.FindSubmatch(out); m != nil {
		r.buildID = string(m[1])
	}
	inPhdrs, inSyms := false, false
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "Program Headers:"):
			inPhdrs, inSyms = true, false
			continue
		case strings.HasPrefix(line, "Symbol table '.symtab'"):
			inPhdrs, inSyms = false, true
			continue
		case strings.TrimSpace(line) == "":
			inPhdrs, inSyms = false, false
			continue
		}
		if inPhdrs {
			if m := rePhdr.FindStringSubmatch(line); m != nil {
				r.phdrs = append(r.phdrs, readelfPhdr{
					typ: m[1], off: hexU(t, m[2]), vaddr: hexU(t, m[3]),
					filesz: hexU(t, m[5]), memsz: hexU(t, m[6]), flags: m[7], align: hexU(t, m[8]),
				})
			}
		}
		if inSyms {
			m := reSym.FindStringSubmatch(line)
			if m == nil {
				continue
			}
			num, _ := strconv.Atoi(m[1])
			var size uint64
			if strings.HasPrefix(m[3], "0x") {
				size = hexU(t, m[3])
			} else {
				size, _ = strconv.ParseUint(m[3], 10, 64)
			}
			r.syms = append(r.syms, readelfSym{
				num: num, value: hexU(t, m[2]), size: size, typ: m[4], bind: m[5], ndx: m[7], name: m[8],
			})
		}
	}
	if len(r.phdrs) == 0 || len(r.syms) == 0 {
		t.Fatalf("readelf output parsed to %d program headers and %d symbols", len(r.phdrs), len(r.syms))
	}
	return r
}

// objdumpRef is one place where objdump -d printed <name> or <name+0xoff>.
type objdumpRef struct {
	addr   uint64
	name   string
	offset uint64
	header bool   // a "<name>:" heading, not an operand
	from   uint64 // for an operand, the address of its instruction
	line   string
}

var (
	reDisHeader = regexp.MustCompile(`^([0-9a-f]+) <(.+)>:$`)
	reDisInsn   = regexp.MustCompile(`^\s*([0-9a-f]+):\t`)
	reDisRef    = regexp.MustCompile(`\b([0-9a-f]{6,}) <([^>]+?)(?:\+0x([0-9a-f]+))?>`)
)

// parseObjdump returns every symbolized address in objdump -d output: the
// headers ("0000000120000170 <sum>:") and the operands ("120000254 <sum+0x34>").
func parseObjdump(t testing.TB, out []byte) []objdumpRef {
	t.Helper()
	var refs []objdumpRef
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if m := reDisHeader.FindStringSubmatch(line); m != nil {
			refs = append(refs, objdumpRef{addr: hexU(t, m[1]), name: m[2], header: true, line: line})
			continue
		}
		// Instruction lines: "   120000150:\tbytes \tmnemonic\toperands".
		im := reDisInsn.FindStringSubmatch(line)
		tab := strings.LastIndexByte(line, '\t')
		if im == nil || tab < 0 {
			continue
		}
		for _, m := range reDisRef.FindAllStringSubmatch(line[tab:], -1) {
			r := objdumpRef{addr: hexU(t, m[1]), name: m[2], from: hexU(t, im[1]), line: line}
			if m[3] != "" {
				r.offset = hexU(t, m[3])
			}
			refs = append(refs, r)
		}
	}
	if len(refs) == 0 {
		t.Fatalf("objdump output has no symbolized addresses")
	}
	return refs
}
