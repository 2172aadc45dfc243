package telemetry

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Scrape is one scrape of a /metrics endpoint, parsed: what a test, or an
// operator's script, reads figures from (the conservation identity from
// the metrics alone, say).
type Scrape map[string]*dto.MetricFamily

// ParseScrape parses text in Prometheus's exposition format and checks it
// against client_golang's promlint rules (names, units, _total on
// counters, help text); a problem is an error naming the metric.
func ParseScrape(text []byte) (Scrape, error) {
	problems, err := promlint.New(bytes.NewReader(text)).Lint()
	if err != nil {
		return nil, fmt.Errorf("exposition: %w", err)
	}
	if len(problems) > 0 {
		var lines []string
		for _, p := range problems {
			lines = append(lines, p.Metric+": "+p.Text)
		}
		return nil, fmt.Errorf("promlint: %s", strings.Join(lines, "; "))
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(text))
	if err != nil {
		return nil, fmt.Errorf("exposition: %w", err)
	}
	return fams, nil
}

// Get scrapes url (an endpoint's /metrics) and parses what it answers.
func Get(url string) (Scrape, error) {
	resp, err := http.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s: %s", url, resp.Status, bytes.TrimSpace(body))
	}
	return ParseScrape(body)
}

// Sum adds up the values of name's series whose labels include match
// (nil: every series): counters, gauges and untyped values, and for a
// histogram its count of observations.
func (s Scrape) Sum(name string, match map[string]string) float64 {
	var sum float64
	for _, m := range s.series(name, match) {
		sum += value(m)
	}
	return sum
}

func value(m *dto.Metric) float64 {
	switch {
	case m.Counter != nil:
		return m.Counter.GetValue()
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	case m.Untyped != nil:
		return m.Untyped.GetValue()
	case m.Histogram != nil:
		return float64(m.Histogram.GetSampleCount())
	}
	return 0
}

// By is Sum per value of label: name's series matching match, summed by
// their value of label.
func (s Scrape) By(name, label string, match map[string]string) map[string]float64 {
	out := map[string]float64{}
	for _, m := range s.series(name, match) {
		for _, lp := range m.Label {
			if lp.GetName() == label {
				out[lp.GetValue()] += value(m)
			}
		}
	}
	return out
}

// Has reports whether the scrape has a family of that name.
func (s Scrape) Has(name string) bool { _, ok := s[name]; return ok }

func (s Scrape) series(name string, match map[string]string) []*dto.Metric {
	f, ok := s[name]
	if !ok {
		return nil
	}
	var out []*dto.Metric
	for _, m := range f.Metric {
		if matches(m, match) {
			out = append(out, m)
		}
	}
	return out
}

func matches(m *dto.Metric, match map[string]string) bool {
	for k, v := range match {
		found := false
		for _, lp := range m.Label {
			if lp.GetName() == k && lp.GetValue() == v {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}
