package linuxhost

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"debug/elf"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"

	"dcpi/node"
	"dcpi/wire"
)

// KernelPath names the kernel's image, as perf names it.
const KernelPath = "[kernel.kallsyms]"

// Images identifies and describes a Linux host's images for the daemon's
// image records: native ELF files (x86-64, arm64: debug/elf reads any)
// with their symbols, and the running kernel from /proc/kallsyms. Sample
// offsets count from file offset 0 (the host reports a mapping's base as
// its start less its file offset), so a record's base is the address file
// offset 0 stands for in the image (LinkBase). It is safe for concurrent
// use.
type Images struct {
	mu     sync.Mutex
	ids    map[string]string // path → image key
	facts  map[string]node.ImageFacts
	kernel *Kernel
}

var _ node.ImageSource = (*Images)(nil)

// NewImages describes files by path and the kernel k (nil: none).
func NewImages(k *Kernel) *Images {
	return &Images{ids: map[string]string{}, facts: map[string]node.ImageFacts{}, kernel: k}
}

// Identify is path's image key: "buildid:" from its GNU build ID note,
// else "sha256:" of its contents; buildID, when the kernel read it
// (MMAP2 with PERF_RECORD_MISC_MMAP_BUILD_ID), saves the read.
func (s *Images) Identify(path string, buildID []byte) (string, error) {
	if len(buildID) > 0 && len(buildID) <= wire.MaxKeyBytes {
		return "buildid:" + hex.EncodeToString(buildID), nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if id, ok := s.ids[path]; ok {
		return id, nil
	}
	id, err := identifyFile(path)
	if err != nil {
		return "", err
	}
	s.ids[path] = id
	return id, nil
}

func identifyFile(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	if ef, err := elf.NewFile(f); err == nil {
		if id := BuildID(ef); len(id) > 0 && len(id) <= wire.MaxKeyBytes {
			return "buildid:" + hex.EncodeToString(id), nil
		}
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return "", err
	}
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("hash %s: %w", path, err)
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil)), nil
}

// BuildID is the descriptor of f's NT_GNU_BUILD_ID note (nil: none).
func BuildID(f *elf.File) []byte {
	for _, sec := range f.Sections {
		if sec.Type != elf.SHT_NOTE {
			continue
		}
		data, err := sec.Data()
		if err != nil {
			continue
		}
		if id := noteBuildID(data, f.ByteOrder); id != nil {
			return id
		}
	}
	return nil
}

// noteBuildID finds the GNU build ID in a run of ELF notes.
func noteBuildID(data []byte, bo binary.ByteOrder) []byte {
	for len(data) >= 12 {
		nsz, dsz, typ := bo.Uint32(data), bo.Uint32(data[4:]), bo.Uint32(data[8:])
		data = data[12:]
		na, da := (uint64(nsz)+3)&^3, (uint64(dsz)+3)&^3
		if na+da > uint64(len(data)) {
			return nil
		}
		name, desc := data[:nsz], data[na:na+uint64(dsz)]
		if typ == 3 && string(name) == "GNU\x00" {
			return desc
		}
		data = data[na+da:]
	}
	return nil
}

// DescribeImage returns the size, text range, link base and function
// symbols of the file m maps; ok false for a file that is gone.
func (s *Images) DescribeImage(m node.Mapping) (node.ImageFacts, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if f, ok := s.facts[m.Image]; ok {
		return f, true, nil
	}
	var f node.ImageFacts
	if m.Path == KernelPath {
		if s.kernel == nil {
			return f, false, nil
		}
		f = s.kernel.Facts()
	} else {
		var err error
		f, err = DescribeELF(m.Path)
		if os.IsNotExist(err) {
			return f, false, nil
		}
		if err != nil {
			return f, false, err
		}
	}
	s.facts[m.Image] = f
	return f, true, nil
}

