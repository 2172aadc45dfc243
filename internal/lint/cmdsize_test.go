package lint

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// The command is thin (docs/architecture.md): it parses flags into a
// package's configuration, makes one call and writes the result. The goal
// is at most 4,000 non-test lines in cmd/dcpi (help text included) and no
// function over 80 lines, help text aside. A new command's logic belongs
// in a package; what a command adds here, moving code out pays for.
const (
	maxCommandLines    = 4000 // non-test Go lines in cmd/dcpi
	maxCommandFuncBody = 80   // lines of one function there, help text aside
)

// funcLength is a function's length in lines without the lines its
// multi-line string literals take (a command's help text).
type funcLength struct {
	name  string
	pos   token.Position
	lines int
}

// commandSize measures the non-test Go files of dir: their total lines
// and every function's length, help text aside.
func commandSize(dir string) (total int, funcs []funcLength, err error) {
	fset := token.NewFileSet()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return 0, nil, err
	}
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return 0, nil, err
		}
		total += strings.Count(string(src), "\n")
		f, err := parser.ParseFile(fset, path, src, 0)
		if err != nil {
			return 0, nil, err
		}
		funcs = append(funcs, funcLengths(fset, f)...)
	}
	sort.Slice(funcs, func(i, j int) bool { return funcs[i].lines > funcs[j].lines })
	return total, funcs, nil
}

// funcLengths measures every function declared in f.
func funcLengths(fset *token.FileSet, f *ast.File) []funcLength {
	var out []funcLength
	for _, d := range f.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if !ok || fd.Body == nil {
			continue
		}
		start, end := fset.Position(fd.Pos()), fset.Position(fd.End())
		lines := end.Line - start.Line + 1
		ast.Inspect(fd.Body, func(n ast.Node) bool {
			if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
				lines -= fset.Position(lit.End()).Line - fset.Position(lit.Pos()).Line
			}
			return true
		})
		name := fd.Name.Name
		if fd.Recv != nil && len(fd.Recv.List) > 0 {
			name = recvType(fd.Recv.List[0].Type) + "." + name
		}
		out = append(out, funcLength{name: name, pos: start, lines: lines})
	}
	return out
}

func recvType(e ast.Expr) string {
	switch t := e.(type) {
	case *ast.StarExpr:
		return recvType(t.X)
	case *ast.Ident:
		return t.Name
	case *ast.IndexExpr:
		return recvType(t.X)
	}
	return "?"
}

// TestCommandIsThin holds cmd/dcpi to its size: at most maxCommandLines
// non-test lines and no function over maxCommandFuncBody lines, help text
// aside.
func TestCommandIsThin(t *testing.T) {
	total, funcs, err := commandSize(filepath.Join(moduleRoot(t), "cmd", "dcpi"))
	if err != nil {
		t.Fatal(err)
	}
	if total > maxCommandLines {
		t.Errorf("cmd/dcpi has %d non-test lines, over %d: move library logic into a package", total, maxCommandLines)
	}
	for _, f := range funcs {
		if f.lines > maxCommandFuncBody {
			t.Errorf("%s: %s is %d lines, over %d (help text aside): move its logic into a package", f.pos, f.name, f.lines, maxCommandFuncBody)
		}
	}
}

// TestFuncLengthsAsideHelpText: a multi-line string (a command's help)
// does not count; code lines do.
func TestFuncLengthsAsideHelpText(t *testing.T) {
	src := "package p\n\nfunc a() string {\n\tx := `one\ntwo\nthree`\n\treturn x\n}\n\nfunc (r *T) b() {\n\t_ = 1\n\t_ = 2\n}\n"
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "p.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	got := funcLengths(fset, f)
	if len(got) != 2 || got[0].name != "a" || got[0].lines != 4 || got[1].name != "T.b" || got[1].lines != 4 {
		t.Fatalf("%+v", got)
	}
}

// moduleRoot is the module's directory: this package's, two levels down.
func moduleRoot(t *testing.T) string {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(wd, "..", "..")
}
