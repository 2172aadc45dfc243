package cluster

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"dcpi/analysis/regress"
	"dcpi/analysis/regress/regresstest"
)

// rulesDir holds the example alerting rules of the regression watch and
// their promtool unit tests (docs/alerts.md).
var rulesDir = filepath.Join("..", "examples", "prometheus")

// TestRegressionRulesNameOurMetrics: every dcpi_regression_* name the
// example rules use is one the watch exports, so a renamed metric cannot
// leave rules that never fire.
func TestRegressionRulesNameOurMetrics(t *testing.T) {
	rules, err := os.ReadFile(filepath.Join(rulesDir, "dcpi-rules.yml"))
	if err != nil {
		t.Fatal(err)
	}
	src := &fakeEpochs{}
	src.set(regresstest.Steady(2))
	w, err := NewRegressionWatch(src, regress.DefaultOptions(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Poll(context.Background()); err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(w)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	exported := map[string]bool{"dcpi_regression_share_change_zscore": true} // no series without a finding
	for _, mf := range mfs {
		exported[mf.GetName()] = true
	}
	names := regexp.MustCompile(`dcpi_regression_[a-z_]+`).FindAllString(string(rules), -1)
	if len(names) == 0 {
		t.Fatal("the rules name no dcpi_regression_ metric")
	}
	for _, n := range names {
		if !exported[n] {
			t.Errorf("the rules use %s, which the watch does not export", n)
		}
	}
}

// TestRegressionRulesPromtool checks the example rules with promtool
// (check rules, and test rules on the unit tests beside them), when
// promtool is installed: apt-get install prometheus (CI's .ci/run does).
func TestRegressionRulesPromtool(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Skip("promtool not on PATH (apt-get install prometheus); check by hand: cd examples/prometheus && promtool check rules dcpi-rules.yml && promtool test rules dcpi-rules_test.yml")
	}
	for _, args := range [][]string{{"check", "rules", "dcpi-rules.yml"}, {"test", "rules", "dcpi-rules_test.yml"}} {
		cmd := exec.Command(promtool, args...)
		cmd.Dir = rulesDir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("promtool %v: %v\n%s", args, err, out)
		}
	}
}
