package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"dcpi/analysis"
	"dcpi/analysis/report"
)

// The JSON API: the queries the tools make, read-only, each answering
// with the JSON the tool prints with --json (its machine interface), so
// a dashboard and a script read one format. Every endpoint takes the
// pages' filters (host, select, label, epoch, epochs, since, from, to,
// image, event, pid) and its own parameters; openapi.json describes
// them. A bad request is a 400, an unknown endpoint a 404, a failure of
// the source a 500, each with {"error": "..."}.

// apiVersion prefixes the endpoints; a change that breaks a client gets
// a new one.
const apiVersion = "/api/v1/"

// apiParams are each endpoint's own parameters beyond the filters.
var apiParams = map[string][]string{
	"prof":   {"by", "limit"},
	"list":   {"proc", "in"},
	"stacks": {"order"},
	"trend":  {"top", "measure"},
	"diff":   {"a", "b", "z", "by", "limit"},
	"epochs": {},
	"hosts":  {},
	"pprof":  {},
}

// jsonWriter is a tool's report that writes its own JSON.
type jsonWriter interface{ WriteJSON(io.Writer) error }

// jsonValue writes a value as the reports do: indented by two spaces.
type jsonValue struct{ v any }

func (j jsonValue) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(j.v)
}

type apiQuery func(ctx context.Context, req request) (jsonWriter, error)

func (s *Server) registerAPI() {
	for name, q := range map[string]apiQuery{
		"prof": s.apiProf, "list": s.apiList, "stacks": s.apiStacks, "trend": s.apiTrend, "diff": s.apiDiff,
		"epochs": s.apiEpochs, "hosts": s.apiHosts,
	} {
		s.mux.HandleFunc("GET "+apiVersion+name, s.api(name, q))
	}
	s.mux.HandleFunc("GET "+apiVersion+"pprof", s.pprof)
	s.mux.HandleFunc("GET "+apiVersion+"openapi.json", func(w http.ResponseWriter, r *http.Request) {
		b, _ := assets.ReadFile("static/openapi.json")
		w.Header().Set("Content-Type", "application/json")
		w.Write(b)
	})
	s.mux.HandleFunc(apiVersion, func(w http.ResponseWriter, r *http.Request) {
		apiError(w, http.StatusNotFound, fmt.Sprintf("no endpoint %s (see %sopenapi.json)", r.URL.Path, apiVersion))
	})
}

// api serves one endpoint: the request parsed as a page's, the query
// run, its JSON written whole or not at all.
func (s *Server) api(name string, q apiQuery) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		req, err := parseRequest(r.URL.RawQuery, apiParams[name]...)
		var out jsonWriter
		if err == nil {
			out, err = q(r.Context(), req)
		}
		if err != nil {
			apiError(w, s.status(r, err), err.Error())
			return
		}
		var buf strings.Builder
		if err := out.WriteJSON(&buf); err != nil {
			apiError(w, s.status(r, err), err.Error())
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		io.WriteString(w, buf.String())
	}
}

func apiError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	jsonValue{map[string]string{"error": msg}}.WriteJSON(w)
}

// apiSelection is the request's filters checked, as a page's.
func (s *Server) apiSelection(ctx context.Context, req request) (Selection, error) {
	return s.selection(ctx, req, &pageData{})
}

// apiProf is dcpi prof --json: by procedure (default), image or a label,
// every row unless limit= (as the tool; the page shows the top 50).
func (s *Server) apiProf(ctx context.Context, req request) (jsonWriter, error) {
	sel, err := s.apiSelection(ctx, req)
	if err != nil {
		return nil, err
	}
	by, label, err := byParam(req)
	if err != nil {
		return nil, err
	}
	limit, err := intParam(req, "limit", 0, 0)
	if err != nil {
		return nil, err
	}
	if label != "" {
		return s.b.Groups(ctx, sel, label, limit)
	}
	return report.Prof(ctx, s.b.Source(), report.ProfQuery{Filter: sel.Filter, Events: sel.Events, ImagePaths: sel.ImagePaths, By: by, Limit: limit})
}

// apiList is dcpi list --json PROC: the annotated listing.
func (s *Server) apiList(ctx context.Context, req request) (jsonWriter, error) {
	proc, err := req.one("proc")
	if err != nil {
		return nil, err
	}
	if proc == "" {
		return nil, badf("give a procedure: proc=NAME")
	}
	in, err := req.one("in")
	if err != nil {
		return nil, err
	}
	sel, err := s.apiSelection(ctx, req)
	if err != nil {
		return nil, err
	}
	if in != "" {
		sel.ImagePaths, sel.Filter.Images = []string{in}, nil
	}
	return report.List(ctx, s.b.Source(), report.ListQuery{Filter: sel.Filter, Events: sel.Events, ImagePaths: sel.ImagePaths,
		Procedures: []string{proc}, Files: s.b.Files(), Source: s.b.SourceFile})
}

// apiStacks is dcpi stacks --json: the whole call tree of the first
// event given (cycles by default), top-down unless order=bottom-up.
func (s *Server) apiStacks(ctx context.Context, req request) (jsonWriter, error) {
	sel, err := s.apiSelection(ctx, req)
	if err != nil {
		return nil, err
	}
	order, err := req.one("order")
	if err != nil {
		return nil, err
	}
	if order != "" && order != "top-down" && order != "bottom-up" {
		return nil, badf("order=%q: want top-down or bottom-up", order)
	}
	q := report.StackQuery{Filter: sel.Filter, ImagePaths: sel.ImagePaths}
	if len(sel.Events) > 0 {
		q.Event = sel.Events[0]
	}
	t, err := report.Tree(ctx, s.b.Source(), report.TreeQuery{StackQuery: q, TopDown: order != "bottom-up"})
	if errors.Is(err, analysis.ErrNoStacks) {
		return nil, badf("%v", err)
	}
	// As dcpi stacks: a selection without stacks is an empty tree (the
	// tool says so on standard error, which JSON has not).
	return t, err
}

// apiTrend is dcpi trend --json: the trend page's query.
func (s *Server) apiTrend(ctx context.Context, req request) (jsonWriter, error) {
	pd := &pageData{}
	if err := s.trend(ctx, req, pd); err != nil {
		return nil, err
	}
	return pd.View.(*trendView).Trend, nil
}

// apiDiff is dcpi diff --json --a A --b B: the diff page's query.
func (s *Server) apiDiff(ctx context.Context, req request) (jsonWriter, error) {
	pd := &pageData{}
	if err := s.diff(ctx, req, pd); err != nil {
		return nil, err
	}
	return pd.View.(*diffView).Table, nil
}

// apiEpochs lists the epochs as the epochs page does.
func (s *Server) apiEpochs(ctx context.Context, req request) (jsonWriter, error) {
	eps, err := s.b.Epochs(ctx)
	if eps == nil {
		eps = []Epoch{}
	}
	return jsonValue{eps}, err
}

// apiHosts lists the node registry as the hosts page does.
func (s *Server) apiHosts(ctx context.Context, req request) (jsonWriter, error) {
	hosts, err := s.b.Hosts(ctx)
	if hosts == nil {
		hosts = []Host{}
	}
	return jsonValue{hosts}, err
}
