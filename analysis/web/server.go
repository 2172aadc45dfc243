package web

import (
	"bytes"
	"context"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log"
	"math"
	"net/http"
	"strconv"
	"strings"

	"dcpi/analysis"
	"dcpi/analysis/report"
	"dcpi/analysis/trend"
	"dcpi/wire"
)

//go:embed templates/*.html static/*
var assets embed.FS

// Server is the web UI: an http.Handler serving every page of the UI over
// a Backend.
type Server struct {
	b     Backend
	mux   *http.ServeMux
	pages map[string]*template.Template
	// logf reports internal errors (status 500) and recovered panics.
	logf func(string, ...any)
}

// DefaultTopRows is how many procedures the top page shows without
// limit=N.
const DefaultTopRows = 50

// New returns the UI over b. logf (nil: the standard logger) hears of
// internal errors, which the pages show without detail beyond the error's
// message.
func New(b Backend, logf func(string, ...any)) *Server {
	if logf == nil {
		logf = log.Printf
	}
	s := &Server{b: b, mux: http.NewServeMux(), pages: map[string]*template.Template{}, logf: logf}
	funcs := template.FuncMap{
		"pct":  func(v float64) string { return strconv.FormatFloat(v, 'f', 2, 64) },
		"join": strings.Join,
		"base": func(p string) string {
			if i := strings.LastIndexByte(p, '/'); i >= 0 {
				return p[i+1:]
			}
			return p
		},
		"hex":       func(v uint64) string { return strconv.FormatUint(v, 16) },
		"epochList": epochList,
		"rate": func(r trend.Rate) string {
			if math.IsNaN(float64(r)) {
				return "—"
			}
			return strconv.FormatFloat(float64(r), 'f', 1, 64)
		},
	}
	for _, name := range []string{"top", "list", "flame", "diff", "diffflame", "trend", "regressions", "epochs", "hosts", "tool", "error"} {
		files := []string{"templates/layout.html", "templates/" + name + ".html"}
		if name == "flame" || name == "diffflame" {
			files = append(files, "templates/flamegraph.html")
		}
		s.pages[name] = template.Must(template.New("layout.html").Funcs(funcs).ParseFS(assets, files...))
	}
	static, _ := fs.Sub(assets, "static")
	s.mux.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(static)))
	s.mux.HandleFunc("GET /{$}", s.page("top", s.top))
	s.mux.HandleFunc("GET /list", s.page("list", s.list))
	s.mux.HandleFunc("GET /flame", s.page("flame", s.flame))
	s.mux.HandleFunc("GET /diff", s.page("diff", s.diff))
	s.mux.HandleFunc("GET /regressions", s.page("regressions", s.regressions))
	s.mux.HandleFunc("GET /diffflame", s.page("diffflame", s.diffFlame))
	s.mux.HandleFunc("GET /trend", s.page("trend", s.trend))
	s.mux.HandleFunc("GET /epochs", s.page("epochs", s.epochs))
	s.mux.HandleFunc("GET /hosts", s.page("hosts", s.hosts))
	s.mux.HandleFunc("GET /me", s.toolHandler("me", s.mePage))
	s.mux.HandleFunc("GET /values", s.toolHandler("values", s.valuesPage))
	s.mux.HandleFunc("GET /paths", s.toolHandler("paths", s.pathsPage))
	s.mux.HandleFunc("GET /pprof", s.pprof)
	s.registerAPI()
	s.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		s.render(w, "error", &pageData{Nav: "", Title: "not found", Status: http.StatusNotFound,
			Error: fmt.Sprintf("no page %s (pages: /, /list, /flame, /diff, /diffflame, /trend, /regressions, /me, /values, /paths, /epochs, /hosts, /pprof)", r.URL.Path)})
	})
	return s
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	defer func() {
		if v := recover(); v != nil {
			s.logf("web: %s %s: panic: %v", r.Method, r.URL, v)
			http.Error(w, "internal error (logged by the server)", http.StatusInternalServerError)
		}
	}()
	s.mux.ServeHTTP(w, r)
}

// pageData is what the layout renders around a view.
type pageData struct {
	Title string
	Nav   string // the view's name, for the navigation bar
	Path  string // the form's action
	Where string
	// Query is the filters as a query string ("?host=a", or ""), for
	// links that keep them; Form the filters as the form shows them.
	Query  string
	Form   formFilters
	Keep   map[string]string // view parameters the filter form keeps
	Status int
	Error  string
	Notice string
	// Empty: the source holds no samples at all (emptyError).
	Empty bool
	// Live: the source is collecting; the page refreshes itself when
	// what it shows changes (static/live.js), unless the reader says not.
	Live bool
	// Covered is the line that says what a time range selected.
	Covered string
	View    any
}

// formFilters are the filters as the form's text boxes show them
// (repeated values joined by commas).
type formFilters struct {
	Host, Select, Label, Epoch, Epochs, Since, From, To, Image, Event, PID, Search string
}

func formOf(f Filters) formFilters {
	var labels []string
	for k, v := range f.Labels {
		labels = append(labels, k+"="+v)
	}
	j := func(s []string) string { return strings.Join(s, ", ") }
	return formFilters{Host: j(f.Hosts), Select: strings.Join(f.Select, ","), Label: j(labels), Epoch: j(f.Epochs), Epochs: j(f.EpochRanges), Since: f.Since, From: f.From, To: f.To,
		Image: j(f.Images),
		Event: j(f.Events), PID: j(f.PIDs)}
}

