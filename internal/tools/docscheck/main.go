// Command docscheck keeps the documentation true to the code. It checks
// that
//
//   - every package of the module has a doc comment;
//   - README's package table names every package outside internal/ (test
//     kits, whose names end in "test", excepted), and nothing that does not
//     exist;
//   - every relative link in README.md and docs/*.md leads to a file;
//   - every benchmark command in README's performance table names a
//     package that has a benchmark its -bench pattern matches;
//   - Go comments cite the papers' sections, not the project's issue
//     numbers, which mean nothing to a reader of the code.
//
// Run it from the module root: go run ./internal/tools/docscheck
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

type pkg struct {
	ImportPath, Dir, Doc, Name string
}

type checker struct {
	problems []string
	// benchNames are each package's benchmark names, listed once: a
	// listing links the package's test binary.
	benchNames map[string][]string
}

func (c *checker) fail(format string, args ...any) {
	c.problems = append(c.problems, fmt.Sprintf(format, args...))
}

func main() {
	var c checker
	pkgs, module, err := listPackages()
	if err != nil {
		fmt.Fprintln(os.Stderr, "docscheck:", err)
		os.Exit(2)
	}
	readme, err := os.ReadFile("README.md")
	if err != nil {
		fmt.Fprintln(os.Stderr, "docscheck:", err)
		os.Exit(2)
	}
	c.packageDocs(pkgs)
	c.packageTable(string(readme), pkgs, module)
	c.links()
	c.benchmarks(string(readme))
	c.issueCitations()
	for _, p := range c.problems {
		fmt.Println(p)
	}
	if len(c.problems) > 0 {
		fmt.Printf("docscheck: %d problems\n", len(c.problems))
		os.Exit(1)
	}
	fmt.Println("docscheck: ok")
}

func listPackages() ([]pkg, string, error) {
	out, err := exec.Command("go", "list", "-json", "./...").Output()
	if err != nil {
		return nil, "", fmt.Errorf("go list: %w", err)
	}
	var pkgs []pkg
	dec := json.NewDecoder(bytes.NewReader(out))
	for dec.More() {
		var p pkg
		if err := dec.Decode(&p); err != nil {
			return nil, "", err
		}
		pkgs = append(pkgs, p)
	}
	mod, err := exec.Command("go", "list", "-m").Output()
	if err != nil {
		return nil, "", fmt.Errorf("go list -m: %w", err)
	}
	return pkgs, strings.TrimSpace(string(mod)), nil
}

func (c *checker) packageDocs(pkgs []pkg) {
	for _, p := range pkgs {
		if strings.TrimSpace(p.Doc) == "" {
			c.fail("%s: no package doc comment", p.ImportPath)
		}
	}
}

// tableRow matches a row of README's package table: | `path` | owns |.
var tableRow = regexp.MustCompile("^\\| `([a-z0-9_/]+)` \\|")

func (c *checker) packageTable(readme string, pkgs []pkg, module string) {
	listed := map[string]bool{}
	for _, line := range strings.Split(readme, "\n") {
		if m := tableRow.FindStringSubmatch(line); m != nil {
			listed[m[1]] = true
		}
	}
	if len(listed) == 0 {
		c.fail("README.md: no package table (rows like | `node` | ... |)")
		return
	}
	exists := map[string]bool{}
	for _, p := range pkgs {
		rel := strings.TrimPrefix(strings.TrimPrefix(p.ImportPath, module), "/")
		exists[rel] = true
		if strings.HasPrefix(rel, "internal/") || strings.HasSuffix(p.Name, "test") || p.Name == "main" && rel != "cmd/dcpi" {
			continue
		}
		if !listed[rel] {
			c.fail("README.md: package table has no row for %s", rel)
		}
	}
	for rel := range listed {
		if !exists[rel] {
			if st, err := os.Stat(rel); err != nil || !st.IsDir() {
				c.fail("README.md: package table names %s, which does not exist", rel)
			}
		}
	}
}

var mdLink = regexp.MustCompile(`\]\(([^)#\s]+)(#[^)]*)?\)`)

// outsidePath matches a path written in backquotes that climbs out of the
// directory it is read from (`../shared/DESIGN.md`).
var outsidePath = regexp.MustCompile("`(\\.\\./[^`]*)`")

