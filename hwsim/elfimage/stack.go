package elfimage

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/bits"
	"strings"
)

// The initial process stack of Linux/Alpha, built as the kernel builds it
// (fs/exec.c do_execveat_common and fs/binfmt_elf.c create_elf_tables, with
// arch/alpha/include/asm/elf.h), from the top (highest address) down:
//
//	top-8      8 zero bytes                  (bprm->p starts one pointer below the top)
//	           execfn string, NUL            (AT_EXECFN points here)
//	           envp strings, envp[0] lowest
//	           argv strings, argv[0] lowest
//	           platform string, NUL          (AT_PLATFORM; arch_align_stack is the identity on Alpha)
//	           16 random bytes               (AT_RANDOM; not aligned)
//	           padding down to 16-byte alignment
//	           auxv pairs, AT_NULL pair
//	           NULL
//	           envp[] pointers
//	           NULL
//	           argv[] pointers
//	sp ->      argc (8 bytes; glibc's start.S reads it with ldl)
//
// sp is 16-byte aligned: the kernel reserves room for the auxv and the
// argc/argv/envp words below the random bytes and rounds that address down
// (STACK_ROUND), so the gap sits between the auxv and the random bytes.

// Auxiliary vector entry types (Linux include/uapi/linux/auxvec.h and
// arch/alpha/include/uapi/asm/auxvec.h).
const (
	AtNull          = 0
	AtIgnore        = 1
	AtExecFD        = 2
	AtPhdr          = 3
	AtPhent         = 4
	AtPhnum         = 5
	AtPagesz        = 6
	AtBase          = 7
	AtFlags         = 8
	AtEntry         = 9
	AtNotELF        = 10
	AtUID           = 11
	AtEUID          = 12
	AtGID           = 13
	AtEGID          = 14
	AtPlatform      = 15
	AtHwcap         = 16
	AtClktck        = 17
	AtSecure        = 23
	AtBasePlatform  = 24
	AtRandom        = 25
	AtHwcap2        = 26
	AtExecFn        = 31
	AtL1ICacheShape = 34
	AtL1DCacheShape = 35
	AtL2CacheShape  = 36
	AtL3CacheShape  = 37
)

var auxNames = map[uint64]string{
	AtNull: "AT_NULL", AtIgnore: "AT_IGNORE", AtExecFD: "AT_EXECFD", AtPhdr: "AT_PHDR",
	AtPhent: "AT_PHENT", AtPhnum: "AT_PHNUM", AtPagesz: "AT_PAGESZ", AtBase: "AT_BASE",
	AtFlags: "AT_FLAGS", AtEntry: "AT_ENTRY", AtNotELF: "AT_NOTELF", AtUID: "AT_UID",
	AtEUID: "AT_EUID", AtGID: "AT_GID", AtEGID: "AT_EGID", AtPlatform: "AT_PLATFORM",
	AtHwcap: "AT_HWCAP", AtClktck: "AT_CLKTCK", AtSecure: "AT_SECURE",
	AtBasePlatform: "AT_BASE_PLATFORM", AtRandom: "AT_RANDOM", AtHwcap2: "AT_HWCAP2",
	AtExecFn: "AT_EXECFN", AtL1ICacheShape: "AT_L1I_CACHESHAPE",
	AtL1DCacheShape: "AT_L1D_CACHESHAPE", AtL2CacheShape: "AT_L2_CACHESHAPE",
	AtL3CacheShape: "AT_L3_CACHESHAPE",
}

// AuxName returns the kernel's name for an auxv type ("AT_PHDR").
func AuxName(t uint64) string {
	if n, ok := auxNames[t]; ok {
		return n
	}
	return fmt.Sprintf("AT_%d", t)
}

// Linux/Alpha constants for the initial stack.
const (
	PageSize   = 8192 // ELF_EXEC_PAGESIZE (arch/alpha/include/asm/elf.h)
	ClockTicks = 1024 // AT_CLKTCK = CLOCKS_PER_SEC = USER_HZ on Alpha
	// PlatformEV5 is the AT_PLATFORM string the kernel gives on a 21164:
	// implver EV5 without BWX (arch/alpha/include/asm/elf.h ELF_PLATFORM).
	PlatformEV5 = "ev5"

	// MaxArgStrlen is the kernel's limit on one argument or environment
	// string, NUL included (MAX_ARG_STRLEN = 32 pages).
	MaxArgStrlen = 32 * PageSize
	// MaxArgBytes bounds the strings and pointers of argv and envp together,
	// as the kernel does with the default 8 MiB stack rlimit (a quarter of
	// it; bprm_stack_limits).
	MaxArgBytes = 2 << 20

	maxAux = 1024 // entries; a sanity bound, far above what the kernel gives

	// NoCache is the cache shape for a cache level that does not exist
	// (the kernel stores -1).
	NoCache = ^uint64(0)
)

