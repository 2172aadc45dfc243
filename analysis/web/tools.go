package web

import (
	"bytes"
	"context"
	"slices"
	"strings"
)

// toolView is a page of one of the tools whose data is more than the
// samples: ProfileMe's instruction samples (/me), value sampling's hot
// lists (/values), the fleet's path profiles (/paths). Each shows the
// tool's own report, as the tool prints it, or the tool's words on what
// the source lacks and which command records it.
type toolView struct {
	Heading string
	Tool    string // the command the report is, e.g. "dcpi me"
	Text    string
	// Missing is the tool's message when the source has none of its
	// data; Hint the command that makes that data.
	Missing string
	Hint    string
	// Views links the other views of the page (values: latency,
	// frequent, semiinv), the current one with no Query.
	Views []byLink
}

// toolPage runs r over the page's selection into v.
func (s *Server) toolPage(ctx context.Context, req request, pd *pageData, r ToolReport, v *toolView) error {
	sel, err := s.selection(ctx, req, pd)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	if err := s.b.Report(ctx, r, sel, &buf); err != nil {
		if ctx.Err() != nil {
			return err
		}
		// The tools' errors say what the source lacks ("no ProfileMe
		// samples selected ..."): the page's content, not a failure.
		v.Missing = err.Error()
	}
	v.Text = buf.String()
	pd.Title, pd.View = v.Heading, v
	return nil
}

func (s *Server) mePage(ctx context.Context, req request, pd *pageData) error {
	proc, err := req.one("proc")
	if err != nil {
		return err
	}
	pd.Keep = map[string]string{"proc": proc}
	v := &toolView{Heading: "ProfileMe", Tool: "dcpi me",
		Hint: "ProfileMe samples come from the 21264 model: dcpi profile --model ev6 --profileme, or nodes and dcpi demo with --profileme"}
	if proc != "" {
		v.Heading, v.Tool = "ProfileMe: "+proc, "dcpi me "+proc
	}
	return s.toolPage(ctx, req, pd, ToolReport{Tool: "me", Procedure: proc}, v)
}

// valuesViews are dcpi values' --view.
var valuesViews = []string{"latency", "frequent", "semiinv"}

func (s *Server) valuesPage(ctx context.Context, req request, pd *pageData) error {
	view, err := req.one("view")
	if err != nil {
		return err
	}
	if view == "" {
		view = "latency"
	}
	if !slices.Contains(valuesViews, view) {
		return badf("view=%q: want %s", view, strings.Join(valuesViews, ", "))
	}
	pd.Keep = map[string]string{"view": view}
	v := &toolView{Heading: "Value sampling: " + view, Tool: "dcpi values --view " + view,
		Hint: "value samples come from dcpi profile, dcpi node or dcpi demo with --values MODULE (loadlat, regvals)"}
	for _, name := range valuesViews {
		l := byLink{Name: name}
		if name != view {
			l.Query = "/values" + req.with("view", name)
		}
		v.Views = append(v.Views, l)
	}
	return s.toolPage(ctx, req, pd, ToolReport{Tool: "values", View: view}, v)
}

func (s *Server) pathsPage(ctx context.Context, req request, pd *pageData) error {
	image, err := req.one("in")
	if err != nil {
		return err
	}
	pd.Keep = map[string]string{"in": image}
	v := &toolView{Heading: "Path profiles", Tool: "dcpi pp fleet",
		Hint: "path profiles are uploaded by dcpi pp upload (instrumented runs) or dcpi pp oracle --save (the simulator's ground truth)"}
	return s.toolPage(ctx, req, pd, ToolReport{Tool: "paths", Image: image}, v)
}
