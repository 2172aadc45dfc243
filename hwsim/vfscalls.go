package hwsim

import (
	"encoding/binary"
	"maps"

	"dcpi/hwsim/alpha"
)

// openFile is a read-only open file description of the simulated file
// system (vfs.go).
type openFile struct {
	f       *simFile
	off     uint64
	cloexec bool
}

// Linux/Alpha open flags (asm/fcntl.h) beyond those of syscall.go.
const (
	oDirectory       = 0o100000
	oCloexec         = 0o10000000
	atFDCWD          = ^uint64(99) // -100
	atEmpty          = 0x1000      // AT_EMPTY_PATH
	eISDIR     errno = 21
	eNOTDIR    errno = 20
	eACCES     errno = 13
	eROFS      errno = 30
)

// fileSyscall carries out the calls that read the simulated file system
// (what glibc's ld.so and dlopen need): it reports handled false for a
// call it leaves to dispatchSyscall (stdio, output files, programs of
// Config.Files that only exec reads).
func (m *Machine) fileSyscall(c *cpuState, p *Process, num uint64, a [6]uint64) (val uint64, err errno, handled bool) {
	switch num {
	case 45, 450: // open, openat
		dirfd, pathp, flags := atFDCWD, a[0], a[1]
		if num == 450 {
			dirfd, pathp, flags = a[0], a[1], a[2]
		}
		if flags&oAccMode != 0 {
			return 0, 0, false // writing: Config.OpenAppend's, or nothing
		}
		v, e := m.sysOpenRead(p, dirfd, pathp, flags)
		return v, e, true
	case 349: // pread64 (read itself vmunix serves: kernelFileRead)
		of := p.mm().rfiles[a[0]]
		if of == nil {
			return 0, 0, false
		}
		k, e := m.readFile(p, of, a[1], a[2], a[3])
		return k, e, true
	case 120: // readv
		of := p.mm().rfiles[a[0]]
		if of == nil {
			return 0, 0, false
		}
		v, e := m.readvFile(p, of, a[1], a[2])
		return v, e, true
	case 19: // lseek
		of := p.mm().rfiles[a[0]]
		if of == nil {
			return 0, 0, false
		}
		var base uint64
		switch a[2] {
		case 0:
		case 1:
			base = of.off
		case 2:
			base = uint64(len(of.f.data))
		default:
			return 0, eINVAL, true
		}
		off := base + a[1]
		if int64(off) < 0 {
			return 0, eINVAL, true
		}
		of.off = off
		return off, 0, true
	case 6: // close
		if p.mm().rfiles[a[0]] == nil {
			return 0, 0, false
		}
		delete(p.mm().rfiles, a[0])
		return 0, 0, true
	case 91, 427: // fstat (old struct stat), fstat64
		of := p.mm().rfiles[a[0]]
		if of == nil {
			return 0, 0, false
		}
		return 0, m.putStat(p, a[1], of.f, num == 91), true
	case 67, 68, 425, 426, 455: // stat, lstat, stat64, lstat64, fstatat64
		dirfd, pathp, buf, flags := atFDCWD, a[0], a[1], uint64(0)
		if num == 455 {
			dirfd, pathp, buf, flags = a[0], a[1], a[2], a[3]
		}
		name, rerr := p.as.ReadString(pathp, 4096)
		if rerr != nil {
			return 0, eFAULT, true
		}
		if name == "" && flags&atEmpty != 0 {
			of := p.mm().rfiles[dirfd]
			if of == nil {
				return 0, 0, false // fds 0-2: dispatchSyscall's pipes
			}
			return 0, m.putStat(p, buf, of.f, false), true
		}
		f, e := m.lookupAt(p, dirfd, name)
		if e != 0 {
			return 0, 0, false // not ours: as before
		}
		return 0, m.putStat(p, buf, f, num == 67 || num == 68), true
	case 33, 462: // access, faccessat
		dirfd, pathp, mode := atFDCWD, a[0], a[1]
		if num == 462 {
			dirfd, pathp, mode = a[0], a[1], a[2]
		}
		name, rerr := p.as.ReadString(pathp, 4096)
		if rerr != nil {
			return 0, eFAULT, true
		}
		if _, e := m.lookupAt(p, dirfd, name); e != 0 {
			return 0, 0, false
		}
		if mode&2 != 0 { // W_OK: a read-only file system
			return 0, eROFS, true
		}
		return 0, 0, true
	case 71: // mmap of an open file
		const mapAnon = 0x10
		of := p.mm().rfiles[a[4]]
		if a[3]&mapAnon != 0 || of == nil {
			return 0, 0, false
		}
		v, e := m.mmapFile(c, p, of, a[0], a[1], a[2], a[3], a[5])
		return v, e, true
	}
	return 0, 0, false
}

