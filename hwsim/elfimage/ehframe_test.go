package elfimage

import (
	"bufio"
	"bytes"
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// readelfFrames runs binutils' interpreter of call frame information on
// path and returns, per FDE start, its rows: address -> "CFA|FP|RA" in
// readelf's notation ("r30+32|c-24|c-32"; "u" for an unspecified rule).
func readelfFrames(t *testing.T, path string) map[uint64]map[uint64]string {
	t.Helper()
	tool, err := exec.LookPath("alpha-linux-gnu-readelf")
	if err != nil {
		t.Skip("alpha-linux-gnu-readelf not installed")
	}
	out, err := exec.Command(tool, "--debug-dump=frames-interp", path).Output()
	if err != nil {
		t.Fatal(err)
	}
	fdes := map[uint64]map[uint64]string{}
	var rows map[uint64]string
	var cols []string
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		switch {
		case len(f) >= 4 && f[3] == "FDE":
			pc := strings.TrimPrefix(f[5], "pc=")
			start, err := strconv.ParseUint(strings.Split(pc, "..")[0], 16, 64)
			if err != nil {
				t.Fatal(err)
			}
			rows = map[uint64]string{}
			fdes[start] = rows
		case len(f) >= 4 && f[3] == "CIE":
			rows = nil
		case len(f) >= 2 && f[0] == "LOC":
			cols = f
		case rows != nil && len(f) == len(cols) && len(f) >= 2:
			addr, err := strconv.ParseUint(f[0], 16, 64)
			if err != nil {
				continue
			}
			fp, ra := "u", "u"
			for i, c := range cols {
				switch c {
				case "r15":
					fp = f[i]
				case "ra":
					ra = f[i]
				}
			}
			rows[addr] = f[1] + "|" + fp + "|" + ra
		}
	}
	return fdes
}

func ruleString(r RegRule) string {
	switch r.Kind {
	case RuleSame:
		return "u"
	case RuleOffset:
		if r.Offset >= 0 {
			return "c+" + strconv.FormatInt(r.Offset, 10)
		}
		return "c" + strconv.FormatInt(r.Offset, 10)
	case RuleUndefined:
		return "undefined"
	}
	return "?"
}

// TestFrameInfoMatchesReadelf decodes the workloads' .eh_frame and checks
// every FDE's rows against binutils' own interpretation.
func TestFrameInfoMatchesReadelf(t *testing.T) {
	for _, name := range []string{"recurse", "interp", "ccdriver", "free"} {
		path := "../../workloads/bin/" + name
		if name == "free" {
			path = "testdata/free"
		}
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			want := readelfFrames(t, path)
			im, err := Parse(data, path)
			if err != nil {
				t.Fatal(err)
			}
			fdes, err := im.FrameInfo()
			if err != nil {
				t.Fatal(err)
			}
			if len(fdes) != len(want) || len(fdes) == 0 {
				t.Fatalf("%d FDEs, readelf shows %d", len(fdes), len(want))
			}
			rows := 0
			for _, fde := range fdes {
				w, ok := want[fde.Start]
				if !ok {
					t.Fatalf("FDE at %#x: readelf has none", fde.Start)
				}
				got := map[uint64]string{}
				for _, r := range fde.Rows {
					cfa := "r" + strconv.Itoa(int(r.CFA.Reg)) + "+" + strconv.FormatInt(r.CFA.Offset, 10)
					fp, ra := ruleString(r.FP), ruleString(r.RA)
					if fde.RAColumn == 15 {
						ra = "u" // readelf has no "ra" column for _start's CIE
					}
					got[r.Addr] = cfa + "|" + fp + "|" + ra
				}
				// readelf prints a row per advance, including ones that
				// change nothing; every one must be ours at that address
				// or our row before it.
				for addr, s := range w {
					g, ok := got[addr]
					if !ok {
						g = rowAt(fde, addr)
					}
					if g != s {
						t.Errorf("FDE %#x row %#x: got %s, readelf %s", fde.Start, addr, g, s)
					}
					rows++
				}
			}
			t.Logf("%d FDEs, %d rows agree with readelf", len(fdes), rows)
		})
	}
}

func rowAt(fde FDE, addr uint64) string {
	var r *FrameRow
	for i := range fde.Rows {
		if fde.Rows[i].Addr <= addr {
			r = &fde.Rows[i]
		}
	}
	if r == nil {
		return "none"
	}
	cfa := "r" + strconv.Itoa(int(r.CFA.Reg)) + "+" + strconv.FormatInt(r.CFA.Offset, 10)
	ra := ruleString(r.RA)
	if fde.RAColumn == 15 {
		ra = "u"
	}
	return cfa + "|" + ruleString(r.FP) + "|" + ra
}

// TestEHFrameMalformed: damaged call frame information is an
// ErrMalformed error, never a panic.
func TestEHFrameMalformed(t *testing.T) {
	data, err := os.ReadFile("../../workloads/bin/recurse")
	if err != nil {
		t.Skip(err)
	}
	im, err := Parse(data, "recurse")
	if err != nil {
		t.Fatal(err)
	}
	sec := ehFrameBytes(t, im)
	cases := map[string][]byte{
		"truncated length":   sec[:2],
		"length past end":    append([]byte{0xff, 0xff, 0, 0}, sec[4:40]...),
		"cie pointer before": append(append([]byte(nil), sec[:0x14]...), 0x10, 0, 0, 0, 0xff, 0xff, 0xff, 0x7f, 0, 0, 0, 0),
		"bad version":        func() []byte { b := bytes.Clone(sec); b[8] = 9; return b }(),
	}
	for name, b := range cases {
		if _, err := ParseEHFrame(b, 0x120000000, "x"); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: err %v, want ErrMalformed", name, err)
		}
	}
}

func ehFrameBytes(t testing.TB, im *Image) []byte {
	for _, s := range im.Sections {
		if s.Name == ".eh_frame" {
			for _, seg := range im.Segments {
				if seg.Contains(s.Addr) {
					return seg.Data[s.Addr-seg.Vaddr : s.Addr-seg.Vaddr+s.Size]
				}
			}
		}
	}
	t.Fatal("no .eh_frame")
	return nil
}

func FuzzParseEHFrame(f *testing.F) {
	if data, err := os.ReadFile("testdata/free"); err == nil {
		if im, err := Parse(data, "free"); err == nil {
			sec := ehFrameBytes(f, im)
			f.Add(sec)
			f.Add(sec[:len(sec)/2])
		}
	}
	f.Add([]byte{})
	f.Add([]byte{8, 0, 0, 0, 0, 0, 0, 0, 1, 0, 4, 0x78})
	f.Fuzz(func(t *testing.T, b []byte) {
		fdes, err := ParseEHFrame(b, 0x120000000, "fuzz")
		if err != nil {
			if !errors.Is(err, ErrMalformed) || strings.Contains(err.Error(), "internal error") {
				t.Fatalf("error %v", err)
			}
			return
		}
		for _, fde := range fdes {
			if fde.End <= fde.Start {
				t.Fatalf("empty FDE kept: %+v", fde)
			}
			for i, r := range fde.Rows {
				if r.Addr < fde.Start || r.Addr >= fde.End || i > 0 && r.Addr <= fde.Rows[i-1].Addr {
					t.Fatalf("FDE [%#x, %#x): row %d at %#x", fde.Start, fde.End, i, r.Addr)
				}
			}
		}
	})
}
