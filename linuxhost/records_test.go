package linuxhost

import (
	"encoding/binary"
	"errors"
	"slices"
	"testing"
)

// rec builds a record: header, then the fields (uint64, uint32, []byte
// padded, string as a NUL-terminated padded name).
func rec(typ uint32, misc uint16, fields ...any) []byte {
	b := make([]byte, 8)
	for _, f := range fields {
		switch v := f.(type) {
		case uint64:
			b = binary.LittleEndian.AppendUint64(b, v)
		case uint32:
			b = binary.LittleEndian.AppendUint32(b, v)
		case []byte:
			b = append(b, v...)
		case string:
			b = append(b, v...)
			b = append(b, 0)
			for len(b)%8 != 0 {
				b = append(b, 0)
			}
		}
	}
	binary.LittleEndian.PutUint32(b, typ)
	binary.LittleEndian.PutUint16(b[4:], misc)
	binary.LittleEndian.PutUint16(b[6:], uint16(len(b)))
	return b
}

// trailer is sample_id_all's TID, TIME, CPU.
func trailer(pid, tid uint32, time uint64, cpu uint32) []any {
	return []any{pid, tid, time, cpu, uint32(0)}
}

const ctxUser = ^uint64(0) - 511 // PERF_CONTEXT_USER

func seeds() [][]byte {
	return [][]byte{
		rec(recordSample, miscUser, uint64(0x401136), uint32(42), uint32(43), uint64(1000), uint32(1), uint32(0),
			uint64(1_001_001), uint64(3), ctxUser, uint64(0x401136), uint64(0x401200)),
		rec(recordMmap2, miscMmapBuildID, append([]any{uint32(42), uint32(42), uint64(0x400000), uint64(0x2000), uint64(0x1000),
			[]byte{4, 0, 0, 0}, []byte{0xde, 0xad, 0xbe, 0xef, 16: 0, 19: 0}, uint32(5), uint32(2), "/bin/hot"}, trailer(42, 42, 900, 0)...)...),
		rec(recordMmap2, 0, append([]any{uint32(7), uint32(7), uint64(0x7f0000000000), uint64(0x1000), uint64(0),
			make([]byte, 24), uint32(5), uint32(2), "/lib/x86_64-linux-gnu/libc.so.6"}, trailer(7, 7, 901, 1)...)...),
		rec(recordComm, miscCommExec, append([]any{uint32(42), uint32(42), "hot"}, trailer(42, 42, 950, 0)...)...),
		rec(recordFork, 0, append([]any{uint32(44), uint32(42), uint32(44), uint32(42), uint64(960)}, trailer(44, 44, 960, 1)...)...),
		rec(recordExit, 0, append([]any{uint32(44), uint32(42), uint32(44), uint32(42), uint64(970)}, trailer(44, 44, 970, 1)...)...),
		rec(recordLost, 0, append([]any{uint64(9), uint64(17)}, trailer(0, 0, 980, 0)...)...),
		rec(recordThrottle, 0, uint64(1), uint64(2), uint64(3)),
	}
}

// amd64Layout is x86-64's stack layout: rbp, rsp, rip.
var amd64Layout = Layout{Regs: 1<<6 | 1<<7 | 1<<8}

// stackSeeds are samples of amd64Layout: a user sample with its
// registers and 32 bytes of stack, 24 filled; a kernel thread's (ABI 0,
// no registers, no stack); a user stack the kernel could not copy (size
// 0: no data, no dyn_size).
func stackSeeds() [][]byte {
	head := []any{uint64(0x401136), uint32(42), uint32(43), uint64(1000), uint32(1), uint32(0), uint64(1_001_001)}
	stack := make([]byte, 32)
	binary.LittleEndian.PutUint64(stack, 0x401200)
	return [][]byte{
		rec(recordSample, miscUser, append(head, uint64(0), uint64(2), uint64(0x7ffc0010), uint64(0x7ffc0000), uint64(0x401136),
			uint64(32), stack, uint64(24))...),
		rec(recordSample, miscKernel, append(head, uint64(2), ctxKernel, uint64(0xffffffff81000010), uint64(0), uint64(0))...),
		rec(recordSample, miscUser, append(head, uint64(0), uint64(2), uint64(1), uint64(2), uint64(3), uint64(0))...),
	}
}

const ctxKernel = ^uint64(0) - 127 // PERF_CONTEXT_KERNEL

