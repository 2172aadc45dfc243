package linuxhost

import (
	"encoding/binary"
	"encoding/hex"
	"testing"
)

func TestParseProcMaps(t *testing.T) {
	text := []byte(`55d0c0a00000-55d0c0a04000 r--p 00000000 08:01 131 /usr/bin/dash
55d0c0a04000-55d0c0a18000 r-xp 00004000 08:01 131 /usr/bin/dash
7f1c2c828000-7f1c2c9bd000 r-xp 00028000 08:01 200 /usr/lib/x86_64-linux-gnu/libc.so.6
7ffd8f1fe000-7ffd8f200000 r-xp 00000000 00:00 0                          [vdso]
7f1c2ca00000-7f1c2ca01000 r-xp 00000000 08:01 201 /tmp/a b
garbage
`)
	got := ParseProcMaps(text)
	want := []ProcMapping{
		{0x55d0c0a04000, 0x55d0c0a18000, 0x4000, "/usr/bin/dash"},
		{0x7f1c2c828000, 0x7f1c2c9bd000, 0x28000, "/usr/lib/x86_64-linux-gnu/libc.so.6"},
		{0x7f1c2ca00000, 0x7f1c2ca01000, 0, "/tmp/a b"},
	}
	if len(got) != len(want) {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("%d: got %+v, want %+v", i, got[i], want[i])
		}
	}
}

func TestParseKallsyms(t *testing.T) {
	syms := ParseKallsyms([]byte("ffffffff81000010 T b\nffffffff81000000 T _text\nffffffff82000000 D data\n0000000000000000 T hidden\nffffffffc0001000 t modfn\t[mod]\n"))
	if len(syms) != 3 || syms[0].Name != "_text" || syms[1].Name != "b" || syms[2].Name != "modfn" {
		t.Fatalf("got %+v", syms)
	}
}

func TestNoteBuildID(t *testing.T) {
	var b []byte
	note := func(name string, typ uint32, desc []byte) {
		b = binary.LittleEndian.AppendUint32(b, uint32(len(name)+1))
		b = binary.LittleEndian.AppendUint32(b, uint32(len(desc)))
		b = binary.LittleEndian.AppendUint32(b, typ)
		b = append(b, name...)
		b = append(b, 0)
		for len(b)%4 != 0 {
			b = append(b, 0)
		}
		b = append(b, desc...)
		for len(b)%4 != 0 {
			b = append(b, 0)
		}
	}
	note("Xen", 1, []byte{1, 2, 3})
	note("GNU", 3, []byte{0xab, 0xcd, 0xef, 0x01, 0x23})
	if got := hex.EncodeToString(noteBuildID(b, binary.LittleEndian)); got != "abcdef0123" {
		t.Fatalf("build ID %q", got)
	}
	if noteBuildID(b[:20], binary.LittleEndian) != nil {
		t.Fatal("a cut note gave an ID")
	}
}
