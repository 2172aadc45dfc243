package wire

import (
	"encoding/binary"
	"fmt"

	"dcpi/internal/bincodec"
)

// ImageRecord is an image's metadata, published once per image by the node
// that first maps it, so that servers can name procedures (dcpiprof) without
// the file. Images are content-addressed: equal Keys mean equal files.
type ImageRecord struct {
	Version            uint16
	Key                ImageKey
	Path               string // where the publishing node found it
	Size               uint64 // file bytes
	TextStart, TextEnd uint64 // the text segment's [start, end) addresses
	// Base is the address sample offsets are counted from: the lowest
	// address the image maps (version 2; 0 in version 1, where readers
	// must infer it).
	Base    uint64
	Symbols []Symbol
}

// Symbol is one entry of the image's symbol table, in the image's addresses.
type Symbol struct {
	Name       string
	Addr, Size uint64
}

const imageMagic = "DCPR"

const minSymbolBytes = 4 // name length, one name byte, addr, size

// Validate checks every rule of an ImageRecord; Marshal and Unmarshal apply
// it.
func (r *ImageRecord) Validate() error {
	if err := checkVersion("image record", r.Version); err != nil {
		return err
	}
	if r.Version < 2 && r.Base != 0 {
		return fmt.Errorf("wire: image record: %w: version %d carries no load base", ErrInvalid, r.Version)
	}
	if err := r.Key.Check(); err != nil {
		return fmt.Errorf("wire: image record: %w: key: %v", ErrInvalid, err)
	}
	if len(r.Path) > MaxPathLen {
		return fmt.Errorf("wire: image record: %w: path of %d bytes (cap %d)", ErrTooLarge, len(r.Path), MaxPathLen)
	}
	if r.TextEnd < r.TextStart {
		return fmt.Errorf("wire: image record: %w: text end %#x before start %#x", ErrInvalid, r.TextEnd, r.TextStart)
	}
	if len(r.Symbols) > MaxSymbols {
		return fmt.Errorf("wire: image record: %w: %d symbols (cap %d)", ErrTooLarge, len(r.Symbols), MaxSymbols)
	}
	for i := range r.Symbols {
		s := &r.Symbols[i]
		if s.Name == "" {
			return fmt.Errorf("wire: image record: %w: symbol %d: empty name", ErrInvalid, i)
		}
		if len(s.Name) > MaxSymbolNameLen {
			return fmt.Errorf("wire: image record: %w: symbol %d: name of %d bytes (cap %d)", ErrTooLarge, i, len(s.Name), MaxSymbolNameLen)
		}
	}
	return nil
}

// MarshalBinary encodes a valid record (see the package comment).
func (r *ImageRecord) MarshalBinary() ([]byte, error) {
	n := 64 + len(r.Path)
	for i := range r.Symbols {
		n += len(r.Symbols[i].Name) + 8
	}
	return r.AppendBinary(make([]byte, 0, n))
}

// AppendBinary appends the encoding of a valid record to buf.
func (r *ImageRecord) AppendBinary(buf []byte) ([]byte, error) {
	if err := r.Validate(); err != nil {
		return nil, err
	}
	start := len(buf)
	buf = appendHeader(buf, imageMagic, r.Version)
	buf = r.Key.appendTo(buf)
	buf = bincodec.AppendString(buf, r.Path)
	buf = binary.AppendUvarint(buf, r.Size)
	buf = binary.AppendUvarint(buf, r.TextStart)
	buf = binary.AppendUvarint(buf, r.TextEnd)
	if r.Version >= 2 {
		buf = binary.AppendUvarint(buf, r.Base)
	}
	buf = binary.AppendUvarint(buf, uint64(len(r.Symbols)))
	for i := range r.Symbols {
		s := &r.Symbols[i]
		buf = bincodec.AppendString(buf, s.Name)
		buf = binary.AppendUvarint(buf, s.Addr)
		buf = binary.AppendUvarint(buf, s.Size)
	}
	if len(buf)-start+trailerLen > MaxMessageBytes {
		return nil, fmt.Errorf("wire: image record: %w: encodes to %d bytes (cap %d)", ErrTooLarge, len(buf)-start+trailerLen, MaxMessageBytes)
	}
	return appendTrailer(buf, start), nil
}

// UnmarshalBinary decodes and validates a record from outside input. On
// error *r is left zero.
func (r *ImageRecord) UnmarshalBinary(data []byte) error {
	*r = ImageRecord{}
	body, v, err := frame(data, imageMagic, "image record")
	if err != nil {
		return err
	}
	d := newDecoder(body)
	nr := ImageRecord{Version: v}
	nr.Key = decodeImageKey(d, "key")
	nr.Path = d.String("path", MaxPathLen)
	nr.Size = d.Uvarint("size")
	nr.TextStart = d.Uvarint("text start")
	nr.TextEnd = d.Uvarint("text end")
	if v >= 2 {
		nr.Base = d.Uvarint("base")
	}
	n := d.Count("symbols", MaxSymbols, minSymbolBytes)
	if n > 0 {
		nr.Symbols = make([]Symbol, 0, n)
	}
	for i := 0; i < n && d.Err() == nil; i++ {
		var s Symbol
		s.Name = d.String("symbol name", MaxSymbolNameLen)
		s.Addr = d.Uvarint("symbol addr")
		s.Size = d.Uvarint("symbol size")
		nr.Symbols = append(nr.Symbols, s)
	}
	d.End()
	if err := d.Err(); err != nil {
		return decodeError("image record", err)
	}
	if err := nr.Validate(); err != nil {
		return err
	}
	*r = nr
	return nil
}