// Aux is one auxiliary vector entry.
type Aux struct{ Type, Value uint64 }

func (a Aux) String() string { return fmt.Sprintf("%s=%#x", AuxName(a.Type), a.Value) }

// AuxParams are the per-process and per-machine values of the auxv that the
// image does not determine.
type AuxParams struct {
	UID, EUID, GID, EGID uint64
	Secure               bool // AT_SECURE: set-user-ID style execution
	// HWCap is ELF_HWCAP = ~amask(-1): the architecture extensions present.
	// 0 on a 21164, which has none of BWX, FIX, CIX, MVI.
	HWCap uint64
	// Cache shapes as arch/alpha/kernel/setup.c reports them (CacheShape);
	// NoCache for an absent level.
	L1I, L1D, L2, L3 uint64
}

// CacheShape encodes a cache as Linux/Alpha's AT_*_CACHESHAPE values do:
// (total size & ~0xff) | log2(line size) << 4 | associativity.
func CacheShape(totalBytes, lineBytes, assoc uint64) uint64 {
	lg := uint64(0)
	if lineBytes > 0 {
		lg = uint64(bits.Len64(lineBytes) - 1)
	}
	return totalBytes&^0xff | lg<<4 | assoc
}

// DefaultAuxParams gives a process of user 0 on a 21164 with an 8 KB direct-
// mapped I- and D-cache of 32-byte lines, a 96 KB 3-way S-cache and a 2 MB
// direct-mapped board cache. The S-cache line (32 or 64 bytes on the 21164)
// and the board cache size are assumptions: a simulated machine should pass
// its own configuration.
func DefaultAuxParams() AuxParams {
	return AuxParams{
		L1I: CacheShape(8<<10, 32, 1),
		L1D: CacheShape(8<<10, 32, 1),
		L2:  CacheShape(96<<10, 64, 3),
		L3:  CacheShape(2<<20, 64, 1),
	}
}

// AuxVector returns the auxv the Linux/Alpha kernel gives im, in the
// kernel's order (ARCH_DLINFO's cache shapes first, then create_elf_tables'
// entries), without the terminating AT_NULL. AT_RANDOM, AT_EXECFN and
// AT_PLATFORM point into the stack and are 0 here; BuildStack fills them in.
// AT_BASE is 0 (no interpreter) and AT_PHENT is sizeof(Elf64_Phdr).
func AuxVector(im *Image, p AuxParams) []Aux {
	secure := uint64(0)
	if p.Secure {
		secure = 1
	}
	return []Aux{
		{AtL1ICacheShape, p.L1I},
		{AtL1DCacheShape, p.L1D},
		{AtL2CacheShape, p.L2},
		{AtL3CacheShape, p.L3},
		{AtHwcap, p.HWCap},
		{AtPagesz, PageSize},
		{AtClktck, ClockTicks},
		{AtPhdr, im.PhdrAddr},
		{AtPhent, phdrSize},
		{AtPhnum, uint64(im.PhNum)},
		{AtBase, 0},
		{AtFlags, 0},
		{AtEntry, im.Entry},
		{AtUID, p.UID},
		{AtEUID, p.EUID},
		{AtGID, p.GID},
		{AtEGID, p.EGID},
		{AtSecure, secure},
		{AtRandom, 0},
		{AtExecFn, 0},
		{AtPlatform, 0},
	}
}

