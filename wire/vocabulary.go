package wire

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Drop reasons: the names of Batch.Drops counters that the pipeline itself
// adds, so that a sample the hardware delivered is either in a batch or
// counted under one of these. They are stored data (profile databases sum
// them by name): never rename one.
const (
	// DropOverflowFull counts samples the driver dropped because both
	// overflow buffers of their CPU were full (the daemon was behind).
	DropOverflowFull = "driver.overflow_full"
	// DropBufferFull counts samples of batches the publisher replaced by
	// tombstones because its queue reached its bound (NATS unreachable).
	DropBufferFull = "transport.buffer_full"
	// DropTooLarge counts samples of batches larger than the server's
	// maximum message size, which no retry could ever publish.
	DropTooLarge = "transport.too_large"
	// DropCrashLost counts samples a node agent's hardware reported before
	// the agent died that it had neither published nor dropped; its
	// successor reports them in its first batch of each CPU.
	DropCrashLost = "node.crash_lost"
	// DropStackOverflowFull (in Batch.StackDrops) counts samples whose
	// call stack the driver dropped because both stack overflow buffers
	// of their CPU were full: the sample may still be in the flat profile.
	DropStackOverflowFull = "driver.stack_overflow_full"
	// DropRingLost counts samples a Linux kernel could not write into a
	// CPU's perf ring buffer because it was full (PERF_RECORD_LOST and
	// LOST_SAMPLES: the agent read too slowly). With them, every sample
	// the kernel took is stored or counted.
	DropRingLost = "host.ring_lost"
)

// CheckHost reports whether h can name a host: in a Batch, in the profile
// database, and as one token of a NATS subject. That is 1..MaxHostLen
// bytes of UTF-8 without control characters (so a host name prints, and
// NUL can end it in storage keys), and without the bytes NATS gives a
// meaning in subjects: '.' separates tokens, '*' and '>' are wildcards,
// white space ends the subject. A fully qualified name such as
// "alpha0.lab" is therefore refused; use its first label or replace the
// dots.
func CheckHost(h string) error { return checkHost(h) }

func checkHost(h string) error {
	if h == "" {
		return fmt.Errorf("%w: empty host", ErrInvalid)
	}
	if len(h) > MaxHostLen {
		return fmt.Errorf("%w: host of %d bytes (cap %d)", ErrTooLarge, len(h), MaxHostLen)
	}
	if !utf8.ValidString(h) {
		return fmt.Errorf("%w: host %q is not UTF-8", ErrInvalid, h)
	}
	for _, r := range h {
		if unicode.IsControl(r) {
			return fmt.Errorf("%w: host %q has a control character", ErrInvalid, h)
		}
	}
	if i := strings.IndexFunc(h, func(r rune) bool {
		return r == '.' || r == '*' || r == '>' || unicode.IsSpace(r)
	}); i >= 0 {
		return fmt.Errorf("%w: host %q: byte %d (%q) is special in NATS subjects", ErrInvalid, h, i, h[i])
	}
	return nil
}
