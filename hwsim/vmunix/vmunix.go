// Package vmunix embeds the kernel image of dcpi's simulated hosts: a
// freestanding Alpha ELF built from src/kernel.c and src/entry.S
// (see the Makefile), which hwsim maps into every machine's kernel address
// space and runs in kernel mode for system calls, clock ticks, scheduling
// and the idle loop.
package vmunix

import _ "embed"

//go:embed vmunix
var image []byte

// Path is where the image appears in profiles, as on Tru64 and Linux.
const Path = "/vmunix"

// Image returns the kernel's ELF bytes. The slice is shared: do not modify it.
func Image() []byte { return image }
