package elfimage

// CheckFile checks what every Alpha ELF file must have, of any type (an
// executable, an object, a shared object): the identification, the
// machine, and header tables and sections that lie inside the file. It is
// the check the tools make before reading a file another way (the
// disassembler reads objects too), so that every tool rejects a bad file
// with the same errors as Parse, naming the field at fault; path is used
// only in them. Parse checks all of this and more.
func CheckFile(data []byte, path string) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = newErr(path, ErrMalformed, "internal error while checking: %v", r)
		}
	}()
	p := &parser{data: data, path: path, anyType: true, lo: 0, hi: KernelAddrLimit, space: "21164's 43-bit address space"}
	if err := p.ident(); err != nil {
		return err
	}
	p.im = &Image{Path: path, Size: int64(len(data))}
	_, shoff, _, shnum, shstrndx, err := p.header()
	if err != nil {
		return err
	}
	return p.sectionHeaders(shoff, shnum, shstrndx)
}