// BuildStack lays out the initial process stack for a stack whose top
// (highest address, exclusive; 16-byte aligned) is top, as described at the
// top of this file. It returns the bytes to place at [sp, top) and sp, the
// value of the stack pointer at the entry point.
//
// auxv is written in order and terminated with AT_NULL (a trailing AT_NULL
// in auxv is accepted). The values of its AT_RANDOM, AT_EXECFN and
// AT_PLATFORM entries are replaced with the addresses of random, execfn and
// platform on the stack. The platform string is written only if platform is
// not empty; an AT_PLATFORM entry with an empty platform is an error. An
// empty argv becomes {""}, as Linux does since 5.18. Strings must not
// contain NUL and must respect the kernel's limits (MaxArgStrlen,
// MaxArgBytes). Errors wrap ErrStack.
func BuildStack(top uint64, argv, envp []string, auxv []Aux, platform string, random [16]byte, execfn string) (mem []byte, sp uint64, err error) {
	if top%16 != 0 {
		return nil, 0, stackErr("stack top %#x is not 16-byte aligned", top)
	}
	if len(argv) == 0 {
		argv = []string{""}
	}
	check := func(what string, s string) error {
		if strings.IndexByte(s, 0) >= 0 {
			return stackErr("%s contains a NUL byte", what)
		}
		if len(s)+1 > MaxArgStrlen {
			return stackErr("%s is %d bytes, more than the kernel's MAX_ARG_STRLEN (%d)", what, len(s)+1, MaxArgStrlen)
		}
		return nil
	}
	var argBytes, envBytes uint64
	for i, s := range argv {
		if err := check(fmt.Sprintf("argv[%d]", i), s); err != nil {
			return nil, 0, err
		}
		argBytes += uint64(len(s)) + 1
	}
	for i, s := range envp {
		if err := check(fmt.Sprintf("envp[%d]", i), s); err != nil {
			return nil, 0, err
		}
		envBytes += uint64(len(s)) + 1
	}
	if err := check("execfn", execfn); err != nil {
		return nil, 0, err
	}
	if err := check("platform", platform); err != nil {
		return nil, 0, err
	}
	// Like bprm_stack_limits and copy_strings: pointers and strings of argv
	// and envp together (the execfn is counted too, it is copied the same way).
	argTotal := argBytes + envBytes + uint64(len(execfn)) + 1 + 8*uint64(len(argv)+len(envp))
	if argTotal > MaxArgBytes {
		return nil, 0, stackErr("argument list too long: argv and envp need %d bytes, limit %d (E2BIG)", argTotal, MaxArgBytes)
	}
	aux := make([]Aux, 0, len(auxv)+1)
	hasPlatform := false
	for i, a := range auxv {
		if a.Type == AtNull {
			if i != len(auxv)-1 {
				return nil, 0, stackErr("auxv[%d] is AT_NULL before the end of the vector", i)
			}
			break
		}
		if a.Type == AtPlatform {
			hasPlatform = true
		}
		aux = append(aux, a)
	}
	if hasPlatform && platform == "" {
		return nil, 0, stackErr("auxv has AT_PLATFORM but the platform string is empty")
	}
	if len(aux) > maxAux {
		return nil, 0, stackErr("auxv has %d entries, more than %d (the kernel gives about 20)", len(aux), maxAux)
	}
	aux = append(aux, Aux{Type: AtNull})

	// Sizes are bounded above (≤ 2 MiB of strings, ≤ maxAux entries), so
	// the running total cannot overflow; check it fits below top.
	platLen := uint64(0)
	if platform != "" {
		platLen = uint64(len(platform)) + 1
	}
	items := uint64(len(argv)+1) + uint64(len(envp)+1) + 1
	need := 8 + argTotal + platLen + 16 + 16*uint64(len(aux)) + 8*items + 15
	if need > top {
		return nil, 0, stackErr("stack top %#x is too low for %d bytes of initial stack", top, need)
	}

	p := top - 8
	p -= uint64(len(execfn)) + 1
	execfnAddr := p
	p -= envBytes
	envStart := p
	p -= argBytes
	argStart := p
	platAddr := uint64(0)
	if platform != "" {
		p -= platLen
		platAddr = p
	}
	p -= 16
	randAddr := p
	p -= 16 * uint64(len(aux)) // STACK_ADD(p, ei_index), ei_index = 2 words per entry
	sp = (p - 8*items) &^ 15   // STACK_ROUND(sp, items)

	mem = make([]byte, top-sp)
	put := func(addr uint64, b []byte) { copy(mem[addr-sp:], b) }
	word := func(addr, v uint64) { binary.LittleEndian.PutUint64(mem[addr-sp:], v) }

	put(execfnAddr, []byte(execfn))
	if platform != "" {
		put(platAddr, []byte(platform))
	}
	put(randAddr, random[:])

	w := sp
	word(w, uint64(len(argv))) // argc
	w += 8
	s := argStart
	for _, a := range argv {
		put(s, []byte(a))
		word(w, s)
		w += 8
		s += uint64(len(a)) + 1
	}
	w += 8 // NULL
	s = envStart
	for _, e := range envp {
		put(s, []byte(e))
		word(w, s)
		w += 8
		s += uint64(len(e)) + 1
	}
	w += 8 // NULL
	for _, a := range aux {
		v := a.Value
		switch a.Type {
		case AtRandom:
			v = randAddr
		case AtExecFn:
			v = execfnAddr
		case AtPlatform:
			v = platAddr
		}
		word(w, a.Type)
		word(w+8, v)
		w += 16
	}
	return mem, sp, nil
}

