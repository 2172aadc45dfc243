package storage

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"maps"
	"slices"

	"dcpi/wire"
)

// tProcesses is the process table (doc.go):
// 'P' host\0 pid:4 epoch:8 → wire.ProcessRecord encoding (Set).
const tProcesses = 'P'

// Process is one process record with the host it belongs to, which the
// record itself does not name (wire.ProcessRecord).
type Process struct {
	Host string
	wire.ProcessRecord
}

func processKey(host string, pid uint32, epoch uint64) []byte {
	k := appendHost([]byte{tProcesses}, host)
	k = binary.BigEndian.AppendUint32(k, pid)
	return appendU64(k, epoch)
}

// PutProcess adds host's process record. Host is the publisher's, checked
// by the caller against its credentials; a record for the same (host, PID,
// first epoch) replaces the earlier one (a node that restarts publishes
// its processes again).
func (m *Meta) PutProcess(host string, r *wire.ProcessRecord) error {
	if err := wire.CheckHost(host); err != nil {
		return fmt.Errorf("storage: put process: %w", err)
	}
	v, err := r.MarshalBinary()
	if err != nil {
		return fmt.Errorf("storage: put process of %q: %w", host, err)
	}
	m.set(processKey(host, r.PID, r.Epoch), v)
	return nil
}

// Processes lists the process records of hosts (nil: every host's), in
// (host, PID, first epoch) order.
func (db *DB) Processes(hosts []string) ([]Process, error) {
	var out []Process
	scan := func(prefix []byte) error {
		return db.scanPrefix(prefix, func(k, v []byte) error {
			p, err := decodeProcess(k, v)
			if err != nil {
				return err
			}
			out = append(out, p)
			return nil
		})
	}
	if hosts == nil {
		if err := scan([]byte{tProcesses}); err != nil {
			return nil, fmt.Errorf("storage: processes: %w", err)
		}
		return out, nil
	}
	for _, h := range slices.Compact(slices.Sorted(slices.Values(hosts))) {
		if err := scan(appendHost([]byte{tProcesses}, h)); err != nil {
			return nil, fmt.Errorf("storage: processes of %q: %w", h, err)
		}
	}
	return out, nil
}

func decodeProcess(k, v []byte) (Process, error) {
	host, rest, ok := cutHost(k[1:])
	if !ok || len(rest) != 12 {
		return Process{}, fmt.Errorf("%w: process key %x", ErrCorrupt, k)
	}
	p := Process{Host: host}
	if err := p.UnmarshalBinary(v); err != nil {
		return Process{}, fmt.Errorf("%w: process %x: %w", ErrCorrupt, k, err)
	}
	if p.PID != binary.BigEndian.Uint32(rest) || p.Epoch != binary.BigEndian.Uint64(rest[4:]) {
		return Process{}, fmt.Errorf("%w: process key %x holds the record of PID %d, epoch %d", ErrCorrupt, k, p.PID, p.Epoch)
	}
	return p, nil
}

// expiredProcesses is the keys of the process records ExpireEpochs(through)
// deletes: a record first seen in an expired epoch whose process has no
// sample left. A record owns the epochs from its first to the next
// record's of the same (host, PID) — a PID reused — or to the end; it
// goes when it owns no epoch after through, or when the flat profile ('h')
// of the epochs it owns after through holds no sample of its PID. Samples
// only the unknown profile holds do not keep a record. The caller holds
// db.mu; every replica reads the same state, so deletes the same records.
func (db *DB) expiredProcesses(through uint64) ([][]byte, error) {
	type owned struct {
		key  []byte
		next uint64 // first epoch of the PID's next record; 0: none
	}
	type hostPID struct {
		host string
		pid  uint32
	}
	var recs []Process
	err := db.scanRange([]byte{tProcesses}, []byte{tProcesses + 1}, func(k, v []byte) error {
		p, err := decodeProcess(k, v)
		recs = append(recs, p)
		return err
	})
	if err != nil {
		return nil, err
	}
	var dead [][]byte
	live := map[hostPID]owned{} // candidates: an expired first epoch, epochs owned after through
	hosts := map[string]bool{}
	for i, p := range recs {
		if p.Epoch > through {
			continue
		}
		o := owned{key: processKey(p.Host, p.PID, p.Epoch)}
		if i+1 < len(recs) && recs[i+1].Host == p.Host && recs[i+1].PID == p.PID {
			o.next = recs[i+1].Epoch
		}
		if o.next != 0 && o.next <= through+1 {
			dead = append(dead, o.key)
			continue
		}
		live[hostPID{p.Host, p.PID}] = o
		hosts[p.Host] = true
	}
	if len(live) == 0 {
		return dead, nil
	}
	var epochs []uint64
	start, end := epochRange(tEpochs, through+1, ^uint64(0))
	if through == ^uint64(0) {
		start = end
	}
	err = db.scanRange(start, end, func(k, _ []byte) error {
		epochs = append(epochs, binary.BigEndian.Uint64(k[1:]))
		return nil
	})
	if err != nil {
		return nil, err
	}
	seen := map[hostPID]bool{}
	for _, h := range slices.Sorted(maps.Keys(hosts)) {
		for _, e := range epochs {
			pre := hostsPrefix(e, h)
			err := db.scanRange(pre, prefixEnd(pre), func(k, _ []byte) error {
				if len(k) < 4 {
					return fmt.Errorf("%w: hosts key %x: short", ErrCorrupt, k)
				}
				hp := hostPID{h, binary.BigEndian.Uint32(k[len(k)-4:])}
				if o, ok := live[hp]; ok && (o.next == 0 || e < o.next) {
					seen[hp] = true
				}
				return nil
			})
			if err != nil {
				return nil, err
			}
		}
	}
	for hp, o := range live {
		if !seen[hp] {
			dead = append(dead, o.key)
		}
	}
	slices.SortFunc(dead, func(a, b []byte) int { return cmp.Compare(string(a), string(b)) })
	return dead, nil
}
