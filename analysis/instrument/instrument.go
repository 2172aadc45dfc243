package instrument

import (
	"errors"
	"fmt"
	"path"
	"strings"

	"dcpi/analysis/cfg"
	"dcpi/hwsim/elfimage"
)

// Modes the instrumenter implements.
const (
	ModePixie = "pixie"
	ModePaths = "paths"
	ModeCCT   = "cct"
)

// Options say how to instrument.
type Options struct {
	Mode string
	// DumpPath is the file the runtime appends to at exit; relative paths
	// are taken from the process's working directory.
	DumpPath string
	// Strict refuses an image with any procedure the CFG cannot resolve,
	// rather than leaving those procedures uncounted.
	Strict bool
	// Metrics accumulates cycles and the two events hwsim's rdpic
	// returns, named by PIC (default DefaultPIC), per path (paths mode)
	// or per calling context (CCT mode), each its own, callees excluded;
	// the program then runs on hwsim only (metrics.go, cctmode.go).
	Metrics bool
	PIC     [2]string
	// CCTChunkBytes sizes the CCT mode's heap chunks, the first and every
	// one mapped later (0: 256 KB, then 1 MB each); small values make the
	// heap grow early (tests).
	CCTChunkBytes int
	// CCTPaths (CCT mode, Context+Flow: PLDI'97 sec. 4) makes every call
	// record count its procedure's Ball-Larus paths, as the paths mode
	// numbers them: paths per calling context (cctmode.go).
	CCTPaths bool
}

// DefaultDumpPath is the dump file of an instrumented binary written to
// out: its base name and ".pp.out", in the working directory.
func DefaultDumpPath(out string) string { return path.Base(out) + ".pp.out" }

// Result is an instrumented image.
type Result struct {
	ELF      []byte
	Manifest *Manifest
}

// ErrRefused is returned (wrapped, with the reason) for an input the
// instrumenter will not rewrite.
var ErrRefused = errors.New("cannot instrument")

func refuse(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrRefused, fmt.Sprintf(format, args...))
}

// Instrument rewrites the static Alpha ELF data (named name in messages).
func Instrument(data []byte, name string, opt Options) (*Result, error) {
	if opt.Mode != ModePixie && opt.Mode != ModePaths && opt.Mode != ModeCCT {
		return nil, fmt.Errorf("instrument: unknown mode %q (modes: %s, %s, %s)", opt.Mode, ModePixie, ModePaths, ModeCCT)
	}
	if opt.CCTChunkBytes != 0 && (opt.CCTChunkBytes < 4096 || opt.CCTChunkBytes%4096 != 0 || opt.CCTChunkBytes > 1<<30) {
		return nil, fmt.Errorf("instrument: CCT chunk size %d: want a multiple of 4096 up to 1 GB", opt.CCTChunkBytes)
	}
	if opt.CCTPaths && opt.Mode != ModeCCT {
		return nil, fmt.Errorf("instrument: paths per context are for the %s mode", ModeCCT)
	}
	if opt.CCTPaths && opt.Metrics {
		return nil, fmt.Errorf("instrument: the %s mode counts paths or metrics per context, not both", ModeCCT)
	}
	if opt.Metrics && opt.Mode != ModePaths && opt.Mode != ModeCCT {
		return nil, fmt.Errorf("instrument: metrics are for the %s and %s modes", ModePaths, ModeCCT)
	}
	if err := validPIC(opt.PIC); err != nil {
		return nil, err
	}
	if opt.DumpPath == "" || len(opt.DumpPath) > 1000 || strings.IndexByte(opt.DumpPath, 0) >= 0 {
		return nil, fmt.Errorf("instrument: dump path must be 1 to 1000 bytes, without NUL")
	}
	if _, _, err := ReadManifest(data); err == nil {
		return nil, refuse("%s: already instrumented (it has a %s section)", name, ManifestSection)
	}
	f, err := readELF(data)
	if err != nil {
		return nil, refuse("%s: %v", name, err)
	}
	im, err := elfimage.Parse(data, name)
	if err != nil {
		return nil, refuse("%v", err)
	}
	for _, s := range im.Segments {
		if s.Flags&elfimage.PermX != 0 && s.Flags&elfimage.PermW != 0 {
			return nil, refuse("%s: segment at %#x is writable and executable: code that writes text cannot be rewritten safely", name, s.Vaddr)
		}
	}
	code, err := cfg.NewCode(im, cfg.Options{})
	if err != nil {
		return nil, refuse("%s: %v", name, err)
	}
	procs, err := code.BuildAll()
	if err != nil {
		return nil, refuse("%s: %v", name, err)
	}
	var pl *planned
	switch opt.Mode {
	case ModePaths:
		pl, err = planPaths(procs, opt)
	case ModeCCT:
		pl, err = planCCT(procs, opt)
	default:
		pl, err = plan(procs, opt)
	}
	if err != nil {
		return nil, err
	}
	pl.manifest.OriginalID = im.ID.String()
	return pl.write(f, im, data, opt)
}
