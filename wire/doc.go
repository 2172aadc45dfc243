// Package wire holds the messages that cross process boundaries: the sample
// Batch a node's daemon publishes, the ImageRecord it publishes once per
// image, and the PathUpload a host sends of a profiled run's path counts
// and calling context tree (magic "DCPP", versioned on its own from 1; see
// PathUpload.MarshalBinary and docs/cluster.md), and the ValuesRecord of a
// host's value-sampling hot lists (magic "DCPV", versioned on its own from
// 1; see ValuesRecord.MarshalBinary and docs/values.md). Nodes, aggregators, the coordinator and the local sink all import it;
// of the project it imports only internal/bincodec, the byte-level codec
// (uvarints, strings, the decoder) it shares with storage and the
// coordinator, and internal/hotlist, the hot lists' own encoding. It owns the formats and their checks, not their transport or
// storage.
//
// # Encoding (version 3; versions 1 and 2 are read too)
//
// Every message is self-contained and self-checking:
//
//	magic    4 bytes   "DCPB" (Batch) or "DCPR" (ImageRecord)
//	version  2 bytes   big-endian, MinVersion..Version; a message re-encodes
//	                   in the version it was read with
//	body     ...       uvarints (minimal encoding only), bytes, strings
//	crc      4 bytes   big-endian CRC-32C (Castagnoli) of magic..body
//
// A string is a uvarint length and its bytes. An ImageKey is its kind byte,
// its length byte and that many ID bytes.
//
// Batch body:
//
//	host epoch cpu seq start end [delivered accounted: version 2]
//	ngroups, per group (one image, entries sorted by event, offset, PID):
//	    imagekey n, n × (event:1 byte, offset delta, pid, count)
//	nunknown, each: pid pc event:1 byte count
//	ndrops, each (sorted by name): name count
//	[stack section: version 3]
//
// Stack section (version 3; see StackEntry):
//
//	nframegroups, per group (one image, the zero key as kind 0 length 0):
//	    imagekey n, first offset, (n-1) × (offset delta - 1)
//	nstacks, each (in (pid, event, frames, truncated) order):
//	    pid event:1 byte flags:1 byte (bit 0 truncated) depth, depth × frame index, count
//	nstackdrops, each (sorted by name): name count
//
// The frame table lists each distinct frame of the batch once, in (image,
// offset) order, and a stack names its frames leaf first by their index in
// the table, so a deep caller chain that many stacks share costs its 36-byte
// image keys once and about a byte a frame after that. Every frame must be
// referenced by some stack. Producers write a batch without stacks as
// version 2 (FlatVersion), whose bytes it keeps; an image record of version
// 3 has version 2's body.
//
// The offset delta is from the previous entry of the same group and event (0
// at a group's or an event's first entry), so a dense profile costs about four
// bytes an entry. Integers must be minimally encoded and lists must be in
// their canonical order, so a message has exactly one encoding:
// Unmarshal∘Marshal is the identity on bytes, which the fuzz targets check.
//
// ImageRecord body:
//
//	imagekey path size textstart textend [base: version 2] nsym, each: name addr size
//
// # Outside input
//
// Decoders take bytes from the network. They check the magic, the version
// (ErrVersion), the size cap and the checksum before parsing, every length
// and count against the caps below and against the bytes left before
// allocating, and the decoded message against the same rules Marshal
// enforces (ErrInvalid). Every failure is an error that names the field; no
// input panics.
package wire
