package hwsim_test

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"reflect"
	"strings"
	"testing"

	"dcpi/hwsim"
	"dcpi/hwsim/alpha"
	"dcpi/hwsim/alpha/disasm"
	"dcpi/internal/longtest"
	"dcpi/workloads"
)

// TestGroundTruthFileRoundTrip writes a real run's ground truth, reads it
// back and checks the collections are equal and write again to the same
// bytes.
func TestGroundTruthFileRoundTrip(t *testing.T) {
	m := truthRun(t, "interp", true, "1")
	var buf bytes.Buffer
	if err := m.WriteGroundTruth(&buf); err != nil {
		t.Fatal(err)
	}
	text := buf.String()
	for _, s := range []string{hwsim.GroundTruthVersion + "\n[pcs]\nimage\tpc\texecuted\thead_cycles\tstall_slot\tstall_ra\tstall_rb\tstall_imul\tstall_fdiv\tstall_icache\tstall_itb\tstall_dcache\tstall_dtb\tstall_mispredict\tstall_wbuf\tstall_barrier\tstall_pal\tcycles\t",
		"\n[edges]\nimage\tfrom\tto\tcount\n/bin/interp\t0x",
		"\n[regwaits]\nimage\tpc\treg\toperand\tproducer\tcause\tcount\tcycles\n/bin/interp\t0x"} {
		if !strings.Contains(text, s) {
			t.Errorf("the file lacks %q", s)
		}
	}
	got, err := hwsim.ReadGroundTruth(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, m.GroundTruth()) {
		t.Fatal("read back, the ground truth differs from the machine's")
	}
	var again bytes.Buffer
	if err := hwsim.EncodeGroundTruth(&again, got); err != nil {
		t.Fatal(err)
	}
	if again.String() != text {
		t.Fatal("written again, the file differs")
	}
}

// TestReadGroundTruthErrors feeds malformed files and checks the error
// names the line and what is wrong.
func TestReadGroundTruthErrors(t *testing.T) {
	var pcs bytes.Buffer
	g := alpha.NewGroundTruth()
	g.PCs[0x120000000] = &alpha.PCTruth{Executed: 3, HeadCycles: 4}
	g.Edges[alpha.Edge{From: 0x120000000, To: 0x120000010}] = 2
	g.RegWaits[alpha.RegWait{PC: 0x120000000, Producer: 0x11ffffffc, Reg: 33, Operand: alpha.OperandRb, Cause: alpha.StallDCache}] = alpha.WaitTotal{Count: 1, Cycles: 9}
	if err := hwsim.EncodeGroundTruth(&pcs, map[string]*alpha.GroundTruth{"/bin/x": g, "odd\tname": g}); err != nil {
		t.Fatal(err)
	}
	good := pcs.String()
	lines := strings.Split(strings.TrimSuffix(good, "\n"), "\n")
	if len(lines) != 13 {
		t.Fatalf("%d lines:\n%s", len(lines), good)
	}
	if got, err := hwsim.ReadGroundTruth(strings.NewReader(good)); err != nil || !reflect.DeepEqual(got["odd\tname"], g) || !reflect.DeepEqual(got["/bin/x"], g) {
		t.Fatalf("the good file: %v, %v", got, err)
	}
	with := func(n int, line string) string {
		l := append([]string{}, lines...)
		l[n-1] = line
		return strings.Join(l, "\n") + "\n"
	}
	pcRow := lines[3] // the first row of [pcs]
	for _, c := range []struct{ name, in, want string }{
		{"empty", "", "empty input"},
		{"version", with(1, "dcpi-ground-truth v1"), "line 1: not a ground truth file"},
		{"column line", with(3, "image\tpc"), "line 3: section [pcs]: column line"},
		{"row before sections", lines[0] + "\n" + pcRow + "\n", "line 2: row"},
		{"fields", with(4, pcRow+"\t1"), "line 4: 30 fields, want 29"},
		{"pc", with(4, strings.Replace(pcRow, "0x", "", 1)), "line 4: pc"},
		{"count", with(4, strings.Replace(pcRow, "\t3\t", "\t-3\t", 1)), `line 4: executed "-3"`},
		{"duplicate pc", with(5, pcRow), "line 5: pc 0x120000000 of /bin/x appears twice"},
		{"quoting", with(4, `"/bin/x`+pcRow[len("/bin/x"):]), "line 4: image"},
		{"edge", with(8, "/bin/x\t0x1\t0xg\t1"), `line 8: to "0xg"`},
		{"duplicate edge", with(9, lines[7]), "line 9: edge"},
		{"reg", with(12, strings.Replace(lines[11], "\t33\t", "\t64\t", 1)), "line 12: reg"},
		{"operand", with(12, strings.Replace(lines[11], "\trb\t", "\trc\t", 1)), "line 12: operand"},
		{"cause", with(12, strings.Replace(lines[11], "\tdcache\t", "\tdep\t", 1)), `line 12: cause "dep"`},
		{"section twice", good + "[pcs]\n", "line 14: section [pcs] appears twice"},
		{"duplicate register wait", with(13, lines[11]), "line 13: register wait /bin/x pc 0x120000000 reg 33 rb"},
		{"long line", lines[0] + "\n" + strings.Repeat("x", 2<<20), "line 2: bufio.Scanner: token too long"},
		{"truncated", strings.Join(lines[:2], "\n"), "line 2: section [pcs] has no column line"},
	} {
		_, err := hwsim.ReadGroundTruth(strings.NewReader(c.in))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one with %q", c.name, err, c.want)
		}
	}
}

