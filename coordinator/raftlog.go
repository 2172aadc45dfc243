package coordinator

import (
	"context"
	"fmt"
	"io"
	"log"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"
)

// raftLogger is the hclog.Logger raft and its stores are given, over a
// log/slog handler, so that their lines join the process's one logger
// with one timestamp (hclog's own formatter stamps every line, and a line
// it writes into another logger is stamped twice).
type raftLogger struct {
	h     slog.Handler
	name  string
	attrs []any // implied key/value pairs of With
}

// newRaftLogger returns the hclog.Logger of replica id over h.
func newRaftLogger(h slog.Handler, id string) hclog.Logger {
	return &raftLogger{h: h, name: "raft " + id}
}

// slogLevel maps raft's levels onto slog's. Raft's Info lines (entering
// follower state, election won, pipelining) are its internal state
// changes, which the replica reports in its own words (leader, lost
// leadership), so they are Debug here: shown with --verbose, as Trace and
// Debug are.
func slogLevel(l hclog.Level) slog.Level {
	switch l {
	case hclog.Trace:
		return slog.LevelDebug - 4
	case hclog.Debug, hclog.Info, hclog.NoLevel, hclog.DefaultLevel:
		return slog.LevelDebug
	case hclog.Warn:
		return slog.LevelWarn
	default: // Error, Off
		return slog.LevelError
	}
}

func (l *raftLogger) Log(level hclog.Level, msg string, args ...any) {
	sl := slogLevel(level)
	ctx := context.Background()
	if !l.h.Enabled(ctx, sl) {
		return
	}
	r := slog.NewRecord(time.Now(), sl, msg, 0)
	r.AddAttrs(slog.String("component", l.name))
	r.AddAttrs(pairs(l.attrs)...)
	r.AddAttrs(pairs(args)...)
	_ = l.h.Handle(ctx, r)
}

// pairs turns hclog's alternating keys and values into attributes. A key
// that is not a string, or a value without a key, is kept under "arg".
func pairs(args []any) []slog.Attr {
	var out []slog.Attr
	for i := 0; i < len(args); i += 2 {
		key, ok := args[i].(string)
		if !ok || i+1 == len(args) {
			out = append(out, slog.Any("arg", args[i]))
			i--
			continue
		}
		// Values print as hclog prints them: raft passes itself
		// ("follower", r) for its String.
		v := args[i+1]
		switch x := v.(type) {
		case hclog.Format:
			if len(x) == 0 {
				break
			}
			if s, ok := x[0].(string); ok {
				v = fmt.Sprintf(s, x[1:]...)
			}
		case error:
			v = x.Error()
		case fmt.Stringer:
			v = x.String()
		}
		out = append(out, slog.Any(key, v))
	}
	return out
}

func (l *raftLogger) Trace(msg string, args ...any) { l.Log(hclog.Trace, msg, args...) }
func (l *raftLogger) Debug(msg string, args ...any) { l.Log(hclog.Debug, msg, args...) }
func (l *raftLogger) Info(msg string, args ...any)  { l.Log(hclog.Info, msg, args...) }
func (l *raftLogger) Warn(msg string, args ...any)  { l.Log(hclog.Warn, msg, args...) }
func (l *raftLogger) Error(msg string, args ...any) { l.Log(hclog.Error, msg, args...) }

func (l *raftLogger) enabled(level hclog.Level) bool {
	return l.h.Enabled(context.Background(), slogLevel(level))
}

func (l *raftLogger) IsTrace() bool { return l.enabled(hclog.Trace) }
func (l *raftLogger) IsDebug() bool { return l.enabled(hclog.Debug) }
func (l *raftLogger) IsInfo() bool  { return l.enabled(hclog.Info) }
func (l *raftLogger) IsWarn() bool  { return l.enabled(hclog.Warn) }
func (l *raftLogger) IsError() bool { return l.enabled(hclog.Error) }

func (l *raftLogger) ImpliedArgs() []any { return l.attrs }

func (l *raftLogger) With(args ...any) hclog.Logger {
	c := *l
	c.attrs = append(append([]any(nil), l.attrs...), args...)
	return &c
}

func (l *raftLogger) Name() string { return l.name }

func (l *raftLogger) Named(name string) hclog.Logger {
	c := *l
	c.name = l.name + "." + name
	return &c
}

func (l *raftLogger) ResetNamed(name string) hclog.Logger {
	c := *l
	c.name = name
	return &c
}

// SetLevel does nothing: the level is the handler's, set once for the
// process (--verbose).
func (l *raftLogger) SetLevel(hclog.Level) {}

func (l *raftLogger) GetLevel() hclog.Level {
	for _, lv := range []hclog.Level{hclog.Trace, hclog.Debug, hclog.Warn} {
		if l.enabled(lv) {
			return lv
		}
	}
	return hclog.Error
}

func (l *raftLogger) StandardLogger(opts *hclog.StandardLoggerOptions) *log.Logger {
	return log.New(l.StandardWriter(opts), "", 0)
}

// StandardWriter is for libraries that take an io.Writer: each line it is
// given is logged at Info, or at the level its "[WARN]"-style prefix
// names.
func (l *raftLogger) StandardWriter(*hclog.StandardLoggerOptions) io.Writer {
	return &logWriter{logf: func(format string, args ...any) {
		line := fmt.Sprintf(format, args...)
		level := hclog.Info
		for _, p := range []struct {
			tag string
			lv  hclog.Level
		}{{"[ERROR]", hclog.Error}, {"[ERR]", hclog.Error}, {"[WARN]", hclog.Warn}, {"[DEBUG]", hclog.Debug}, {"[TRACE]", hclog.Trace}, {"[INFO]", hclog.Info}} {
			if strings.HasPrefix(line, p.tag) {
				level, line = p.lv, strings.TrimSpace(strings.TrimPrefix(line, p.tag))
				break
			}
		}
		l.Log(level, line)
	}}
}

var _ hclog.Logger = (*raftLogger)(nil)

// logfHandler writes Warn and above into a Logf, as one line each with no
// time of its own (the Logf's logger has one): "raft c1: WARN message
// key=value ...", the component first, as hclog wrote it.
type logfHandler struct {
	logf  func(string, ...any)
	attrs []slog.Attr
}

func (h logfHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelWarn }

func (h logfHandler) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	var rest []slog.Attr
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "component" {
			b.WriteString(a.Value.String() + ": ")
		} else {
			rest = append(rest, a)
		}
		return true
	})
	b.WriteString(r.Level.String() + " " + r.Message)
	for _, a := range append(append([]slog.Attr(nil), h.attrs...), rest...) {
		v := a.Value.Resolve().String()
		if v == "" || strings.ContainsAny(v, " \t\"=") {
			v = strconv.Quote(v)
		}
		b.WriteString(" " + a.Key + "=" + v)
	}
	h.logf("%s", b.String())
	return nil
}

func (h logfHandler) WithAttrs(as []slog.Attr) slog.Handler {
	h.attrs = append(append([]slog.Attr(nil), h.attrs...), as...)
	return h
}

// WithGroup is not used by raftLogger; groups are flattened.
func (h logfHandler) WithGroup(string) slog.Handler { return h }
