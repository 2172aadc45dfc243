package symbolize

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"runtime/debug"
	"strings"
	"testing"

	"dcpi/workloads"
)

// FuzzReadImageSource feeds the DWARF reader of pprof export
// (ReadImageSource: the line table and the tree of procedures and their
// inlined copies) ELF files of a real image's DWARF sections, damaged: it
// returns a source or an error, never panics or hangs; a panic inside
// debug/dwarf is recovered as an error, one in this package's own code
// fails the target; and the source answers Frames and Top anywhere, with
// no chain deeper than maxInlineDepth.
func FuzzReadImageSource(f *testing.F) {
	for _, name := range []string{"sort", "tiny"} {
		data, err := workloads.Binary(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(debugOnly(f, data))
	}
	f.Add(debugOnly(f, nil))
	f.Fuzz(func(t *testing.T, data []byte) {
		ownPanic(t, func() { _ = (&ImageSource{}).readScopes(data) })
		s, err := ReadImageSource(data)
		if s == nil {
			t.Fatalf("no source (error %v)", err)
		}
		addrs := []uint64{0, 1 << 32, ^uint64(0)}
		for i, r := range s.lines {
			if i > 64 {
				break
			}
			addrs = append(addrs, r.addr, r.addr+4)
		}
		for i, sc := range s.scopes {
			if i > 64 {
				break
			}
			for _, rg := range sc.ranges {
				addrs = append(addrs, rg[0], rg[1]-1)
			}
		}
		var out []SourceFrame
		for _, a := range addrs {
			out = s.Frames(a, out[:0])
			if len(out) > maxInlineDepth {
				t.Fatalf("%#x: %d frames", a, len(out))
			}
			if top := s.Top(a); top < -1 || int(top) >= len(s.scopes) {
				t.Fatalf("%#x: top scope %d of %d", a, top, len(s.scopes))
			}
		}
	})
}

// ownPanic runs fn; a panic is accepted only if it arose in debug/dwarf
// or debug/elf, whose panics ReadImageSource recovers by design.
func ownPanic(t *testing.T, fn func()) {
	t.Helper()
	defer func() {
		r := recover()
		if r == nil {
			return
		}
		st := string(debug.Stack())
		// The frames below the panic, innermost first: the first one
		// outside the runtime is where it arose.
		_, after, _ := strings.Cut(st, "panic(")
		for _, line := range strings.Split(after, "\n") {
			if strings.HasPrefix(line, "\t") || strings.HasPrefix(line, "runtime.") || strings.HasPrefix(line, "panic(") || line == "" {
				continue
			}
			if strings.HasPrefix(line, "debug/") {
				return
			}
			t.Fatalf("panic in %s: %v\n%s", line, r, st)
		}
	}()
	fn()
}

// debugOnly is an Alpha ELF executable holding only data's .debug_*
// sections (none when data is nil): the input FuzzReadImageSource
// mutates, a few kilobytes instead of the whole image.
func debugOnly(tb testing.TB, data []byte) []byte {
	type sec struct {
		name string
		data []byte
	}
	var secs []sec
	if data != nil {
		ef, err := elf.NewFile(bytes.NewReader(data))
		if err != nil {
			tb.Fatal(err)
		}
		for _, s := range ef.Sections {
			if strings.HasPrefix(s.Name, ".debug_") {
				b, err := s.Data()
				if err != nil {
					tb.Fatal(err)
				}
				secs = append(secs, sec{s.Name, b})
			}
		}
	}
	le := binary.LittleEndian
	out := make([]byte, 64)
	copy(out, "\x7fELF\x02\x01\x01")
	le.PutUint16(out[16:], uint16(elf.ET_EXEC))
	le.PutUint16(out[18:], uint16(elf.EM_ALPHA))
	le.PutUint32(out[20:], 1)
	le.PutUint16(out[52:], 64)
	le.PutUint16(out[54:], 56)
	le.PutUint16(out[58:], 64)
	shstr := []byte{0}
	type hdr struct{ name, typ, off, size uint64 }
	hdrs := []hdr{{}}
	for _, s := range secs {
		hdrs = append(hdrs, hdr{uint64(len(shstr)), uint64(elf.SHT_PROGBITS), uint64(len(out)), uint64(len(s.data))})
		shstr = append(append(shstr, s.name...), 0)
		out = append(out, s.data...)
	}
	hdrs = append(hdrs, hdr{uint64(len(shstr)), uint64(elf.SHT_STRTAB), uint64(len(out)), 0})
	shstr = append(append(shstr, ".shstrtab"...), 0)
	hdrs[len(hdrs)-1].size = uint64(len(shstr))
	out = append(out, shstr...)
	for len(out)%8 != 0 {
		out = append(out, 0)
	}
	le.PutUint64(out[40:], uint64(len(out)))
	le.PutUint16(out[60:], uint16(len(hdrs)))
	le.PutUint16(out[62:], uint16(len(hdrs)-1))
	for _, h := range hdrs {
		sh := make([]byte, 64)
		le.PutUint32(sh[0:], uint32(h.name))
		le.PutUint32(sh[4:], uint32(h.typ))
		le.PutUint64(sh[24:], h.off)
		le.PutUint64(sh[32:], h.size)
		le.PutUint64(sh[48:], 1)
		out = append(out, sh...)
	}
	return out
}

// TestDebugOnlyKeepsTheDWARF: the image FuzzReadImageSource mutates reads
// as the whole binary's DWARF does.
func TestDebugOnlyKeepsTheDWARF(t *testing.T) {
	data, err := workloads.Binary("sort")
	if err != nil {
		t.Fatal(err)
	}
	whole, err := ReadImageSource(data)
	if err != nil {
		t.Fatal(err)
	}
	small, err := ReadImageSource(debugOnly(t, data))
	if err != nil {
		t.Fatal(err)
	}
	if len(small.lines) == 0 || len(small.lines) != len(whole.lines) || len(small.scopes) != len(whole.scopes) || len(small.scopes) == 0 {
		t.Fatalf("%d lines and %d scopes, want %d and %d", len(small.lines), len(small.scopes), len(whole.lines), len(whole.scopes))
	}
}