func (c *checker) links() {
	files, _ := filepath.Glob("docs/*.md")
	files = append([]string{"README.md"}, files...)
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			c.fail("%s: %v", f, err)
			continue
		}
		for _, m := range mdLink.FindAllStringSubmatch(string(data), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			path := filepath.Join(filepath.Dir(f), target)
			if !insideRepo(path) {
				// A clone has only the repository: a link out of it is broken there.
				c.fail("%s: link to %s: outside the repository", f, target)
			} else if _, err := os.Stat(path); err != nil {
				c.fail("%s: link to %s: no such file", f, target)
			}
		}
		for _, m := range outsidePath.FindAllStringSubmatch(string(data), -1) {
			// Prose names paths from the repository's root.
			if !insideRepo(m[1]) {
				c.fail("%s: cites %s, outside the repository (a clone does not have it)", f, m[1])
			}
		}
	}
}

// insideRepo reports whether a path relative to the repository's root
// stays inside it.
func insideRepo(path string) bool {
	rel := filepath.Clean(path)
	return rel != ".." && !strings.HasPrefix(rel, "../") && !filepath.IsAbs(rel)
}

// benchCmd finds "-bench PATTERN" and the package paths of a command.
var (
	benchFlag = regexp.MustCompile(`-bench[= ]'?([^' ]+)'?`)
	pkgArg    = regexp.MustCompile(`(?:^|\s)(\./[A-Za-z0-9_/]+/?)(?:\s|$)`)
	// make bench BENCH='pattern' PKG=./pkg
	makeBench = regexp.MustCompile(`BENCH='?([^' ]+)'?`)
	makePkg   = regexp.MustCompile(`PKG=(\./[A-Za-z0-9_/]+/?)`)
)

func (c *checker) benchmarks(readme string) {
	seen := map[string]bool{}
	sc := bufio.NewScanner(strings.NewReader(readme))
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "|") {
			continue
		}
		// In a table, GitHub's markdown writes a pipe inside code as \|.
		line = strings.ReplaceAll(line, `\|`, "|")
		for _, cell := range strings.Split(line, "`") {
			var bm []string
			var pm [][]string
			switch {
			case strings.Contains(cell, "go test") && strings.Contains(cell, "-bench"):
				bm, pm = benchFlag.FindStringSubmatch(cell), pkgArg.FindAllStringSubmatch(cell, -1)
			case strings.HasPrefix(cell, "make bench"):
				bm, pm = makeBench.FindStringSubmatch(cell), makePkg.FindAllStringSubmatch(cell, -1)
			default:
				continue
			}
			if bm == nil || pm == nil {
				c.fail("README.md: cannot read the benchmark command %q", cell)
				continue
			}
			for _, p := range pm {
				key := p[1] + " " + bm[1]
				if seen[key] {
					continue
				}
				seen[key] = true
				c.benchmarkExists(p[1], bm[1], cell)
			}
		}
	}
}

func (c *checker) benchmarkExists(pkgPath, pattern, cmd string) {
	// -bench takes a slash-separated list of patterns, one per level of
	// sub-benchmark; the first names the top-level benchmark.
	top := strings.SplitN(pattern, "/", 2)[0]
	if top == "." || top == "" {
		top = "."
	}
	re, err := regexp.Compile(top)
	if err != nil {
		c.fail("README.md: %q: bad -bench pattern: %v", cmd, err)
		return
	}
	names, listed := c.benchNames[pkgPath]
	if !listed {
		out, err := exec.Command("go", "test", "-run", "^$", "-list", "^Benchmark", pkgPath).Output()
		if err != nil {
			c.fail("README.md: %q: go test -list %s: %v", cmd, pkgPath, err)
			return
		}
		for _, l := range strings.Split(string(out), "\n") {
			if strings.HasPrefix(l, "Benchmark") {
				names = append(names, l)
			}
		}
		if c.benchNames == nil {
			c.benchNames = map[string][]string{}
		}
		c.benchNames[pkgPath] = names
	}
	if !slices.ContainsFunc(names, func(n string) bool { return re.MatchString(strings.TrimPrefix(n, "Benchmark")) || re.MatchString(n) }) {
		c.fail("README.md: %q: no benchmark in %s matches %q", cmd, pkgPath, top)
	}
}

// issueRef is a comment citing the project's own tracker by number (the
// word, a space, digits); an upstream project's ("issue #31 there") is a
// citation a reader can follow and is allowed.
var issueRef = regexp.MustCompile(`(?i)//.*\bissue \d+\b`)

func (c *checker) issueCitations() {
	filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) && path != "." {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for i, line := range strings.Split(string(data), "\n") {
			if issueRef.MatchString(line) {
				c.fail("%s:%d: a comment cites a project issue; cite the paper or say why: %s", path, i+1, strings.TrimSpace(line))
			}
		}
		return nil
	})
}
