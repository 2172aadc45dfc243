package timing

import (
	"errors"
	"strings"
	"testing"
)

func TestDefaultParamsValid(t *testing.T) {
	p := DefaultParams()
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	if p.ClockMHz != 333 {
		t.Errorf("ClockMHz = %d, want 333", p.ClockMHz)
	}
}

// TestOffChipLatencies checks the arithmetic in BcacheLatency's comment:
// the EV56 measurement (38 and 172 cycles at 400 MHz, 3 of them ALU) with
// the 8 on-chip cycles kept as cycles and the rest kept as time.
func TestOffChipLatencies(t *testing.T) {
	tests := []struct {
		mhz          int
		bcache, mem  uint64
		imissS, imem uint64
	}{
		{333, 30, 142, 6, 140},
		{400, 35, 169, 6, 167}, // the measurement itself, less the ALU cycles
		{300, 28, 129, 6, 127},
	}
	for _, tt := range tests {
		p := DefaultParamsAt(tt.mhz)
		if p.BcacheLatency != tt.bcache || p.MemoryLatency != tt.mem {
			t.Errorf("at %d MHz: board cache %d, memory %d; want %d, %d",
				tt.mhz, p.BcacheLatency, p.MemoryLatency, tt.bcache, tt.mem)
		}
		if p.IcacheMissScache != tt.imissS || p.IcacheMissMemory != tt.imem {
			t.Errorf("at %d MHz: I-cache miss from S %d, memory %d; want %d, %d",
				tt.mhz, p.IcacheMissScache, p.IcacheMissMemory, tt.imissS, tt.imem)
		}
		if err := p.Validate(); err != nil {
			t.Errorf("at %d MHz: %v", tt.mhz, err)
		}
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name   string
		change func(*Params)
		want   string // in the error
	}{
		{"clock", func(p *Params) { p.ClockMHz = 0 }, "ClockMHz"},
		{"page", func(p *Params) { p.PageShift = 3 }, "PageShift"},
		{"icache line", func(p *Params) { p.IcacheLine = 48 }, "IcacheLine"},
		{"dcache size", func(p *Params) { p.DcacheSize = 0 }, "DcacheSize"},
		{"scache sets", func(p *Params) { p.ScacheSize = 100 << 10 }, "ScacheSize"},
		{"scache ways", func(p *Params) { p.ScacheWays = 0 }, "ScacheWays"},
		{"scache policy", func(p *Params) { p.ScacheReplacement = 7 }, "ScacheReplacement"},
		{"bcache line", func(p *Params) { p.BcacheLine = 32 }, "BcacheLine"},
		{"inclusion", func(p *Params) { p.DcacheLine = 128 }, "DcacheLine"},
		{"latency order", func(p *Params) { p.MemoryLatency = 10 }, "MemoryLatency"},
		{"scache latency", func(p *Params) { p.ScacheLatency = 1 }, "ScacheLatency"},
		{"imiss order", func(p *Params) { p.IcacheMissMemory = 1 }, "I-cache miss"},
		{"itb", func(p *Params) { p.ITBEntries = 0 }, "ITBEntries"},
		{"dtb", func(p *Params) { p.DTBEntries = 5000 }, "DTBEntries"},
		{"tlb policy", func(p *Params) { p.TLBReplacement = 9 }, "TLBReplacement"},
		{"branch", func(p *Params) { p.BranchEntries = 1000 }, "BranchEntries"},
		{"return stack", func(p *Params) { p.ReturnStackDepth = 0 }, "ReturnStackDepth"},
		{"wb entries", func(p *Params) { p.WriteBufferEntries = 0 }, "WriteBufferEntries"},
		{"wb block", func(p *Params) { p.WriteBufferBlock = 24 }, "WriteBufferBlock"},
		{"wb retire", func(p *Params) { p.WriteBufferRetire = 0 }, "WriteBufferRetire"},
		{"maf", func(p *Params) { p.MAFEntries = 0 }, "MAFEntries"},
		{"replay", func(p *Params) { p.ReplayTrapCycles = 0 }, "ReplayTrapCycles"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := DefaultParams()
			tt.change(&p)
			err := p.Validate()
			if err == nil {
				t.Fatal("Validate accepted it")
			}
			if !errors.Is(err, ErrInvalidParams) {
				t.Errorf("error %v does not wrap ErrInvalidParams", err)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q does not name %q", err, tt.want)
			}
			if _, herr := NewHierarchy(p); herr == nil {
				t.Error("NewHierarchy accepted it")
			}
		})
	}
}

func TestValidateReportsAll(t *testing.T) {
	p := DefaultParams()
	p.ITBEntries, p.MAFEntries = 0, 0
	err := p.Validate()
	if err == nil || !strings.Contains(err.Error(), "ITBEntries") || !strings.Contains(err.Error(), "MAFEntries") {
		t.Errorf("Validate = %v, want both problems", err)
	}
}

func TestNoBcache(t *testing.T) {
	p := DefaultParams()
	p.BcacheSize = 0
	h, err := NewHierarchy(p)
	if err != nil {
		t.Fatal(err)
	}
	_, lat, ev := h.Load(0x10000, 0x10000, 0)
	if lat != p.MemoryLatency || ev != EvDTBMiss|EvDcacheMiss|EvScacheMiss {
		t.Errorf("cold load without a board cache: latency %d, events %v", lat, ev)
	}
}