// lookupAt resolves name against dirfd as openat does.
func (m *Machine) lookupAt(p *Process, dirfd uint64, name string) (*simFile, errno) {
	if name != "" && name[0] != '/' && dirfd != atFDCWD {
		of := p.mm().rfiles[dirfd]
		if of == nil {
			return nil, eBADF
		}
		if !of.f.dir {
			return nil, eNOTDIR
		}
		name = of.f.path + "/" + name
	}
	return m.lookup(name)
}

func (m *Machine) sysOpenRead(p *Process, dirfd, pathp, flags uint64) (uint64, errno) {
	name, rerr := p.as.ReadString(pathp, 4096)
	if rerr != nil {
		return 0, eFAULT
	}
	if len(name) >= 4096 {
		return 0, eNAMETOOLONG
	}
	f, err := m.lookupAt(p, dirfd, name)
	if err != 0 {
		return 0, err
	}
	if flags&oDirectory != 0 && !f.dir {
		return 0, eNOTDIR
	}
	fd := uint64(3)
	for p.mm().rfiles[fd] != nil || p.outFiles[fd] != nil {
		fd++
	}
	if fd >= 1024 { // RLIMIT_NOFILE
		return 0, errno(24) // EMFILE
	}
	if p.mm().rfiles == nil {
		p.mm().rfiles = map[uint64]*openFile{}
	}
	p.mm().rfiles[fd] = &openFile{f: f, cloexec: flags&oCloexec != 0}
	return fd, 0
}

func (m *Machine) readFile(p *Process, of *openFile, buf, n, off uint64) (uint64, errno) {
	if of.f.dir {
		return 0, eISDIR
	}
	data := of.f.data
	if off >= uint64(len(data)) || n == 0 {
		return 0, 0
	}
	b := data[off:min(uint64(len(data)), off+min(n, 1<<30))]
	return uint64(len(b)), m.userWrite(p, buf, b)
}

// readvFile is readv(2) of an open file: each buffer in turn, from the
// file's offset, until one is not filled.
func (m *Machine) readvFile(p *Process, of *openFile, iov, cnt uint64) (uint64, errno) {
	if cnt > 1024 {
		return 0, eINVAL
	}
	raw, err := m.userRead(p, iov, 16*cnt)
	if err != 0 {
		return 0, err
	}
	var total uint64
	for i := range cnt {
		base, n := binary.LittleEndian.Uint64(raw[16*i:]), binary.LittleEndian.Uint64(raw[16*i+8:])
		k, err := m.readFile(p, of, base, n, of.off)
		if err != 0 {
			if total > 0 {
				return total, 0
			}
			return 0, err
		}
		of.off += k
		total += k
		if k < n {
			break
		}
	}
	return total, 0
}

// kernelFileRead is read(2) of an open file into vmunix's bounce buffer at
// buf (vmunix serves read itself and asks the simulator for the bytes).
func (m *Machine) kernelFileRead(of *openFile, buf, n uint64) uint64 {
	if of.f.dir {
		return negErrno(eISDIR)
	}
	data := of.f.data
	if of.off >= uint64(len(data)) || n == 0 {
		return 0
	}
	b := data[of.off:min(uint64(len(data)), of.off+min(n, 1<<20))]
	if m.kern.as.WriteBytes(buf, b) != nil {
		return negErrno(eFAULT)
	}
	of.off += uint64(len(b))
	return uint64(len(b))
}