// InitialStack is a decoded initial process stack.
type InitialStack struct {
	Argc     uint64
	Argv     []string
	Envp     []string
	Auxv     []Aux  // without the terminating AT_NULL
	Random   []byte // the 16 bytes AT_RANDOM points at; nil without AT_RANDOM
	Platform string // the string AT_PLATFORM points at
	ExecFn   string // the string AT_EXECFN points at
}

// ParseStack decodes the initial stack mem, which occupies [sp,
// sp+len(mem)), the way a C start-up routine reads it: argc, argv, envp and
// auxv from sp, and the strings and random bytes their pointers name (which
// must lie inside mem). It is the inverse of BuildStack, for tests and
// debugging tools. Errors wrap ErrStack.
func ParseStack(mem []byte, sp uint64) (*InitialStack, error) {
	n := uint64(len(mem))
	if sp+n < sp {
		return nil, stackErr("stack [%#x, +%#x) wraps around the address space", sp, n)
	}
	var off uint64
	word := func(what string) (uint64, error) {
		if off > n || n-off < 8 {
			return 0, stackErr("stack ends inside %s at %#x", what, sp+off)
		}
		v := binary.LittleEndian.Uint64(mem[off:])
		off += 8
		return v, nil
	}
	str := func(what string, addr uint64) (string, error) {
		if addr < sp || addr-sp >= n {
			return "", stackErr("%s pointer %#x is outside the stack [%#x, %#x)", what, addr, sp, sp+n)
		}
		b := mem[addr-sp:]
		i := bytes.IndexByte(b, 0)
		if i < 0 {
			return "", stackErr("%s at %#x is not NUL-terminated", what, addr)
		}
		return string(b[:i]), nil
	}
	st := &InitialStack{}
	argc, err := word("argc")
	if err != nil {
		return nil, err
	}
	if argc > n/8 {
		return nil, stackErr("argc %d is larger than the stack can hold", argc)
	}
	st.Argc = argc
	for i := uint64(0); i < argc; i++ {
		a, err := word("argv")
		if err != nil {
			return nil, err
		}
		s, err := str(fmt.Sprintf("argv[%d]", i), a)
		if err != nil {
			return nil, err
		}
		st.Argv = append(st.Argv, s)
	}
	if z, err := word("argv terminator"); err != nil {
		return nil, err
	} else if z != 0 {
		return nil, stackErr("argv[%d] is %#x, want the NULL terminator", argc, z)
	}
	for i := 0; ; i++ {
		e, err := word("envp")
		if err != nil {
			return nil, err
		}
		if e == 0 {
			break
		}
		s, err := str(fmt.Sprintf("envp[%d]", i), e)
		if err != nil {
			return nil, err
		}
		st.Envp = append(st.Envp, s)
	}
	for {
		t, err := word("auxv")
		if err != nil {
			return nil, err
		}
		v, err := word("auxv")
		if err != nil {
			return nil, err
		}
		if t == AtNull {
			break
		}
		a := Aux{t, v}
		st.Auxv = append(st.Auxv, a)
		switch t {
		case AtRandom:
			if v < sp || v-sp > n || n-(v-sp) < 16 {
				return nil, stackErr("AT_RANDOM %#x does not point at 16 bytes inside the stack", v)
			}
			st.Random = append([]byte(nil), mem[v-sp:v-sp+16]...)
		case AtPlatform:
			if st.Platform, err = str("AT_PLATFORM", v); err != nil {
				return nil, err
			}
		case AtExecFn:
			if st.ExecFn, err = str("AT_EXECFN", v); err != nil {
				return nil, err
			}
		}
	}
	return st, nil
}