// FuzzReadGroundTruth checks that no input makes ReadGroundTruth panic and
// that whatever it accepts writes out and reads back the same.
func FuzzReadGroundTruth(f *testing.F) {
	g := alpha.NewGroundTruth()
	g.PCs[0x120000000] = &alpha.PCTruth{Executed: 3, HeadCycles: 4, Stall: [alpha.NumStallCauses]uint64{1, 2}}
	g.Edges[alpha.Edge{From: 0x120000000, To: 0x120000010}] = 2
	g.RegWaits[alpha.RegWait{PC: 0x120000000, Producer: 0x11ffffffc, Reg: 33, Operand: alpha.OperandRb, Cause: alpha.StallDCache}] = alpha.WaitTotal{Count: 1, Cycles: 9}
	var seed bytes.Buffer
	if err := hwsim.EncodeGroundTruth(&seed, map[string]*alpha.GroundTruth{"/bin/x": g, "/vmunix": g}); err != nil {
		f.Fatal(err)
	}
	f.Add(seed.String())
	f.Add(hwsim.GroundTruthVersion + "\n[edges]\nimage\tfrom\tto\tcount\n\"a\\tb\"\t0x0\t0x8\t1\n")
	f.Add("")
	f.Fuzz(func(t *testing.T, in string) {
		got, err := hwsim.ReadGroundTruth(strings.NewReader(in))
		if err != nil {
			return
		}
		var out bytes.Buffer
		if err := hwsim.EncodeGroundTruth(&out, got); err != nil {
			t.Fatal(err)
		}
		back, err := hwsim.ReadGroundTruth(bytes.NewReader(out.Bytes()))
		if err != nil {
			t.Fatalf("reading what was written: %v\n%s", err, out.String())
		}
		// Images with no rows are not written.
		for p, g := range got {
			if len(g.PCs) == 0 && len(g.Edges) == 0 && len(g.RegWaits) == 0 {
				delete(got, p)
			}
		}
		if !reflect.DeepEqual(got, back) {
			t.Fatalf("read, written and read again, the ground truth differs:\n%s", out.String())
		}
		var again bytes.Buffer
		if err := hwsim.EncodeGroundTruth(&again, back); err != nil || again.String() != out.String() {
			t.Fatalf("written twice, the file differs: %v", err)
		}
	})
}

// textWords returns the instruction words of an ELF image's executable
// segments by address.
func textWords(t *testing.T, image []byte) map[uint64]uint32 {
	t.Helper()
	f, err := elf.NewFile(bytes.NewReader(image))
	if err != nil {
		t.Fatal(err)
	}
	words := map[uint64]uint32{}
	for _, p := range f.Progs {
		if p.Type != elf.PT_LOAD || p.Flags&elf.PF_X == 0 {
			continue
		}
		data := make([]byte, p.Filesz)
		if _, err := p.ReadAt(data, 0); err != nil {
			t.Fatal(err)
		}
		for i := 0; i+4 <= len(data); i += 4 {
			words[p.Vaddr+uint64(i)] = binary.LittleEndian.Uint32(data[i:])
		}
	}
	return words
}

