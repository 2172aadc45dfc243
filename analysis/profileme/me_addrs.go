package profileme

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"dcpi/analysis"
	"dcpi/analysis/symbolize"
	"dcpi/storage"
)

// AddrSource reads stored effective-address hot lists (storage.DB).
type AddrSource interface {
	MeAddrs(ctx context.Context, q storage.Query, fn func(r *storage.MeAddrRow) error) error
}

// AddrQuery selects the instructions whose hot effective addresses to
// list: those of a procedure, or the one at an address.
type AddrQuery struct {
	Filter     storage.Query
	ImagePaths []string
	// Target is a procedure's name or an instruction's address (0x...).
	Target   string
	Interval float64
	Limit    int // addresses per instruction (0: all)
}

// AddrValue is one hot address: Estimate = τ·c·S accesses with it,
// Share = τ·c/N of the instruction's sampled accesses.
type AddrValue struct {
	Value    uint64  `json:"address"`
	Listed   uint64  `json:"count"` // c
	Estimate float64 `json:"estimate"`
	Share    float64 `json:"share"`
}

// AddrInstr is one instruction's hot list.
type AddrInstr struct {
	Procedure string      `json:"procedure"`
	Image     string      `json:"image"`
	Address   uint64      `json:"pc"`
	Samples   uint64      `json:"samples"` // N: samples that had an address
	Tau       uint64      `json:"tau"`
	Addrs     []AddrValue `json:"addresses"`
}

// Addresses lists the hot effective addresses (or jump targets) of the
// instructions q selects, hottest first (Gibbons-Matias: each listed
// count c times τ estimates, without bias, the samples with that
// address; times S, the accesses).
func Addresses(ctx context.Context, syms *symbolize.Symbolizer, src AddrSource, q AddrQuery) ([]AddrInstr, error) {
	var pc uint64
	byPC := strings.HasPrefix(q.Target, "0x")
	if byPC {
		v, err := strconv.ParseUint(q.Target[2:], 16, 64)
		if err != nil {
			return nil, fmt.Errorf("%w: address %q: %v", analysis.ErrQuery, q.Target, err)
		}
		pc = v
	}
	var out []AddrInstr
	err := src.MeAddrs(ctx, q.Filter, func(r *storage.MeAddrRow) error {
		path := r.Image.String()
		var tab *symbolize.Table
		if rec, err := syms.Image(ctx, r.Image); err == nil {
			path = rec.Path
			if tab, err = syms.Table(ctx, r.Image); err != nil {
				return err
			}
		} else if !errors.Is(err, storage.ErrNotFound) {
			return err
		}
		if !analysis.MatchImagePath(q.ImagePaths, path) || tab == nil {
			return nil
		}
		name := symbolize.UnknownProcedure
		if sym, _, ok := tab.Lookup(r.Offset); ok {
			name = sym.Name
		}
		addr := tab.Base + r.Offset
		if byPC && addr != pc || !byPC && q.Target != "" && name != q.Target {
			return nil
		}
		in := AddrInstr{Procedure: name, Image: path, Address: addr, Samples: r.List.N, Tau: r.List.Tau()}
		for _, e := range r.List.Entries {
			est := float64(e.Count * r.List.Tau())
			in.Addrs = append(in.Addrs, AddrValue{Value: e.Value, Listed: e.Count, Estimate: est * q.Interval, Share: est / float64(max(r.List.N, 1))})
		}
		slices.SortFunc(in.Addrs, func(a, b AddrValue) int {
			if c := cmp.Compare(b.Listed, a.Listed); c != 0 {
				return c
			}
			return cmp.Compare(a.Value, b.Value)
		})
		if q.Limit > 0 && len(in.Addrs) > q.Limit {
			in.Addrs = in.Addrs[:q.Limit]
		}
		out = append(out, in)
		return nil
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(out, func(a, b AddrInstr) int {
		if c := cmp.Compare(b.Samples, a.Samples); c != 0 {
			return c
		}
		return cmp.Compare(a.Address, b.Address)
	})
	return out, nil
}

// WriteAddresses prints each instruction's hot addresses.
func WriteAddresses(w io.Writer, ins []AddrInstr, interval float64) error {
	fmt.Fprintf(w, "ProfileMe effective addresses (S = %.0f): an address listed c times in a list of τ estimates c·τ samples, c·τ·S accesses\n", interval)
	for _, in := range ins {
		fmt.Fprintf(w, "\n%#x %s (%s): %d samples with an address, τ = %d\n", in.Address, in.Procedure, in.Image, in.Samples, in.Tau)
		for _, a := range in.Addrs {
			if _, err := fmt.Fprintf(w, "  %#18x  %5.1f%%  %.3g\n", a.Value, 100*a.Share, a.Estimate); err != nil {
				return err
			}
		}
	}
	return nil
}
