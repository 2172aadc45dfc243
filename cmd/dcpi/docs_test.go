package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/spf13/pflag"
)

// The documentation's commands, checked so that they cannot drift from the
// binary. Every `dcpi ...` line of a ```sh block in README.md, docs/*.md
// and examples/README.md runs, in the order written, in one temporary
// directory per file (holding links to the repository's top-level entries,
// so relative paths such as workloads/bin/sort resolve, and written files
// stay there); /tmp/... paths are moved under that directory, and
// simulated time is capped (--seconds at most runSeconds, added to dcpi
// demo) to keep the whole check near half a minute. A block preceded by
//
//	<!-- docs-check: parse -->
//
// (a cluster of separate processes, a command that writes outside the
// directory, a program the reader builds) is only parsed: the command and
// its flags must exist and take the values given. So is every inline
// `dcpi ...` span of the prose and tables, where a flag may stand without
// its value ("`dcpi prof --host`").

// docsFiles are the documents whose commands are checked, relative to the
// repository root.
func docsFiles(root string) ([]string, error) {
	files, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		return nil, err
	}
	return append([]string{filepath.Join(root, "README.md"), filepath.Join(root, "examples", "README.md")}, files...), nil
}

// quickSeconds caps the simulated seconds of a documented command run by
// the check; runSeconds is a demo's whose data later commands read.
const (
	quickSeconds = 0.01
	runSeconds   = 0.1
)

type docMode int

const (
	docRun    docMode = iota // a line of a ```sh block: run it
	docParse                 // a line of a block marked parse: parse it
	docInline                // an inline span: parse it, a trailing flag may lack its value
)

// docCommand is a dcpi command line found in a document.
type docCommand struct {
	file string
	line int
	text string // as written, continuation lines joined, comment removed
	mode docMode
}

func (c docCommand) String() string { return fmt.Sprintf("%s:%d: %s", c.file, c.line, c.text) }

const parseMark = "<!-- docs-check: parse -->"

// inlineSpan is a code span: text between single backticks.
var inlineSpan = regexp.MustCompile("`([^`]+)`")