// TestGroundTruthEdgesConsistent checks the edge counts of real runs
// against the executions: a transfer leaves only from a control-transfer
// instruction, a conditional branch or BR/BSR only to its target, never
// more often than the instruction executed, and a BR every time it
// executes unless its target is the next instruction (br gp,.+4 loads the
// PC: a transfer to pc+4 is not recorded, as it is a fall-through's next
// PC); and at every instruction the transfers into it plus the
// fall-throughs of the one before (its executions less its transfers,
// which for a jump are its jumps to the next instruction) are its
// executions: so for a conditional branch, taken (its transfers) plus not
// taken is its executions, and a block's incoming edges add up to its
// executions. The exceptions are the instruction after a CALL_PAL
// (a CALL_PAL that enters the kernel, callsys above all, is not counted as
// executed: the kernel returns to the next instruction) and the entry
// point (entered from the kernel at exec).
func TestGroundTruthEdgesConsistent(t *testing.T) {
	for _, c := range []struct {
		name     string
		profiled bool
		args     []string
	}{
		{"interp", true, []string{"1"}},
		{"recurse", false, []string{"1"}},
		{"sort", true, []string{"5000"}},
		{"hashdb", false, []string{"5000", "20000"}},
	} {
		if !longtest.Keep(c.name, "hashdb", "recurse", "sort") { // CI: interp's edges with DCPI_LONG=1
			continue
		}
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			image, err := workloads.Binary(c.name)
			if err != nil {
				t.Fatal(err)
			}
			ef, err := elf.NewFile(bytes.NewReader(image))
			if err != nil {
				t.Fatal(err)
			}
			words := textWords(t, image)
			m := truthRun(t, c.name, c.profiled, c.args...)
			g := m.GroundTruth()["/bin/"+c.name]
			if g == nil || len(g.Edges) == 0 {
				t.Fatal("no edges")
			}
			decode := func(pc uint64) (alpha.Decoded, alpha.IssueClass) {
				w, ok := words[pc]
				if !ok {
					t.Fatalf("%#x is not in the text", pc)
				}
				d := alpha.Decode(w, alpha.EV5)
				return d, alpha.ClassOf(d.Op)
			}
			out := map[uint64]uint64{}
			in := map[uint64]uint64{}
			for e, n := range g.Edges {
				out[e.From] += n
				in[e.To] += n
				d, cl := decode(e.From)
				if !cl.Branch && !cl.Jump && d.Op != alpha.OpBR {
					t.Errorf("edge %#x -> %#x from %v, not a control transfer", e.From, e.To, d.Op)
				}
				if (cl.Branch || d.Op == alpha.OpBR) && e.To != e.From+4+uint64(d.Imm) {
					t.Errorf("edge %#x -> %#x: the branch's target is %#x", e.From, e.To, e.From+4+uint64(d.Imm))
				}
				if e.To == e.From+4 {
					t.Errorf("edge %#x -> %#x is a fall-through", e.From, e.To)
				}
			}
			var branches, checked, afterPAL int
			for pc, tr := range g.PCs {
				if tr.Executed == 0 {
					continue
				}
				d, cl := decode(pc)
				switch {
				case out[pc] > tr.Executed:
					t.Errorf("%#x %v: %d transfers in %d executions", pc, d.Op, out[pc], tr.Executed)
				case d.Op == alpha.OpBR && (out[pc] == tr.Executed) != (d.Imm != 0):
					t.Errorf("%#x %s: %d transfers in %d executions of an unconditional transfer", pc, disasm.Insn(words[pc], pc, nil), out[pc], tr.Executed)
				case cl.Branch:
					branches++ // taken = out[pc], not taken = Executed - out[pc]
				}
				fall := uint64(0)
				if _, ok := words[pc-4]; ok {
					pd, _ := decode(pc - 4)
					if pd.Op == alpha.OpCallPal {
						afterPAL++
						continue
					}
					if p := g.PCs[pc-4]; p != nil {
						fall = p.Executed - out[pc-4]
					}
				}
				if pc == ef.Entry {
					continue
				}
				checked++
				if got := in[pc] + fall; got != tr.Executed {
					t.Errorf("%#x %s: %d transfers in and %d fall-throughs, %d executions", pc, disasm.Insn(words[pc], pc, nil), in[pc], fall, tr.Executed)
				}
			}
			if branches < 20 || checked < 500 {
				t.Fatalf("only %d branches and %d instructions checked", branches, checked)
			}
			t.Logf("%d edges, %d conditional branches, %d instructions checked, %d after a CALL_PAL left out", len(g.Edges), branches, checked, afterPAL)
		})
	}
}
