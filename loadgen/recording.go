package loadgen

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"

	"dcpi/wire"
)

// A recording file is
//
//	magic "DCPILOAD" | version uint16 BE | header length uvarint | header JSON
//	items: kind byte | at uvarint | length uvarint | the item's wire encoding
//	trailer: kind 0xFF | item count uvarint | CRC-32C (Castagnoli) of every byte before it, uint32 BE
//
// Each item is one thing the recorded agent published: a sample batch
// (wire.Batch's encoding) or an image record (wire.ImageRecord's), at the
// simulated cycle its batch was cut. A reader refuses another version, a
// file that does not end in its trailer, a checksum that does not match,
// and any item that does not decode, so a corrupted or foreign recording
// is never replayed.

// Magic starts every recording.
const Magic = "DCPILOAD"

// Version is the recording format this package writes and reads.
const Version uint16 = 1

// ErrFormat is wrapped by every error about a recording's bytes.
var ErrFormat = errors.New("not a valid dcpi loadgen recording")

// ErrVersion is wrapped by the error about a recording of another format
// version.
var ErrVersion = errors.New("unsupported dcpi loadgen recording version")

// Kind says what an item holds.
type Kind byte

const (
	KindBatch Kind = 1
	KindImage Kind = 2
	// kindTrailer ends the items.
	kindTrailer Kind = 0xFF
)

// Header describes the recorded host and run.
type Header struct {
	Host       string `json:"host"` // the recorded host's name
	CPUs       int    `json:"cpus"`
	ClockHz    uint64 `json:"clock_hz"`
	FlushEvery uint64 `json:"flush_every"` // cycles between full drains
	// PublishEvery is the recorded daemon's publish window, in cycles
	// (0: a batch per drain; absent in recordings made before it).
	PublishEvery uint64   `json:"publish_every,omitempty"`
	Cycles       uint64   `json:"cycles"` // simulated cycles recorded
	Events       []string `json:"events"`
	Programs     []string `json:"programs"`
	// Generated is every sample the recorded host's hardware delivered;
	// it equals the samples and drops of the recorded batches.
	Generated uint64 `json:"generated"`
}

// Item is one published thing: a batch or an image record, decoded.
type Item struct {
	Kind  Kind
	At    uint64 // simulated cycle: a batch's End, an image's next batch's
	Batch *wire.Batch
	Image *wire.ImageRecord
}

// Recording is a decoded recording.
type Recording struct {
	Header Header
	Items  []Item
}

// maxHeader bounds the header's JSON.
const maxHeader = 1 << 20

// Encode writes r.
func (r *Recording) Encode(w io.Writer) error {
	if err := r.Check(); err != nil {
		return err
	}
	h, err := json.Marshal(r.Header)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	buf.WriteString(Magic)
	buf.Write(binary.BigEndian.AppendUint16(nil, Version))
	buf.Write(binary.AppendUvarint(nil, uint64(len(h))))
	buf.Write(h)
	for i, it := range r.Items {
		var data []byte
		switch it.Kind {
		case KindBatch:
			data, err = it.Batch.MarshalBinary()
		case KindImage:
			data, err = it.Image.MarshalBinary()
		}
		if err != nil {
			return fmt.Errorf("loadgen: item %d: %w", i, err)
		}
		buf.WriteByte(byte(it.Kind))
		buf.Write(binary.AppendUvarint(nil, it.At))
		buf.Write(binary.AppendUvarint(nil, uint64(len(data))))
		buf.Write(data)
	}
	buf.WriteByte(byte(kindTrailer))
	buf.Write(binary.AppendUvarint(nil, uint64(len(r.Items))))
	sum := crc32.Checksum(buf.Bytes(), crcTable)
	buf.Write(binary.BigEndian.AppendUint32(nil, sum))
	_, err = w.Write(buf.Bytes())
	return err
}

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// Decode reads a whole recording.
func Decode(data []byte) (*Recording, error) {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("loadgen: %w: %s", ErrFormat, fmt.Sprintf(format, args...))
	}
	if len(data) < len(Magic)+2 || string(data[:len(Magic)]) != Magic {
		return nil, bad("no %q magic at the start", Magic)
	}
	if v := binary.BigEndian.Uint16(data[len(Magic):]); v != Version {
		return nil, fmt.Errorf("loadgen: %w: the file is version %d, this dcpi reads version %d (record it again with this dcpi)", ErrVersion, v, Version)
	}
	if len(data) < len(Magic)+2+4 {
		return nil, bad("truncated")
	}
	body, sumBytes := data[:len(data)-4], data[len(data)-4:]
	if got, want := crc32.Checksum(body, crcTable), binary.BigEndian.Uint32(sumBytes); got != want {
		return nil, bad("checksum %08x, the trailer says %08x: the file is corrupted or truncated", got, want)
	}
	p := len(Magic) + 2
	uvarint := func(what string) (uint64, error) {
		v, n := binary.Uvarint(body[p:])
		if n <= 0 {
			return 0, bad("bad %s at byte %d", what, p)
		}
		p += n
		return v, nil
	}
	hl, err := uvarint("header length")
	if err != nil {
		return nil, err
	}
	if hl > maxHeader || hl > uint64(len(body)-p) {
		return nil, bad("header length %d past the end", hl)
	}
	r := &Recording{}
	dec := json.NewDecoder(bytes.NewReader(body[p : p+int(hl)]))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r.Header); err != nil {
		return nil, bad("header: %v", err)
	}
	p += int(hl)
	for {
		if p >= len(body) {
			return nil, bad("no trailer")
		}
		kind := Kind(body[p])
		p++
		if kind == kindTrailer {
			n, err := uvarint("item count")
			if err != nil {
				return nil, err
			}
			if n != uint64(len(r.Items)) || p != len(body) {
				return nil, bad("trailer counts %d items, the file holds %d", n, len(r.Items))
			}
			break
		}
		at, err := uvarint("item time")
		if err != nil {
			return nil, err
		}
		n, err := uvarint("item length")
		if err != nil {
			return nil, err
		}
		if n > uint64(len(body)-p) {
			return nil, bad("item %d: length %d past the end", len(r.Items), n)
		}
		data := body[p : p+int(n)]
		p += int(n)
		it := Item{Kind: kind, At: at}
		switch kind {
		case KindBatch:
			it.Batch = new(wire.Batch)
			err = it.Batch.UnmarshalBinary(data)
		case KindImage:
			it.Image = new(wire.ImageRecord)
			err = it.Image.UnmarshalBinary(data)
		default:
			err = fmt.Errorf("unknown kind %d", kind)
		}
		if err != nil {
			return nil, bad("item %d: %v", len(r.Items), err)
		}
		r.Items = append(r.Items, it)
	}
	if err := r.Check(); err != nil {
		return nil, err
	}
	return r, nil
}

