package coordinator

import (
	"encoding/binary"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"dcpi/wire"
)

func TestPageRoundTrip(t *testing.T) {
	r := testRand(t)
	pages := []*profilePage{goldenPage(), {replica: "r", rows: []ProfileRow{}}}
	for range 20 {
		p := &profilePage{replica: "coord-1", last: r.IntN(2) == 0, rows: []ProfileRow{}}
		for range r.IntN(60) {
			row := ProfileRow{Image: imgKey(r.IntN(3)), Offset: r.Uint64() >> r.IntN(64), Event: uint8(r.IntN(4)), Count: r.Uint64() >> r.IntN(64)}
			if r.IntN(2) == 0 {
				row.Host = []string{"alpha1", "alpha2", "alpha3"}[r.IntN(3)]
			}
			p.rows = append(p.rows, row)
		}
		pages = append(pages, p)
	}
	for _, p := range pages {
		b := encodePage(p)
		got, err := decodePage(b)
		if err != nil || !reflect.DeepEqual(got, p) {
			t.Fatalf("round trip of %d rows: %v\n got %+v\nwant %+v", len(p.rows), err, got, p)
		}
		for n := range len(b) {
			if _, err := decodePage(b[:n]); !errors.Is(err, ErrInternal) {
				t.Fatalf("page truncated to %d of %d bytes: %v", n, len(b), err)
			}
		}
		if _, err := decodePage(append(b, 0)); !errors.Is(err, ErrInternal) {
			t.Fatalf("page with a trailing byte: %v", err)
		}
	}
}

func TestPageDecodeErrors(t *testing.T) {
	good := encodePage(goldenPage())
	img := wire.MustParseImageKey("buildid:01")
	for _, tc := range []struct {
		name string
		data []byte
		want string
	}{
		{"empty", nil, "version: truncated"},
		{"version", append([]byte{2}, good[1:]...), "profile page version 2"},
		{"replica cap", []byte{pageVersion, 0, 0x81, 0x08}, "replica: 1025 bytes (cap 1024)"},
		{"rows cap", binary.AppendUvarint([]byte{pageVersion, 0, 0}, 4*pageRows+1), "rows: 200001 (cap 200000)"},
		{"rows beyond input", []byte{pageVersion, 0, 0, 2, 3}, "rows: 2 cannot fit in 1 bytes"},
		{"first row", append([]byte{pageVersion, 0, 0, 1, 1}, append(img[:], 0, 0, 0)...), "first row without image and host"},
		{"image truncated", []byte{pageVersion, 0, 0, 1, 3, 2, 1, 1, 0}, "image: truncated"},
		{"host cap", append(append([]byte{pageVersion, 0, 0, 1, 3}, img[:]...), 0x80, 0x02, 0, 0, 0), "host: 256 bytes (cap 255)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := decodePage(tc.data)
			if !errors.Is(err, ErrInternal) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v; want ErrInternal containing %q", err, tc.want)
			}
		})
	}
}

// FuzzDecodePage: no reply panics the page decoder; a failure wraps
// ErrInternal, and a page it accepts survives another trip through the
// encoder unchanged. (A page need not be canonical: a row may repeat its
// image or host, and unused flag bits are ignored.)
func FuzzDecodePage(f *testing.F) {
	f.Add(encodePage(goldenPage()))
	f.Add(encodePage(&profilePage{replica: "r"}))
	f.Add(encodePage(&profilePage{replica: "coord-1", rows: goldenPage().rows[:1]}))
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := decodePage(b)
		if err != nil {
			if !errors.Is(err, ErrInternal) || p != nil {
				t.Fatalf("page %v with error %v, want nil and ErrInternal", p, err)
			}
			return
		}
		again, err := decodePage(encodePage(p))
		if err != nil || !reflect.DeepEqual(again, p) {
			t.Fatalf("re-encoded page: %v\n got %+v\nwant %+v", err, again, p)
		}
	})
}

// TestCheckBatchFormat: a node whose batches take a format the leader
// does not read is refused in one line naming both versions and what to
// upgrade; the same or an older format is served, and so is any node of
// a leader that did not say what it reads (an earlier build).
func TestCheckBatchFormat(t *testing.T) {
	for _, c := range []struct {
		writes, reads uint16
		refused       bool
	}{
		{wire.FlatVersion, wire.Version, false},
		{wire.Version, wire.Version, false},
		{wire.Version, 0, false},
		{wire.Version + 1, wire.Version, true},
		{wire.MeVersion, wire.StackVersion, true},
	} {
		err := CheckBatchFormat("alpha0", c.writes, c.reads)
		if c.refused != (err != nil) {
			t.Errorf("writes %d, reads %d: %v, want refused %v", c.writes, c.reads, err, c.refused)
			continue
		}
		if err == nil {
			continue
		}
		msg := err.Error()
		if !errors.Is(err, ErrNewerNode) || strings.Contains(msg, "\n") || !strings.Contains(msg, fmt.Sprintf("version %d", c.writes)) ||
			!strings.Contains(msg, fmt.Sprintf("up to version %d", c.reads)) || !strings.Contains(msg, "upgrade the coordinator replicas") {
			t.Errorf("writes %d, reads %d: %q", c.writes, c.reads, msg)
		}
	}
}
