package symbolize

import (
	"bytes"
	"crypto/sha256"
	"debug/elf"
	"encoding/binary"
	"fmt"
	"strings"

	"golang.org/x/arch/arm64/arm64asm"
	"golang.org/x/arch/x86/x86asm"

	"dcpi/wire"
)

// NativeFile is the bytes of a profiled image of a real machine (x86-64
// or arm64 ELF, profiled by dcpi profile --linux), checked against its
// record like ImageFile: code by address, disassembly with golang.org/x/
// arch, and DWARF lines.
type NativeFile struct {
	Rec     *wire.ImageRecord
	Where   string
	Machine elf.Machine
	segs    []nativeSeg
	lines   []lineRow
}

type nativeSeg struct {
	vaddr uint64
	data  []byte
}

// OpenNativeFile parses data as rec's image when it is an x86-64 or arm64
// ELF file (ok false otherwise: an Alpha image is ImageFile's) and checks
// its content key as the Linux host computed it: its GNU build ID, else
// the SHA-256 of its bytes.
func OpenNativeFile(rec *wire.ImageRecord, data []byte, where string) (f *NativeFile, ok bool, err error) {
	ef, err := elf.NewFile(bytes.NewReader(data))
	if err != nil || (ef.Machine != elf.EM_X86_64 && ef.Machine != elf.EM_AARCH64) {
		return nil, false, nil
	}
	defer ef.Close()
	key := nativeKey(ef, data)
	k, err := wire.ParseImageKey(key)
	if err != nil {
		return nil, true, err
	}
	if k != rec.Key {
		return nil, true, fmt.Errorf("analysis: image %s from %s is %v, the profile's is %v: %w", rec.Path, where, k, rec.Key, ErrImageMismatch)
	}
	f = &NativeFile{Rec: rec, Where: where, Machine: ef.Machine}
	for _, p := range ef.Progs {
		if p.Type != elf.PT_LOAD || p.Flags&elf.PF_X == 0 || p.Off+p.Filesz > uint64(len(data)) {
			continue
		}
		f.segs = append(f.segs, nativeSeg{vaddr: p.Vaddr, data: data[p.Off : p.Off+p.Filesz]})
	}
	f.lines, _ = readLines(data) // a file without usable DWARF lists without lines
	return f, true, nil
}

// nativeKeyOf is data's content key if it is an x86-64 or arm64 ELF file.
func nativeKeyOf(data []byte) (wire.ImageKey, bool) {
	ef, err := elf.NewFile(bytes.NewReader(data))
	if err != nil || (ef.Machine != elf.EM_X86_64 && ef.Machine != elf.EM_AARCH64) {
		return wire.ImageKey{}, false
	}
	defer ef.Close()
	k, err := wire.ParseImageKey(nativeKey(ef, data))
	return k, err == nil
}

func nativeKey(ef *elf.File, data []byte) string {
	for _, sec := range ef.Sections {
		if sec.Type != elf.SHT_NOTE {
			continue
		}
		b, err := sec.Data()
		if err != nil {
			continue
		}
		for len(b) >= 12 {
			nsz, dsz, typ := ef.ByteOrder.Uint32(b), ef.ByteOrder.Uint32(b[4:]), ef.ByteOrder.Uint32(b[8:])
			b = b[12:]
			na, da := (uint64(nsz)+3)&^3, (uint64(dsz)+3)&^3
			if na+da > uint64(len(b)) {
				break
			}
			if typ == 3 && string(b[:nsz]) == "GNU\x00" && dsz > 0 && dsz <= wire.MaxKeyBytes {
				return fmt.Sprintf("buildid:%x", b[na:na+uint64(dsz)])
			}
			b = b[na+da:]
		}
	}
	return fmt.Sprintf("sha256:%x", sha256.Sum256(data))
}

// code is the file's bytes from addr on in its executable segment.
func (f *NativeFile) code(addr uint64) []byte {
	for _, s := range f.segs {
		if addr >= s.vaddr && addr-s.vaddr < uint64(len(s.data)) {
			return s.data[addr-s.vaddr:]
		}
	}
	return nil
}

// Insn disassembles the instruction at addr (GNU syntax, objdump's
// "mnemonic\toperands") and returns its length in bytes; n 0 where the
// file has no bytes, 1 for bytes that do not decode.
func (f *NativeFile) Insn(addr uint64, sym func(uint64) (string, uint64)) (text string, n int, word uint32) {
	b := f.code(addr)
	if len(b) == 0 {
		return "(no bytes in the image file)", 0, 0
	}
	if len(b) >= 4 {
		word = binary.LittleEndian.Uint32(b)
	}
	switch f.Machine {
	case elf.EM_X86_64:
		inst, err := x86asm.Decode(b, 64)
		if err != nil {
			return fmt.Sprintf("(bad)\t%#02x", b[0]), 1, word
		}
		return splitMnemonic(x86asm.GNUSyntax(inst, addr, sym)), inst.Len, word
	default:
		inst, err := arm64asm.Decode(b)
		if err != nil {
			return "(bad)", 4, word
		}
		return splitMnemonic(arm64asm.GNUSyntax(inst)), 4, word
	}
}

// splitMnemonic puts objdump's tab between mnemonic and operands.
func splitMnemonic(s string) string {
	if m, ops, ok := strings.Cut(s, " "); ok {
		return m + "\t" + ops
	}
	return s
}

// HasLines reports whether the image has DWARF line information.
func (f *NativeFile) HasLines() bool { return len(f.lines) > 0 }

// Line returns the source position of addr (as ImageFile.Line).
func (f *NativeFile) Line(addr uint64) (file string, line int, ok bool) {
	return lookupLine(f.lines, addr)
}
