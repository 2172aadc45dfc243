package linuxhost

import (
	"fmt"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// ring is one CPU's perf mmap ring buffer: the kernel writes records at
// data_head, the reader frees them by advancing data_tail. It is DCPI's
// overflow buffer with the kernel as the interrupt handler's writer.
type ring struct {
	fd   int
	mem  []byte // the metadata page, then the data pages
	data []byte
	buf  []byte // the records of one read, unwrapped
}

// Offsets of data_head and data_tail in struct perf_event_mmap_page.
const (
	offDataHead = 1024
	offDataTail = 1032
)

func mapRing(fd, pages int) (*ring, error) {
	ps := unix.Getpagesize()
	mem, err := unix.Mmap(fd, 0, (1+pages)*ps, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("linuxhost: mmap ring of %d pages: %w", pages, err)
	}
	return &ring{fd: fd, mem: mem, data: mem[ps:]}, nil
}

func (r *ring) head() *uint64 { return (*uint64)(unsafe.Pointer(&r.mem[offDataHead])) }
func (r *ring) tail() *uint64 { return (*uint64)(unsafe.Pointer(&r.mem[offDataTail])) }

// read copies every record the kernel has completed into r.buf (valid
// until the next read) and frees their space.
func (r *ring) read() []byte {
	head := atomic.LoadUint64(r.head()) // acquire: the records before it are written
	tail := atomic.LoadUint64(r.tail())
	size := uint64(len(r.data))
	r.buf = r.buf[:0]
	for tail < head {
		at := tail % size
		n := min(head-tail, size-at)
		r.buf = append(r.buf, r.data[at:at+n]...)
		tail += n
	}
	atomic.StoreUint64(r.tail(), tail) // release: the kernel may reuse them
	return r.buf
}

func (r *ring) close() {
	unix.Munmap(r.mem)
	unix.Close(r.fd)
}
