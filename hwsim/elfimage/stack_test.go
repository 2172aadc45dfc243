package elfimage

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
)

var testRandom = [16]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}

// TestBuildStackByHand checks one small stack against offsets worked out by
// hand from create_elf_tables.
func TestBuildStackByHand(t *testing.T) {
	aux := []Aux{{AtPagesz, 8192}, {AtRandom, 0}, {AtPlatform, 0}}
	mem, sp, err := BuildStack(0x10000, []string{"a"}, nil, aux, "ev5", testRandom, "/a")
	if err != nil {
		t.Fatal(err)
	}
	// p = 0xfff8; "/a" at 0xfff5; "a" at 0xfff3; "ev5" at 0xffef; random
	// at 0xffdf; 4 aux pairs: 0xffdf-64 = 0xff9f; 4 items: 0xff7f, rounded
	// down to 0xff70.
	if sp != 0xff70 || len(mem) != 0x90 {
		t.Fatalf("sp = %#x, len = %#x; want 0xff70, 0x90", sp, len(mem))
	}
	w := func(addr uint64) uint64 { return binary.LittleEndian.Uint64(mem[addr-sp:]) }
	want := []struct{ addr, v uint64 }{
		{0xff70, 1},      // argc
		{0xff78, 0xfff3}, // argv[0]
		{0xff80, 0},      // argv NULL
		{0xff88, 0},      // envp NULL
		{0xff90, AtPagesz}, {0xff98, 8192},
		{0xffa0, AtRandom}, {0xffa8, 0xffdf},
		{0xffb0, AtPlatform}, {0xffb8, 0xffef},
		{0xffc0, AtNull}, {0xffc8, 0},
	}
	for _, x := range want {
		if got := w(x.addr); got != x.v {
			t.Errorf("word at %#x = %#x, want %#x", x.addr, got, x.v)
		}
	}
	str := func(addr uint64, n int) string { return string(mem[addr-sp : addr-sp+uint64(n)]) }
	if !bytes.Equal(mem[0xffdf-sp:0xffef-sp], testRandom[:]) || str(0xffef, 4) != "ev5\x00" ||
		str(0xfff3, 2) != "a\x00" || str(0xfff5, 3) != "/a\x00" || str(0xfff8, 8) != strings.Repeat("\x00", 8) {
		t.Errorf("string area = %q", mem[0xffd0-sp:])
	}
	if !bytes.Equal(mem[0xffd0-sp:0xffdf-sp], make([]byte, 15)) {
		t.Errorf("alignment gap not zero: % x", mem[0xffd0-sp:0xffdf-sp])
	}
}