// view computes a view's data from the request, filling pd; an error is
// the page's message (badRequest: status 400).
type view func(ctx context.Context, req request, pd *pageData) error

// viewParams are the parameters each view takes beyond the filters.
var viewParams = map[string][]string{
	"top":         {"q", "by", "limit"},
	"list":        {"proc", "in"},
	"me":          {"proc"},
	"values":      {"view"},
	"paths":       {"in"},
	"flame":       {"view", "min", "focus", "q", "color"},
	"diff":        {"a", "b", "z", "by", "limit"},
	"diffflame":   {"a", "b", "min", "focus", "q", "view"},
	"trend":       {"top", "plot", "measure"},
	"regressions": {"baseline", "top", "z", "min"},
	"epochs":      nil,
	"hosts":       nil,
}

// toolHandler is page for the tools' pages, which share one template
// (tool.html) and each have a name of their own in the navigation.
func (s *Server) toolHandler(name string, v view) http.HandlerFunc {
	return s.pageWith(name, "tool", v)
}

func (s *Server) page(name string, v view) http.HandlerFunc { return s.pageWith(name, name, v) }

func (s *Server) pageWith(name, tmpl string, v view) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		pd := &pageData{Nav: name, Title: name, Path: r.URL.Path, Where: s.b.Where(), Status: http.StatusOK, Live: s.b.Live()}
		req, err := parseRequest(r.URL.RawQuery, viewParams[name]...)
		if err == nil {
			pd.Query, pd.Form = req.with(), formOf(req.filters)
			err = v(r.Context(), req, pd)
		}
		if err != nil {
			// The page's frame (navigation, filters) with the message
			// where its content would be.
			pd.Status, pd.Error = s.status(r, err), err.Error()
			pd.View = nil
		}
		s.render(w, tmpl, pd)
	}
}

// status is an error's HTTP status: 400 for bad input, 500 (logged) for
// a failure of the source.
func (s *Server) status(r *http.Request, err error) int {
	var bad badRequest
	if errors.As(err, &bad) || errors.Is(err, analysis.ErrQuery) {
		return http.StatusBadRequest
	}
	s.logf("web: %s: %v", r.URL, err)
	return http.StatusInternalServerError
}

func (s *Server) render(w http.ResponseWriter, name string, pd *pageData) {
	var buf bytes.Buffer
	if err := s.pages[name].Execute(&buf, pd); err != nil {
		s.logf("web: rendering %s: %v", name, err)
		http.Error(w, "internal error rendering the page (logged by the server)", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(pd.Status)
	w.Write(buf.Bytes())
}

// selection checks the request's filters with the backend, and says on
// pd (when not nil) what a time range covered.
func (s *Server) selection(ctx context.Context, req request, pd *pageData) (Selection, error) {
	sel, err := s.b.Select(ctx, req.filters)
	if err != nil {
		return sel, badRequest{err}
	}
	if pd != nil {
		pd.Covered = sel.Covered
	}
	return sel, nil
}

// emptyError is the 400 of a selection that matched nothing because a
// filter names what the source lacks (Backend.Hint). When the source
// holds no samples at all, nothing is wrong with the filters: the page
// says so in its notice (pd), not as "no sample matches the filters".
func (s *Server) emptyError(ctx context.Context, sel Selection, pd *pageData) error {
	if h := s.b.Hint(ctx, sel); h != "" {
		return badf("nothing matches the filters: %s", h)
	}
	if t, err := report.Prof(ctx, s.b.Source(), report.ProfQuery{By: report.ByImage, Limit: 1}); err == nil && len(t.Rows) == 0 {
		pd.Empty = true
		pd.Notice = fmt.Sprintf("Nothing is stored in %s yet: no host has delivered samples. A node's samples arrive with its first flush; reload then.", s.b.Where())
	}
	return nil
}

// intParam parses a view's integer parameter (def when absent).
func intParam(req request, name string, def, lo int) (int, error) {
	v, err := req.one(name)
	if err != nil || v == "" {
		return def, err
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < lo {
		return 0, badf("%s=%q: want a whole number >= %d", name, v, lo)
	}
	return n, nil
}

func floatParam(req request, name string, def, lo, hi float64) (float64, error) {
	v, err := req.one(name)
	if err != nil || v == "" {
		return def, err
	}
	x, err := strconv.ParseFloat(v, 64)
	if err != nil || !(x >= lo && x <= hi) {
		return 0, badf("%s=%q: want a number from %g to %g", name, v, lo, hi)
	}
	return x, nil
}

func byParam(req request) (report.By, string, error) {
	v, err := req.one("by")
	if err != nil || v == "" {
		return report.ByProcedure, "", err
	}
	if by, err := report.ParseBy(v); err == nil {
		return by, "", nil
	}
	if !wire.ValidLabelName(v) {
		return 0, "", badf("by=%q: want procedure, image, or a label to group by (host, service, ...)", v)
	}
	return report.ByProcedure, v, nil
}