// DescribeELF reads an ELF file's facts for its image record: .symtab's
// functions (.dynsym's for a stripped file), .text's range, and the
// address of file offset 0 in the executable segment.
func DescribeELF(path string) (node.ImageFacts, error) {
	var facts node.ImageFacts
	st, err := os.Stat(path)
	if err != nil {
		return facts, err
	}
	f, err := elf.Open(path)
	if err != nil {
		return facts, fmt.Errorf("linuxhost: image %s: %w", path, err)
	}
	defer f.Close()
	facts.Size = uint64(st.Size())
	if t := f.Section(".text"); t != nil {
		facts.TextStart, facts.TextEnd = t.Addr, t.Addr+t.Size
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_LOAD && p.Flags&elf.PF_X != 0 {
			base := p.Vaddr - p.Off
			facts.LinkBase = &base
			break
		}
	}
	syms, err := f.Symbols()
	if err != nil || len(syms) == 0 {
		syms, _ = f.DynamicSymbols()
	}
	seen := map[uint64]bool{}
	for _, sym := range syms {
		if elf.ST_TYPE(sym.Info) != elf.STT_FUNC || sym.Value == 0 || sym.Section == elf.SHN_UNDEF || seen[sym.Value] {
			continue
		}
		seen[sym.Value] = true
		name := sym.Name
		if i := strings.IndexByte(name, '@'); i > 0 {
			name = name[:i]
		}
		facts.Symbols = append(facts.Symbols, wire.Symbol{Name: name, Addr: sym.Value, Size: sym.Size})
	}
	sort.Slice(facts.Symbols, func(i, j int) bool { return facts.Symbols[i].Addr < facts.Symbols[j].Addr })
	return facts, nil
}

// Kernel is the running kernel as an image: its text from /proc/kallsyms
// (_text to past the last text symbol, modules included) and its
// symbols.
type Kernel struct {
	Base, Size uint64
	ID         string
	Symbols    []wire.Symbol
}

// ParseKallsyms reads /proc/kallsyms text: every text symbol with an
// address (all zero when kptr_restrict hides them: then nil).
func ParseKallsyms(text []byte) []wire.Symbol {
	var out []wire.Symbol
	sc := bufio.NewScanner(bytes.NewReader(text))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 3 || (f[1] != "t" && f[1] != "T" && f[1] != "w" && f[1] != "W") {
			continue
		}
		addr, err := strconv.ParseUint(f[0], 16, 64)
		if err != nil || addr == 0 {
			continue
		}
		out = append(out, wire.Symbol{Name: f[2], Addr: addr})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Addr < out[j].Addr })
	return out
}

// LoadKernel reads the running kernel's symbols and identity: the build
// ID in /sys/kernel/notes with the load address (KASLR moves it per
// boot), hashed. Without readable addresses it returns an error saying
// why.
func LoadKernel() (*Kernel, error) {
	text, err := os.ReadFile("/proc/kallsyms")
	if err != nil {
		return nil, fmt.Errorf("linuxhost: kernel symbols: %w", err)
	}
	syms := ParseKallsyms(text)
	if len(syms) == 0 {
		return nil, fmt.Errorf("linuxhost: /proc/kallsyms shows no addresses (kernel.kptr_restrict; run as root)")
	}
	k := &Kernel{Base: syms[0].Addr, Symbols: syms}
	for _, s := range syms {
		if s.Name == "_text" || s.Name == "_stext" {
			k.Base = min(k.Base, s.Addr)
		}
	}
	k.Size = syms[len(syms)-1].Addr + 4096 - k.Base
	h := sha256.New()
	notes, _ := os.ReadFile("/sys/kernel/notes")
	h.Write(notes)
	fmt.Fprintf(h, "@%x", k.Base)
	k.ID = "sha256:" + hex.EncodeToString(h.Sum(nil))
	return k, nil
}

// Facts is the kernel's image record content.
func (k *Kernel) Facts() node.ImageFacts {
	base := k.Base
	return node.ImageFacts{TextStart: k.Base, TextEnd: k.Base + k.Size, Symbols: k.Symbols, LinkBase: &base}
}