// TestBuildStackLayout checks the kernel's layout rules on a realistic
// stack and decodes it back.
func TestBuildStackLayout(t *testing.T) {
	im := parseFile(t, "testdata/free")
	aux := AuxVector(im, DefaultAuxParams())
	argv := []string{"/usr/bin/prog", "-x", "", "arg with spaces"}
	envp := []string{"HOME=/root", "PATH=/bin:/usr/bin", "EMPTY="}
	const top = 0x11fffe000
	for _, platform := range []string{"ev5", "ev56"} {
		mem, sp, err := BuildStack(top, argv, envp, aux, platform, testRandom, "/usr/bin/prog")
		if err != nil {
			t.Fatal(err)
		}
		if sp%16 != 0 || uint64(len(mem)) != top-sp {
			t.Fatalf("sp = %#x, len(mem) = %d", sp, len(mem))
		}
		// start.S reads argc with ldl from 0(sp) and argv at 8(sp).
		if argc := int32(binary.LittleEndian.Uint32(mem)); argc != int32(len(argv)) {
			t.Errorf("ldl 0(sp) = %d, want %d", argc, len(argv))
		}
		st, err := ParseStack(mem, sp)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(st.Argv, argv) || !slices.Equal(st.Envp, envp) || st.Argc != uint64(len(argv)) {
			t.Errorf("decoded argv %q envp %q", st.Argv, st.Envp)
		}
		if st.Platform != platform || st.ExecFn != "/usr/bin/prog" || !bytes.Equal(st.Random, testRandom[:]) {
			t.Errorf("decoded platform %q execfn %q random % x", st.Platform, st.ExecFn, st.Random)
		}
		if len(st.Auxv) != len(aux) {
			t.Fatalf("decoded %d aux entries, want %d", len(st.Auxv), len(aux))
		}
		ptrs := map[uint64]uint64{}
		for i, a := range st.Auxv {
			if a.Type != aux[i].Type {
				t.Errorf("auxv[%d] type %s, want %s", i, AuxName(a.Type), AuxName(aux[i].Type))
			}
			switch a.Type {
			case AtRandom, AtExecFn, AtPlatform:
				ptrs[a.Type] = a.Value
			default:
				if a.Value != aux[i].Value {
					t.Errorf("auxv[%d] = %v, want %v", i, a, aux[i])
				}
			}
		}
		// From the top down: 8 zero bytes, execfn, envp strings, argv
		// strings, platform, random.
		if ptrs[AtExecFn]+uint64(len("/usr/bin/prog"))+1 != top-8 {
			t.Errorf("execfn at %#x does not end 8 bytes below the top", ptrs[AtExecFn])
		}
		argv0 := binary.LittleEndian.Uint64(mem[8:])
		if ptrs[AtPlatform]+uint64(len(platform))+1 != argv0 || ptrs[AtRandom]+16 != ptrs[AtPlatform] {
			t.Errorf("platform at %#x, random at %#x, argv[0] at %#x", ptrs[AtPlatform], ptrs[AtRandom], argv0)
		}
		var strBytes uint64
		for _, s := range append(slices.Clone(argv), envp...) {
			strBytes += uint64(len(s)) + 1
		}
		if argv0+strBytes != ptrs[AtExecFn] {
			t.Errorf("argv and envp strings are not packed below execfn")
		}
		// The auxv follows envp's NULL and ends within 16 bytes of alignment
		// slack below the random bytes.
		auxEnd := sp + 8*uint64(1+len(argv)+1+len(envp)+1) + 16*uint64(len(aux)+1)
		if auxEnd > ptrs[AtRandom] || ptrs[AtRandom]-auxEnd >= 16 {
			t.Errorf("auxv ends at %#x, random at %#x", auxEnd, ptrs[AtRandom])
		}
	}
}

func TestAuxVector(t *testing.T) {
	im := parseFile(t, "testdata/free")
	p := DefaultAuxParams()
	p.UID, p.EUID, p.GID, p.EGID, p.Secure = 1000, 1001, 100, 101, true
	got := AuxVector(im, p)
	want := []Aux{
		{AtL1ICacheShape, 0x2051}, {AtL1DCacheShape, 0x2051}, {AtL2CacheShape, 0x18063}, {AtL3CacheShape, 0x200061},
		{AtHwcap, 0}, {AtPagesz, 8192}, {AtClktck, 1024},
		{AtPhdr, im.Segments[0].Vaddr + 64}, {AtPhent, 56}, {AtPhnum, 6},
		{AtBase, 0}, {AtFlags, 0}, {AtEntry, im.Entry},
		{AtUID, 1000}, {AtEUID, 1001}, {AtGID, 100}, {AtEGID, 101}, {AtSecure, 1},
		{AtRandom, 0}, {AtExecFn, 0}, {AtPlatform, 0},
	}
	if !slices.Equal(got, want) {
		t.Errorf("AuxVector =\n%v\nwant\n%v", got, want)
	}
	if CacheShape(8<<10, 32, 1) != 0x2051 || AuxName(AtL3CacheShape) != "AT_L3_CACHESHAPE" || AuxName(99) != "AT_99" {
		t.Errorf("CacheShape or AuxName wrong")
	}
}