// putStat writes f's struct stat (old) or struct stat64 (asm/stat.h).
func (m *Machine) putStat(p *Process, buf uint64, f *simFile, old bool) errno {
	mode := uint32(0x8000 | 0o755)
	if f.dir {
		mode = 0x4000 | 0o755
	}
	size := uint64(len(f.data))
	const dev = 0x801
	if old {
		b := make([]byte, 80)
		binary.LittleEndian.PutUint32(b[0:], dev)
		binary.LittleEndian.PutUint32(b[4:], uint32(f.ino))
		binary.LittleEndian.PutUint32(b[8:], mode)
		binary.LittleEndian.PutUint32(b[12:], 1)
		binary.LittleEndian.PutUint64(b[32:], size)
		binary.LittleEndian.PutUint32(b[64:], pageSize)
		binary.LittleEndian.PutUint32(b[68:], uint32((size+511)/512))
		return m.userWrite(p, buf, b)
	}
	b := make([]byte, 144)
	binary.LittleEndian.PutUint64(b[0:], dev)
	binary.LittleEndian.PutUint64(b[8:], f.ino)
	binary.LittleEndian.PutUint64(b[24:], size)
	binary.LittleEndian.PutUint64(b[32:], (size+511)/512)
	binary.LittleEndian.PutUint32(b[40:], mode)
	binary.LittleEndian.PutUint32(b[52:], pageSize)
	binary.LittleEndian.PutUint32(b[56:], 1)
	return m.userWrite(p, buf, b)
}

// mmapFile maps [off, off+length) of an open file: a private copy of its
// pages (MAP_PRIVATE; a shared mapping of a read-only file reads the
// same), zero past the end of the file. An executable mapping is a loader
// map event (sec. 4.3.2), so samples in a shared library are attributed to
// it.
func (m *Machine) mmapFile(c *cpuState, p *Process, of *openFile, addr, length, prot, flags, off uint64) (uint64, errno) {
	const mapShared, mapFixed = 0x01, 0x100
	if of.f.dir {
		return 0, eNODEV
	}
	if flags&mapShared != 0 && prot&2 != 0 {
		return 0, eACCES // a shared writable mapping of a file opened read-only
	}
	if length == 0 || length > m.cfg.MaxMemory || off&pageMask != 0 {
		return 0, eINVAL
	}
	n := (length + pageMask) &^ pageMask
	if uint64(p.as.PageCount())*pageSize+n > m.cfg.MaxMemory {
		return 0, eNOMEM
	}
	if flags&mapFixed != 0 {
		if addr&pageMask != 0 || addr < minMmapAddr || addr+n > taskSize || addr+n < addr {
			return 0, eINVAL
		}
	} else {
		var ok bool
		if addr, ok = p.findFree(addr&^pageMask, n); !ok {
			return 0, eNOMEM
		}
	}
	p.removeVMA(addr, addr+n)
	p.as.Unmap(addr, n)
	perm := protPerm(prot)
	p.as.Map(addr, n, perm)
	if data := of.f.data; off < uint64(len(data)) {
		if err := p.as.WriteBytes(addr, data[off:min(uint64(len(data)), off+length)]); err != nil {
			return 0, eFAULT
		}
	}
	p.addVMA(vma{start: addr, end: addr + n, perm: perm, kind: vmaAnon})
	if perm&alpha.PermX != 0 {
		m.emitFileMap(c, p, of.f, addr, n, off)
	}
	return addr, 0
}

// closeOnExec drops the files opened with O_CLOEXEC, at exec.
func (p *Process) closeOnExec() {
	maps.DeleteFunc(p.mm().rfiles, func(_ uint64, of *openFile) bool { return of.cloexec })
}

// forkFiles gives a forked child its own descriptors of the same files.
func (p *Process) forkFiles() map[uint64]*openFile {
	if len(p.mm().rfiles) == 0 {
		return nil
	}
	out := make(map[uint64]*openFile, len(p.mm().rfiles))
	for fd, of := range p.mm().rfiles {
		cp := *of
		out[fd] = &cp
	}
	return out
}