// extractCommands returns the dcpi commands of a Markdown document.
func extractCommands(file, text string) []docCommand {
	var out []docCommand
	lines := strings.Split(text, "\n")
	inFence, shell, marked, diagram := false, false, false, false
	var prose strings.Builder // text outside fences, with line breaks kept
	var cont strings.Builder  // a command continued with a backslash
	contLine := 0
	lastText := ""
	for i, raw := range lines {
		trimmed := strings.TrimSpace(raw)
		if strings.HasPrefix(trimmed, "```") {
			if !inFence {
				info := strings.TrimSpace(strings.TrimPrefix(trimmed, "```"))
				shell = info == "sh" || info == "bash" || info == "shell" || info == "console"
				marked = lastText == parseMark
				diagram = isDiagram(lines[i+1:])
			}
			inFence = !inFence
			prose.WriteString("\n")
			lastText = trimmed
			continue
		}
		if trimmed != "" {
			lastText = trimmed
		}
		if !inFence {
			prose.WriteString(raw + "\n")
			continue
		}
		prose.WriteString("\n")
		if !shell {
			// A block not marked as shell holds output, but a command
			// written there still must not drift: it is parsed. Output
			// lines that name the command ("dcpi demo: NATS at ...") are
			// not commands.
			if cmd := normalizeCommand(stripComment(trimmed)); !diagram && strings.HasPrefix(cmd, "dcpi ") {
				if f := strings.Fields(cmd); !strings.HasSuffix(f[1], ":") {
					out = append(out, docCommand{file: file, line: i + 1, text: cmd, mode: docParse})
				}
			}
			continue
		}
		if cont.Len() == 0 {
			contLine = i + 1
		}
		if strings.HasSuffix(trimmed, `\`) {
			cont.WriteString(strings.TrimSuffix(trimmed, `\`) + " ")
			continue
		}
		cont.WriteString(trimmed)
		cmd := normalizeCommand(stripComment(cont.String()))
		cont.Reset()
		if cmd == "dcpi" || strings.HasPrefix(cmd, "dcpi ") {
			mode := docRun
			if marked {
				mode = docParse
			}
			out = append(out, docCommand{file: file, line: contLine, text: cmd, mode: mode})
		}
	}
	p := prose.String()
	for _, m := range inlineSpan.FindAllStringSubmatchIndex(p, -1) {
		span := normalizeCommand(strings.Join(strings.Fields(p[m[2]:m[3]]), " "))
		if strings.HasPrefix(span, "dcpi ") {
			out = append(out, docCommand{file: file, line: strings.Count(p[:m[0]], "\n") + 1, text: span, mode: docInline})
		}
	}
	return out
}

// isDiagram reports whether the fenced block that starts with lines (up
// to its closing fence) is a drawing: box-drawing characters name roles,
// they do not run them.
func isDiagram(lines []string) bool {
	for _, l := range lines {
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			return false
		}
		if strings.ContainsFunc(l, func(r rune) bool { return r >= 0x2500 && r <= 0x257F }) {
			return true
		}
	}
	return false
}

// normalizeCommand turns the ways the documents invoke the binary (go run
// ./cmd/dcpi, ./dcpi, a $ prompt) into dcpi.
func normalizeCommand(s string) string {
	s = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(s), "$ "))
	for _, p := range []string{"go run ./cmd/dcpi", "./dcpi"} {
		if s == p || strings.HasPrefix(s, p+" ") {
			s = "dcpi" + strings.TrimPrefix(s, p)
		}
	}
	return strings.Join(strings.Fields(s), " ")
}

// stripComment removes a shell comment: a # at the start of a word,
// outside quotes.
func stripComment(s string) string {
	var quote rune
	for i, r := range s {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			}
		case r == '\'' || r == '"':
			quote = r
		case r == '#' && (i == 0 || s[i-1] == ' ' || s[i-1] == '\t'):
			return strings.TrimSpace(s[:i])
		}
	}
	return strings.TrimSpace(s)
}

// shellWord is a word of a command line: raw as written (quotes kept),
// value with its quotes removed; op marks an operator (|, &&, >, ...).
type shellWord struct {
	raw, value string
	op         bool
}

// splitShell splits a command line into words and operators. The
// documents separate operators by spaces, which is all it understands.
func splitShell(s string) ([]shellWord, error) {
	var words []shellWord
	var raw, val strings.Builder
	var quote rune
	inWord := false
	flush := func() {
		if inWord {
			w := shellWord{raw: raw.String(), value: val.String()}
			switch w.raw {
			case "|", "||", "&&", ";", "&", ">", ">>", "<", "2>", "2>&1", "&>":
				w.op = true
			}
			words = append(words, w)
		}
		raw.Reset()
		val.Reset()
		inWord = false
	}
	for _, r := range s {
		switch {
		case quote != 0:
			raw.WriteRune(r)
			if r == quote {
				quote = 0
			} else {
				val.WriteRune(r)
			}
		case r == '\'' || r == '"':
			quote = r
			raw.WriteRune(r)
			inWord = true
		case r == ' ' || r == '\t':
			flush()
		default:
			raw.WriteRune(r)
			val.WriteRune(r)
			inWord = true
		}
	}
	if quote != 0 {
		return nil, fmt.Errorf("unbalanced %c", quote)
	}
	flush()
	return words, nil
}

// dcpiSegments returns, for each dcpi invocation of a split command line
// (a run of words from a word "dcpi" to the next operator), the indexes
// of its arguments.
func dcpiSegments(words []shellWord) [][]int {
	var segs [][]int
	for i := 0; i < len(words); i++ {
		if words[i].op || words[i].value != "dcpi" || i > 0 && !words[i-1].op {
			continue
		}
		var seg []int
		for j := i + 1; j < len(words) && !words[j].op; j++ {
			seg = append(seg, j)
		}
		segs = append(segs, seg)
	}
	return segs
}

func values(words []shellWord, idx []int) []string {
	out := make([]string, len(idx))
	for k, i := range idx {
		out[k] = words[i].value
	}
	return out
}

// errUnknownCommand marks a command the binary does not have.
var errUnknownCommand = errors.New("no such command")

// parseDocArgs checks args (without the leading dcpi) against the command
// tree: the command exists, its flags exist and accept their values, and,
// unless inline, its positional arguments are what it takes.
func parseDocArgs(args []string, inline bool) error {
	root := newRootCommand()
	cmd, rest, err := root.Find(args)
	if err != nil {
		return fmt.Errorf("%w: %v", errUnknownCommand, err)
	}
	if err := cmd.ParseFlags(rest); errors.Is(err, pflag.ErrHelp) {
		return nil
	} else if err != nil {
		if inline && strings.HasPrefix(err.Error(), "flag needs an argument") && len(rest) > 0 && strings.HasPrefix(rest[len(rest)-1], "-") {
			return nil // "`dcpi prof --host`": a flag named in prose
		}
		return fmt.Errorf("%s: %v", cmd.CommandPath(), err)
	}
	pos := cmd.Flags().Args()
	if cmd.HasSubCommands() && cmd.Args != nil && len(pos) > 0 {
		// A command that groups others refuses an unknown one (suggest.Install).
		if err := cmd.Args(cmd, pos); err != nil && strings.HasPrefix(err.Error(), "unknown command") {
			return fmt.Errorf("%w: %v", errUnknownCommand, err)
		}
	}
	if !cmd.Runnable() {
		if len(pos) > 0 {
			return fmt.Errorf("%w: %s has no subcommand %q", errUnknownCommand, cmd.CommandPath(), pos[0])
		}
		if !inline {
			return fmt.Errorf("%s needs a subcommand", cmd.CommandPath())
		}
		return nil
	}
	if !inline {
		if err := cmd.ValidateArgs(pos); err != nil {
			return fmt.Errorf("%s: %v", cmd.CommandPath(), err)
		}
	}
	return nil
}

// checkParse parses every dcpi invocation of c.
func checkParse(c docCommand) error {
	words, err := splitShell(c.text)
	if err != nil {
		return err
	}
	for _, seg := range dcpiSegments(words) {
		if err := parseDocArgs(values(words, seg), c.mode == docInline); err != nil {
			return err
		}
	}
	return nil
}

// forRun rewrites a command line to run in dir: /tmp/ paths under dir,
// and every command with a --seconds flag (demo, node, tablesim) given at
// most quickSeconds of simulated time, or runSeconds for a demo whose
// --dir a later command reads (readLater, false for a demo continuing a
// fleet), enough for the procedures those commands name. A tablesim replaying a --trace keeps its own.
func forRun(text, dir string, readLater func(string) bool) (string, error) {
	words, err := splitShell(text)
	if err != nil {
		return "", err
	}
	for _, seg := range dcpiSegments(words) {
		args := values(words, seg)
		cmd, _, err := newRootCommand().Find(args)
		if err != nil || cmd.Flags().Lookup("seconds") == nil {
			cmd = nil
		}
		limit, seconds, replay := quickSeconds, -1, false
		for k, i := range seg {
			switch w := &words[i]; {
			case w.value == "--seconds" && k+1 < len(seg):
				seconds = seg[k+1]
			case w.value == "--trace":
				replay = true
			case w.value == "--dir" && k+1 < len(seg) && readLater(words[seg[k+1]].value):
				limit = runSeconds
			}
		}
		for _, i := range seg {
			if w := &words[i]; strings.HasPrefix(w.value, "/tmp/") {
				w.value = filepath.Join(dir, w.value)
				w.raw = strconv.Quote(w.value)
			}
		}
		switch {
		case cmd == nil || replay:
		case seconds >= 0:
			v := &words[seconds]
			if f, err := strconv.ParseFloat(v.value, 64); err == nil && f > limit {
				v.value = strconv.FormatFloat(limit, 'g', -1, 64)
				v.raw = v.value
			}
		default:
			// Right after the command's name: flags after a program's
			// name (dcpi profile -- PROG) are the program's.
			depth := len(strings.Fields(cmd.CommandPath())) - 1
			words[seg[depth-1]].raw += fmt.Sprintf(" --seconds %g", limit)
		}
	}
	raws := make([]string, len(words))
	for i, w := range words {
		raws[i] = w.raw
	}
	return strings.Join(raws, " "), nil
}

// TestDocsCommands checks every documented dcpi command: see the comment
// at the top of this file.
func TestDocsCommands(t *testing.T) {
	repo, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	files, err := docsFiles(repo)
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "bin")
	if out, err := exec.Command("go", "build", "-o", filepath.Join(bin, "dcpi"), ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	path := bin + string(os.PathListSeparator) + os.Getenv("PATH")
	start := time.Now()
	var ran, parsed atomic.Int64
	// Each file's commands run in order in its own directory; the files
	// run two at a time.
	t.Run("files", func(t *testing.T) {
		for _, f := range files {
			text, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			rel, _ := filepath.Rel(repo, f)
			cmds := extractCommands(rel, string(text))
			if len(cmds) == 0 {
				continue
			}
			t.Run(rel, func(t *testing.T) {
				t.Parallel()
				dir := docsWorkDir(t, repo)
				for n, c := range cmds {
					if err := checkParse(c); err != nil {
						if errors.Is(err, errUnknownCommand) {
							t.Errorf("%v\n\tthis dcpi has no such command (%v): a command documented before it exists, or one removed", c, err)
						} else {
							t.Errorf("%v\n\t%v", c, err)
						}
						continue
					}
					if c.mode != docRun {
						parsed.Add(1)
						continue
					}
					// A demo whose --dir a later command reads runs longer,
					// unless it continues a fleet an earlier command made:
					// the data those commands name is that one's.
					line, err := forRun(c.text, dir, func(path string) bool {
						for _, earlier := range cmds[:n] {
							if earlier.mode == docRun && strings.Contains(earlier.text, "--dir "+path) {
								return false
							}
						}
						for _, later := range cmds[n+1:] {
							if later.mode == docRun && strings.Contains(later.text, path) {
								return true
							}
						}
						return false
					})
					if err != nil {
						t.Errorf("%v\n\t%v", c, err)
						continue
					}
					t0 := time.Now()
					ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
					sh := exec.CommandContext(ctx, "sh", "-c", line)
					// On timeout, kill the shell's process group, dcpi with it, and
					// stop waiting for output it may have left a child holding.
					sh.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
					sh.Cancel = func() error { return syscall.Kill(-sh.Process.Pid, syscall.SIGKILL) }
					sh.WaitDelay = 5 * time.Second
					sh.Dir = dir
					sh.Env = append(os.Environ(), "PATH="+path)
					var out bytes.Buffer
					sh.Stdout, sh.Stderr = &out, &out
					err = sh.Run()
					cancel()
					ran.Add(1)
					t.Logf("%v (%.1f s)", c, time.Since(t0).Seconds())
					// A pipe's status is its last command's (| head): an error
					// dcpi printed counts as well.
					if err == nil && (strings.HasPrefix(out.String(), "dcpi: ") || strings.Contains(out.String(), "\ndcpi: ")) {
						err = errors.New("dcpi printed an error")
					}
					if err != nil {
						t.Errorf("%v\n\tran as: %s\n\t%v; output ends:\n%s", c, line, err, tail(out.String(), 15))
					}
				}
			})
		}
	})
	t.Logf("%d documented commands run, %d parsed, in %.1f s", ran.Load(), parsed.Load(), time.Since(start).Seconds())
	if ran.Load() < 10 || parsed.Load() < 10 {
		t.Errorf("ran %d, parsed %d: the extraction found fewer commands than the documents hold", ran.Load(), parsed.Load())
	}
}

// docsWorkDir is a temporary directory with a link to each top-level entry
// of the repository but docs/, which is copied: the documented commands
// that draw a figure write it into docs/, and a test must not rewrite the
// committed one. An empty tmp/ stands for the /tmp paths.
func docsWorkDir(t *testing.T, repo string) string {
	dir := t.TempDir()
	entries, err := os.ReadDir(repo)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") {
			continue
		}
		if e.Name() == "docs" {
			if err := os.CopyFS(filepath.Join(dir, "docs"), os.DirFS(filepath.Join(repo, "docs"))); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.Symlink(filepath.Join(repo, e.Name()), filepath.Join(dir, e.Name())); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, "tmp"), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return "\t\t" + strings.Join(lines, "\n\t\t")
}

// TestExtractCommands: the extraction finds sh-block lines (continued,
// commented, go run'd), marks parse-only blocks, finds inline spans
// across a line break, and ignores output blocks; the checks reject an
// unknown command, an unknown flag and a bad value, and accept a flag
// named without its value in prose.
func TestExtractCommands(t *testing.T) {
	doc := "Run `dcpi sim\nrun --truth FILE` or `go test`.\n\n" +
		"```sh\ngo run ./cmd/dcpi prof --db /tmp/p \\\n   --limit 3   # a comment\nmake ci\n```\n\n" +
		"```\ndcpi demo: NATS at nats://x\n```\n\n" +
		parseMark + "\n```sh\n./dcpi coordinator --id c4 | tee log\n```\n"
	got := extractCommands("x.md", doc)
	want := []docCommand{
		{"x.md", 5, "dcpi prof --db /tmp/p --limit 3", docRun},
		{"x.md", 16, "dcpi coordinator --id c4 | tee log", docParse},
		{"x.md", 1, "dcpi sim run --truth FILE", docInline},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) || len(got) != len(want) {
		t.Fatalf("got %v\nwant %v", got, want)
	}
	for i := range want {
		if got[i].mode != want[i].mode {
			t.Errorf("%v: mode %d, want %d", got[i], got[i].mode, want[i].mode)
		}
	}

	for _, c := range []struct {
		text string
		mode docMode
		bad  string
	}{
		{"dcpi nosuchtool", docParse, "no such command"}, // once "dcpi calc", which now exists
		{"dcpi epoch bogus", docParse, "no such command"},
		{"dcpi prof --no-such-flag", docParse, "unknown flag"},
		{"dcpi prof --limit many", docParse, "invalid argument"},
		{"dcpi disasm", docParse, "accepts 1 arg"},
		{"dcpi prof --host", docInline, ""},
		{"dcpi list PROC...", docInline, ""},
		{"dcpi node tablesim --help", docParse, ""},
		{"dcpi demo --dir D && dcpi prof --db D/c1 | head", docParse, ""},
		{"dcpi demo --dir D && dcpi prof --dbx D/c1", docParse, "unknown flag"},
	} {
		err := checkParse(docCommand{text: c.text, mode: c.mode})
		if c.bad == "" && err != nil || c.bad != "" && (err == nil || !strings.Contains(err.Error(), c.bad)) {
			t.Errorf("%q: %v, want %q", c.text, err, c.bad)
		}
	}

	for _, c := range []struct {
		in, want string
		later    bool
	}{
		{`dcpi node --seconds 0.5 --db /tmp/prof && dcpi demo --dir "/tmp/a b" | head -3`,
			`dcpi node --seconds 0.01 --db "/w/tmp/prof" && dcpi demo --seconds 0.01 --dir "/w/tmp/a b" | head -3`, false},
		{`dcpi demo --dir D`, `dcpi demo --seconds 0.1 --dir D`, true},
		{`dcpi node tablesim --trace /tmp/p.trace`, `dcpi node tablesim --trace "/w/tmp/p.trace"`, false},
		{`dcpi node tablesim --mix processes`, `dcpi node tablesim --seconds 0.01 --mix processes`, false},
		{`dcpi sim run --seconds 0.005 hello`, `dcpi sim run --seconds 0.005 hello`, false},
		{`dcpi prof --db D/c1`, `dcpi prof --db D/c1`, false},
	} {
		line, err := forRun(c.in, "/w", func(string) bool { return c.later })
		if err != nil || line != c.want {
			t.Errorf("forRun(%q): %q, %v\nwant %q", c.in, line, err, c.want)
		}
	}
}
