package web

import (
	"fmt"
	"net/url"
	"slices"
	"strings"
)

// filterParams are the URL parameters of Filters, in the order links
// write them.
var filterParams = []string{"host", "select", "label", "epoch", "epochs", "since", "from", "to", "image", "event", "pid"}

// timeParams are the filters given once: a range has one start and one end.
var timeParams = []string{"since", "from", "to"}

// request is a page's parsed query string: the filters, and the view's
// own parameters.
type request struct {
	filters Filters
	// filterQuery is the filters re-encoded, for links that keep them.
	filterQuery string
	view        url.Values
}

// badRequest is an error about the request itself: rendered with status
// 400 and its message.
type badRequest struct{ err error }

func (e badRequest) Error() string { return e.err.Error() }
func (e badRequest) Unwrap() error { return e.err }

func badf(format string, args ...any) error { return badRequest{fmt.Errorf(format, args...)} }

// parseRequest splits rawQuery into filters and the view's parameters,
// refusing a malformed query string and a parameter neither the filters
// nor the view (viewParams) take.
func parseRequest(rawQuery string, viewParams ...string) (request, error) {
	var r request
	vals, err := url.ParseQuery(rawQuery)
	if err != nil {
		return r, badf("malformed query string: %v", err)
	}
	for name := range vals {
		if !slices.Contains(filterParams, name) && !slices.Contains(viewParams, name) {
			known := append(slices.Clone(filterParams), viewParams...)
			return r, badf("unknown parameter %q (this page takes: %s)", name, strings.Join(known, ", "))
		}
	}
	// A filter's values may be repeated or comma-separated (the form's
	// text boxes); an empty one (a box left blank) is no filter. A
	// selector's commas are its own: select is only repeated.
	for _, name := range filterParams {
		var list []string
		for _, v := range vals[name] {
			items := strings.Split(v, ",")
			if name == "select" {
				items = []string{v}
			}
			for _, item := range items {
				if item = strings.TrimSpace(item); item != "" {
					list = append(list, item)
				}
			}
		}
		if list == nil {
			delete(vals, name)
		} else {
			vals[name] = list
		}
	}
	f := &r.filters
	f.Hosts, f.Epochs, f.EpochRanges = vals["host"], vals["epoch"], vals["epochs"]
	f.Images, f.Events, f.PIDs, f.Select = vals["image"], vals["event"], vals["pid"], vals["select"]
	for _, name := range timeParams {
		if n := len(vals[name]); n > 1 {
			return r, badf("%s: given %d times; give it once", name, n)
		}
	}
	f.Since, f.From, f.To = strings.Join(vals["since"], ""), strings.Join(vals["from"], ""), strings.Join(vals["to"], "")
	for _, l := range vals["label"] {
		k, v, ok := strings.Cut(l, "=")
		if !ok || k == "" {
			return r, badf("label %q: want KEY=VALUE", l)
		}
		if f.Labels == nil {
			f.Labels = map[string]string{}
		}
		f.Labels[k] = v
	}
	keep := url.Values{}
	r.view = url.Values{}
	for name, vs := range vals {
		if slices.Contains(filterParams, name) {
			keep[name] = vs
		} else {
			r.view[name] = vs
		}
	}
	r.filterQuery = keep.Encode()
	return r, nil
}

// with is the filters' query string with the view parameters kv (name,
// value pairs; an empty value is left out), for a link.
func (r request) with(kv ...string) string {
	vals, _ := url.ParseQuery(r.filterQuery)
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] != "" {
			vals.Set(kv[i], kv[i+1])
		}
	}
	if len(vals) == 0 {
		return ""
	}
	return "?" + vals.Encode()
}

// withHosts is the filters' query string with the host filter replaced
// by hosts, for a link to a group of them.
func (r request) withHosts(hosts []string) string {
	vals, _ := url.ParseQuery(r.filterQuery)
	vals["host"] = hosts
	return "?" + vals.Encode()
}

// one returns the view parameter name's single value ("" if absent),
// refusing it given twice.
func (r request) one(name string) (string, error) {
	vs := r.view[name]
	switch len(vs) {
	case 0:
		return "", nil
	case 1:
		return strings.TrimSpace(vs[0]), nil
	}
	return "", badf("%s: given %d times; give it once", name, len(vs))
}