// Check verifies what replay relies on: a sane header, batches of the
// recorded host only, in time order, their sequence numbers contiguous
// from 1 per CPU, one epoch, and Generated equal to what they carry.
func (r *Recording) Check() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("loadgen: %w: %s", ErrFormat, fmt.Sprintf(format, args...))
	}
	h := r.Header
	if err := wire.CheckHost(h.Host); err != nil {
		return bad("header: %v", err)
	}
	if h.CPUs < 1 || h.CPUs > 1024 || h.ClockHz == 0 || h.Cycles == 0 {
		return bad("header: %d CPUs, clock %d Hz, %d cycles: want 1-1024 CPUs and a clock and length", h.CPUs, h.ClockHz, h.Cycles)
	}
	next := map[uint16]uint64{}
	var at, samples uint64
	var epoch uint64
	batches := 0
	for i, it := range r.Items {
		if it.At < at {
			return bad("item %d at cycle %d, after one at %d", i, it.At, at)
		}
		at = it.At
		switch it.Kind {
		case KindImage:
			if it.Image == nil {
				return bad("item %d: no image", i)
			}
		case KindBatch:
			b := it.Batch
			if b == nil {
				return bad("item %d: no batch", i)
			}
			if b.Host != h.Host {
				return bad("item %d: batch of host %q in a recording of %q", i, b.Host, h.Host)
			}
			if b.CPU != wire.AllCPUs && int(b.CPU) >= h.CPUs {
				return bad("item %d: batch of CPU %d on a %d-CPU host", i, b.CPU, h.CPUs)
			}
			if batches == 0 {
				epoch = b.Epoch
			} else if b.Epoch != epoch {
				return bad("item %d: epoch %d, the recording's is %d", i, b.Epoch, epoch)
			}
			want := next[b.CPU] + 1
			if b.Seq != want {
				return bad("item %d: CPU %d seq %d, want %d", i, b.CPU, b.Seq, want)
			}
			next[b.CPU] = b.Seq
			samples += Samples(b)
			batches++
		default:
			return bad("item %d: unknown kind %d", i, it.Kind)
		}
	}
	if batches == 0 {
		return bad("no batches")
	}
	if samples != h.Generated {
		return bad("the batches carry %d samples and drops, the header says the hardware generated %d", samples, h.Generated)
	}
	return nil
}

// Samples is what a batch accounts for in the cluster's totals: the
// samples it carries and its drop counters.
func Samples(b *wire.Batch) uint64 {
	n := b.Total()
	for _, d := range b.Drops {
		n += d
	}
	return n
}

// EntryRate is the entries per second the recorded host would send if
// its batches were merged over windows of window cycles instead of cut
// at every drain: per window, the distinct (image, offset, event, PID)
// keys of every CPU's batches (storage keeps a host's counts without
// the CPU), summed over the windows, over the recording's length. With
// window the drain interval it is close to what the host sends; longer
// windows show what aggregating in the daemon before publishing saves.
func (r *Recording) EntryRate(window uint64) float64 {
	if window == 0 || r.Header.Cycles == 0 || r.Header.ClockHz == 0 {
		return 0
	}
	type key struct {
		image  wire.ImageKey
		offset uint64
		event  uint8
		pid    uint32
	}
	windows := map[uint64]map[key]struct{}{}
	for _, it := range r.Items {
		b := it.Batch
		if b == nil || b.End == 0 {
			continue
		}
		w := (b.End - 1) / window
		keys := windows[w]
		if keys == nil {
			keys = map[key]struct{}{}
			windows[w] = keys
		}
		for _, e := range b.Entries {
			keys[key{e.Image, e.Offset, e.Event, e.PID}] = struct{}{}
		}
	}
	n := 0
	for _, keys := range windows {
		n += len(keys)
	}
	return float64(n) / (float64(r.Header.Cycles) / float64(r.Header.ClockHz))
}