func TestBuildStackErrors(t *testing.T) {
	aux := []Aux{{AtPlatform, 0}}
	long := strings.Repeat("x", MaxArgStrlen)
	tests := []struct {
		name     string
		top      uint64
		argv     []string
		envp     []string
		aux      []Aux
		platform string
		msg      string
	}{
		{"unaligned top", 0x10008, nil, nil, nil, "", "16-byte aligned"},
		{"NUL in argv", 0x10000, []string{"a\x00b"}, nil, nil, "", "argv[0] contains a NUL"},
		{"NUL in envp", 0x10000, nil, []string{"A=\x00"}, nil, "", "envp[0] contains a NUL"},
		{"NUL in platform", 0x10000, nil, nil, aux, "e\x00v5", "platform contains a NUL"},
		{"string too long", 1 << 40, []string{long}, nil, nil, "", "MAX_ARG_STRLEN"},
		{"too many strings", 1 << 40, slices.Repeat([]string{long[:1000]}, 3000), nil, nil, "", "E2BIG"},
		{"AT_NULL inside", 0x10000, nil, nil, []Aux{{AtNull, 0}, {AtPagesz, 1}}, "", "AT_NULL before the end"},
		{"AT_PLATFORM without string", 0x10000, nil, nil, aux, "", "AT_PLATFORM"},
		{"too many aux", 1 << 40, nil, nil, make([]Aux, 2000), "", "more than 1024"},
		{"top too low", 0x40, []string{"prog"}, nil, nil, "", "too low"},
		{"top zero", 0, nil, nil, nil, "", "too low"},
	}
	for _, tc := range tests {
		aux := tc.aux
		if tc.name == "too many aux" {
			for i := range aux {
				aux[i].Type = AtIgnore
			}
		}
		_, _, err := BuildStack(tc.top, tc.argv, tc.envp, aux, tc.platform, testRandom, "x")
		if !errors.Is(err, ErrStack) || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%s: err = %v, want ErrStack saying %q", tc.name, err, tc.msg)
		}
	}
	// A trailing AT_NULL is accepted; an empty argv becomes {""} as in Linux.
	mem, sp, err := BuildStack(0x10000, nil, nil, []Aux{{AtPagesz, 8192}, {AtNull, 0}}, "", testRandom, "")
	if err != nil {
		t.Fatal(err)
	}
	st, err := ParseStack(mem, sp)
	if err != nil || !slices.Equal(st.Argv, []string{""}) || len(st.Auxv) != 1 || st.Random != nil {
		t.Errorf("empty argv: %+v, %v", st, err)
	}
}

func TestParseStackErrors(t *testing.T) {
	mem, sp, err := BuildStack(0x10000, []string{"a", "b"}, []string{"E=1"}, []Aux{{AtRandom, 0}, {AtExecFn, 0}}, "", testRandom, "/x")
	if err != nil {
		t.Fatal(err)
	}
	put := func(b []byte, off int, v uint64) []byte {
		c := slices.Clone(b)
		binary.LittleEndian.PutUint64(c[off:], v)
		return c
	}
	tests := []struct {
		name string
		mem  []byte
		sp   uint64
		msg  string
	}{
		{"empty", nil, sp, "argc"},
		{"huge argc", put(mem, 0, 1<<40), sp, "argc"},
		{"argv outside", put(mem, 8, 0x20000), sp, "outside the stack"},
		{"argv below", put(mem, 8, sp-1), sp, "outside the stack"},
		{"no argv NULL", put(mem, 24, 0x1), sp, "NULL terminator"},
		{"truncated envp", make([]byte, 16), 0x1000, "stack ends inside envp"},
		{"truncated auxv", make([]byte, 36), 0x1000, "stack ends inside auxv"},
		{"no AT_NULL", put(make([]byte, 40), 24, AtPagesz), 0x1000, "stack ends inside auxv"},
		{"random outside", put(mem, 56, 0xfffc), sp, "AT_RANDOM"},
		{"execfn outside", put(mem, 72, 0x5), sp, "AT_EXECFN"},
		{"wraps", mem, ^uint64(0) - 8, "wraps"},
	}
	for _, tc := range tests {
		_, err := ParseStack(tc.mem, tc.sp)
		if !errors.Is(err, ErrStack) || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%s: err = %v, want ErrStack saying %q", tc.name, err, tc.msg)
		}
	}
	// A string that runs to the end of the stack without a NUL.
	m := slices.Clone(mem)
	for i := len(m) - 16; i < len(m); i++ {
		m[i] = 'x'
	}
	if _, err := ParseStack(m, sp); err == nil || !strings.Contains(err.Error(), "not NUL-terminated") {
		t.Errorf("unterminated execfn: %v", err)
	}
}

