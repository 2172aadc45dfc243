package linuxhost

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// unsafeSizeofAttr is perf_event_attr's size as this package fills it.
const unsafeSizeofAttr = unsafe.Sizeof(unix.PerfEventAttr{})