func TestParseLayout(t *testing.T) {
	s := stackSeeds()
	r, err := ParseLayout(s[0], amd64Layout)
	if err != nil {
		t.Fatal(err)
	}
	if r.UserABI != 2 || r.Regs[0] != 0x7ffc0010 || r.Regs[1] != 0x7ffc0000 || r.Regs[2] != 0x401136 || len(r.Stack) != 24 ||
		binary.LittleEndian.Uint64(r.Stack) != 0x401200 || len(r.Chain) != 0 || r.Period != 1_001_001 {
		t.Errorf("user sample: %+v", r)
	}
	r, err = ParseLayout(s[1], amd64Layout)
	if err != nil || r.UserABI != 0 || r.Stack != nil || !slices.Equal(r.Chain, []uint64{0xffffffff81000010}) || !r.Kernel {
		t.Errorf("kernel thread: %+v, %v", r, err)
	}
	r, err = ParseLayout(s[2], amd64Layout)
	if err != nil || r.UserABI != 2 || r.Regs[2] != 3 || r.Stack != nil {
		t.Errorf("no stack copied: %+v, %v", r, err)
	}
	// A filled size beyond the copy, a copy beyond the record, a cut
	// record: refused.
	bad := slices.Clone(s[0])
	binary.LittleEndian.PutUint64(bad[len(bad)-8:], 40)
	cut := slices.Clone(s[0][:len(s[0])-16])
	binary.LittleEndian.PutUint16(cut[6:], uint16(len(cut)))
	big := slices.Clone(s[0])
	binary.LittleEndian.PutUint64(big[len(big)-48:], 1<<20)
	for i, b := range [][]byte{bad, cut, big} {
		if _, err := ParseLayout(b, amd64Layout); !errors.Is(err, ErrRecord) {
			t.Errorf("malformed %d: %v, want ErrRecord", i, err)
		}
	}
	// The plain layout reads the same sample without the user context.
	if r, err := Parse(s[2]); err != nil || r.UserABI != 0 || r.IP != 0x401136 {
		t.Errorf("plain parse: %+v, %v", r, err)
	}
}

func TestParse(t *testing.T) {
	s := seeds()
	tests := []struct {
		b    []byte
		want Record
	}{
		{s[0], Record{Kind: KindSample, PID: 42, TID: 43, Time: 1000, CPU: 1, IP: 0x401136, Period: 1_001_001, Chain: []uint64{0x401136, 0x401200}}},
		{s[1], Record{Kind: KindMmap, PID: 42, TID: 42, Time: 900, Addr: 0x400000, Len: 0x2000, PgOff: 0x1000, BuildID: []byte{0xde, 0xad, 0xbe, 0xef}, File: "/bin/hot"}},
		{s[2], Record{Kind: KindMmap, PID: 7, TID: 7, Time: 901, CPU: 1, Addr: 0x7f0000000000, Len: 0x1000, File: "/lib/x86_64-linux-gnu/libc.so.6"}},
		{s[3], Record{Kind: KindComm, PID: 42, TID: 42, Time: 950, Comm: "hot", Exec: true}},
		{s[4], Record{Kind: KindFork, PID: 44, PPID: 42, TID: 44, PTID: 42, Time: 960, CPU: 1}},
		{s[5], Record{Kind: KindExit, PID: 44, PPID: 42, TID: 44, PTID: 42, Time: 970, CPU: 1}},
		{s[6], Record{Kind: KindLost, Time: 980, Lost: 17}},
	}
	for i, tt := range tests {
		got, err := Parse(tt.b)
		if err != nil {
			t.Fatalf("%d: %v", i, err)
		}
		if got.Kind != tt.want.Kind || got.PID != tt.want.PID || got.TID != tt.want.TID || got.Time != tt.want.Time ||
			got.CPU != tt.want.CPU || got.IP != tt.want.IP || got.Period != tt.want.Period || !slices.Equal(got.Chain, tt.want.Chain) ||
			got.PPID != tt.want.PPID || got.Comm != tt.want.Comm || got.Exec != tt.want.Exec || got.Addr != tt.want.Addr ||
			got.Len != tt.want.Len || got.PgOff != tt.want.PgOff || string(got.BuildID) != string(tt.want.BuildID) ||
			got.File != tt.want.File || got.Lost != tt.want.Lost {
			t.Errorf("%d: got %+v, want %+v", i, got, tt.want)
		}
	}
}

func TestParseRefusesTruncated(t *testing.T) {
	for i, b := range seeds()[:6] {
		short := append([]byte(nil), b[:16]...)
		binary.LittleEndian.PutUint16(short[6:], 16)
		if _, err := Parse(short); !errors.Is(err, ErrRecord) {
			t.Errorf("seed %d cut to 16 bytes: err %v, want ErrRecord", i, err)
		}
	}
}

func TestSplit(t *testing.T) {
	var all []byte
	for _, b := range seeds() {
		all = append(all, b...)
	}
	n := 0
	used, err := Split(all, func([]byte) { n++ })
	if err != nil || used != len(all) || n != len(seeds()) {
		t.Fatalf("Split: %d records, %d of %d bytes, %v", n, used, len(all), err)
	}
	if _, err := Split(all[:len(all)-8], func([]byte) {}); !errors.Is(err, ErrRecord) {
		t.Errorf("Split of a cut run: %v, want ErrRecord", err)
	}
}

// FuzzParse: no input from the kernel's ring makes the decoder panic, in
// the plain layout or with user registers and stacks, and what it
// accepts keeps its call chain and stack copy within the record.
func FuzzParse(f *testing.F) {
	for _, b := range append(seeds(), stackSeeds()...) {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		Split(b, func(r []byte) {
			for _, l := range []Layout{{}, amd64Layout} {
				rec, err := ParseLayout(r, l)
				if err == nil && (len(rec.Chain)*8+len(rec.Stack) > len(r) || (l.Regs == 0 && (rec.Stack != nil || rec.UserABI != 0))) {
					t.Fatalf("chain of %d frames and %d bytes of stack from %d bytes", len(rec.Chain), len(rec.Stack), len(r))
				}
			}
		})
		Parse(b)
	})
}