// TestAgainstQemu runs a static glibc program under qemu-alpha and compares
// the initial stack qemu's loader built with the one BuildStack builds for
// the same image, arguments and environment. qemu-user is not the kernel
// (its layout differs and it gives no cache shapes or platform), so the
// comparison is semantic: argv, envp, the image-derived auxv values, AT_EXECFN.
func TestAgainstQemu(t *testing.T) {
	qemu := needTool(t, "qemu-alpha")
	bin := buildGlibc(t, "auxdump")
	im := parseFile(t, bin)
	argv := []string{bin, "x", "two words", ""}
	envp := []string{"A=1", "BB=22", "LANG=C"}
	cmd := exec.Command(qemu, append([]string{"-cpu", "ev5", bin}, argv[1:]...)...)
	cmd.Env = envp
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("qemu-alpha: %v\n%s", err, out)
	}
	var q struct {
		argv, envp []string
		aux        []Aux
		strs       map[uint64]string
		random     string
		pagesz     string
	}
	q.strs = map[uint64]string{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		key, val, _ := strings.Cut(sc.Text(), " ")
		switch key {
		case "argv":
			q.argv = append(q.argv, val)
		case "envp":
			q.envp = append(q.envp, val)
		case "aux":
			ts, vs, _ := strings.Cut(val, " ")
			typ, _ := strconv.ParseUint(ts, 10, 64)
			v, _ := strconv.ParseUint(strings.TrimPrefix(vs, "0x"), 16, 64)
			q.aux = append(q.aux, Aux{typ, v})
		case "auxstr":
			ts, s, _ := strings.Cut(val, " ")
			typ, _ := strconv.ParseUint(ts, 10, 64)
			q.strs[typ] = s
		case "random":
			q.random = val
		case "getauxval_pagesz":
			q.pagesz = val
		}
	}

	mem, sp, err := BuildStack(0x11fffe000, argv, envp, AuxVector(im, DefaultAuxParams()), PlatformEV5, testRandom, bin)
	if err != nil {
		t.Fatal(err)
	}
	ours, err := ParseStack(mem, sp)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(q.argv, ours.Argv) {
		t.Errorf("argv: qemu %q, ours %q", q.argv, ours.Argv)
	}
	// qemu's envlist reverses the environment; the kernel keeps its order.
	if !slices.Equal(slices.Sorted(slices.Values(q.envp)), slices.Sorted(slices.Values(ours.Envp))) {
		t.Errorf("envp: qemu %q, ours %q", q.envp, ours.Envp)
	}
	if q.aux[len(q.aux)-1].Type != AtNull {
		t.Fatalf("qemu auxv not terminated: %v", q.aux)
	}
	mine := map[uint64]uint64{}
	for _, a := range ours.Auxv {
		mine[a.Type] = a.Value
	}
	var report []string
	for _, a := range q.aux[:len(q.aux)-1] {
		v, ok := mine[a.Type]
		switch a.Type {
		case AtPhdr, AtPhent, AtPhnum, AtPagesz, AtBase, AtFlags, AtEntry, AtSecure, AtHwcap:
			if !ok || v != a.Value {
				t.Errorf("%s: qemu %#x, ours %#x (present %v)", AuxName(a.Type), a.Value, v, ok)
			}
		case AtExecFn:
			if q.strs[AtExecFn] != ours.ExecFn {
				t.Errorf("AT_EXECFN: qemu %q, ours %q", q.strs[AtExecFn], ours.ExecFn)
			}
		case AtRandom:
			if len(q.random) != 32 || !ok {
				t.Errorf("AT_RANDOM: qemu %q, ours present %v", q.random, ok)
			}
		default:
			// AT_CLKTCK: qemu reports the host's 100, Linux/Alpha 1024.
			// AT_UID...: the host's ids.
			report = append(report, fmt.Sprintf("%s qemu=%#x ours=%#x", AuxName(a.Type), a.Value, v))
		}
		delete(mine, a.Type)
	}
	for typ, v := range mine {
		report = append(report, fmt.Sprintf("%s only ours=%#x", AuxName(typ), v))
	}
	slices.Sort(report)
	t.Logf("entries compared loosely or given only by us:\n  %s", strings.Join(report, "\n  "))
	if q.pagesz != "8192" {
		t.Errorf("getauxval(AT_PAGESZ) under qemu = %s", q.pagesz)
	}
}
