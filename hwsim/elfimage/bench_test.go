package elfimage

import (
	"testing"
)

// BenchmarkParse measures Parse on the committed tiny binary and, as the
// baseline beside it, a plain copy of the same bytes.
func BenchmarkParse(b *testing.B) {
	data := readFile(b, "testdata/free")
	b.Run("copy-baseline", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			_ = append([]byte(nil), data...)
		}
	})
	b.Run("free", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			if _, err := Parse(data, "free"); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkLookup measures symbol lookup on a static glibc image (about
// 1,800 code symbols), the daemon's per-sample operation.
func BenchmarkLookup(b *testing.B) {
	needTool(b, crossGCC)
	im := parseFile(b, buildGlibc(b, "auxdump"))
	addrs := make([]uint64, 0, 4096)
	for a := im.TextStart; a < im.TextEnd && len(addrs) < cap(addrs); a += (im.TextEnd - im.TextStart) / 4096 &^ 3 {
		addrs = append(addrs, a)
	}
	// Baseline: a linear scan for the sized symbol containing the address.
	b.Run("linear-scan-baseline", func(b *testing.B) {
		i := 0
		for b.Loop() {
			a := addrs[i%len(addrs)]
			for _, s := range im.Symbols {
				if a >= s.Addr && a-s.Addr < s.Size {
					break
				}
			}
			i++
		}
	})
	b.Run("Lookup", func(b *testing.B) {
		i := 0
		for b.Loop() {
			im.Lookup(addrs[i%len(addrs)])
			i++
		}
	})
	b.Run("SymbolFor", func(b *testing.B) {
		i := 0
		for b.Loop() {
			im.SymbolFor(addrs[i%len(addrs)])
			i++
		}
	})
}
