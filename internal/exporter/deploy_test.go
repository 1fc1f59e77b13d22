package exporter

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/rdmalab/rdmalab/internal/testhost"
	"sigs.k8s.io/yaml"
)

const deployDir = "../../deploy"

// promql keywords and the label lists of by/without/on/ignoring/group_*
// are not metric names.
var (
	promqlStrings   = regexp.MustCompile(`"(?:[^"\\]|\\.)*"`)
	promqlMatchers  = regexp.MustCompile(`\{[^}]*\}`)
	promqlRanges    = regexp.MustCompile(`\[[^\]]*\]`)
	promqlGrouping  = regexp.MustCompile(`\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)`)
	promqlIdent     = regexp.MustCompile(`[A-Za-z_:][A-Za-z0-9_:]*(\s*\()?`)
	promqlNumber    = regexp.MustCompile(`\b\d+(?:\.\d+)?(?:e[+-]?\d+|(?:ms|s|m|h|d|w|y))?\b`)
	promqlKeywords  = []string{"and", "or", "unless", "bool", "offset", "by", "without", "on", "ignoring", "group_left", "group_right", "inf", "nan"}
	dashboardVarsRE = regexp.MustCompile(`\$(__rate_interval|__interval|__range|\{?instance\}?|\{?device\}?)`)
)

// metricsIn returns the metric names an expression selects: identifiers
// that are not functions, keywords, label names or numbers.
func metricsIn(expr string) []string {
	e := promqlStrings.ReplaceAllString(expr, `""`)
	e = promqlMatchers.ReplaceAllString(e, " ")
	e = promqlRanges.ReplaceAllString(e, " ")
	e = promqlGrouping.ReplaceAllString(e, " ")
	e = promqlNumber.ReplaceAllString(e, " ")
	var out []string
	for _, m := range promqlIdent.FindAllStringSubmatch(e, -1) {
		name := strings.TrimRight(strings.TrimSuffix(strings.TrimSpace(m[0]), "("), " ")
		if m[1] != "" || slices.Contains(promqlKeywords, strings.ToLower(name)) {
			continue // a function call or a keyword
		}
		out = append(out, name)
	}
	return out
}

func TestMetricsIn(t *testing.T) {
	got := metricsIn(`max by (instance, device) (rate(a_total{x="y{}"}[5m]) or b) / on (device) group_left(port) c > 1e9 and time() - d offset 1h`)
	if want := []string{"a_total", "b", "c", "d"}; !slices.Equal(got, want) {
		t.Errorf("metricsIn = %v, want %v", got, want)
	}
}

// checkExprs makes promtool parse every expression (as recording rules)
// and checks that each selects only metrics the exporter emits.
func checkExprs(t *testing.T, what string, exprs []string) {
	t.Helper()
	known := MetricNames()
	for _, e := range exprs {
		ms := metricsIn(e)
		if len(ms) == 0 && !strings.Contains(e, "time()") {
			t.Errorf("%s: %q selects no metric", what, e)
		}
		for _, m := range ms {
			if m == "ALERTS" {
				continue
			}
			if _, ok := slices.BinarySearch(known, m); !ok {
				t.Errorf("%s: %q uses %s, which the exporter does not emit", what, e, m)
			}
		}
	}
	promtool := testhost.RequireTool(t, "promtool")
	var b strings.Builder
	b.WriteString("groups:\n  - name: check\n    rules:\n")
	for i, e := range exprs {
		q, _ := json.Marshal(e) // a JSON string is a YAML string
		fmt.Fprintf(&b, "      - record: rdmalab:check:%d\n        expr: %s\n", i, q)
	}
	f := filepath.Join(t.TempDir(), "exprs.yml")
	must(t, os.WriteFile(f, []byte(b.String()), 0o644))
	if out, err := exec.Command(promtool, "check", "rules", f).CombinedOutput(); err != nil {
		t.Errorf("%s: promtool check rules: %v\n%s", what, err, out)
	}
}

// The alert rules pass promtool's checks and unit tests (one per alert)
// and select only metrics the exporter emits.
func TestAlertRules(t *testing.T) {
	promtool := testhost.RequireTool(t, "promtool")
	rules := filepath.Join(deployDir, "prometheus", "rdmalab-alerts.yml")
	tests := filepath.Join(deployDir, "prometheus", "rdmalab-alerts.test.yml")
	for _, args := range [][]string{{"check", "rules", rules}, {"test", "rules", tests}} {
		if out, err := exec.Command(promtool, args...).CombinedOutput(); err != nil {
			t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	var doc struct {
		Groups []struct {
			Rules []struct {
				Alert string `json:"alert"`
				Expr  string `json:"expr"`
			} `json:"rules"`
		} `json:"groups"`
	}
	b, err := os.ReadFile(rules)
	must(t, err)
	must(t, yaml.Unmarshal(b, &doc))
	var exprs, alerts []string
	for _, g := range doc.Groups {
		for _, r := range g.Rules {
			exprs, alerts = append(exprs, r.Expr), append(alerts, r.Alert)
		}
	}
	checkExprs(t, "alert rules", exprs)

	tb, err := os.ReadFile(tests)
	must(t, err)
	for _, a := range alerts {
		if !strings.Contains(string(tb), "alertname: "+a+"\n") {
			t.Errorf("alert %s has no unit test in %s", a, tests)
		}
	}
}

// Every PromQL expression of the Grafana dashboard (panel targets and
// template variable queries) parses and selects only metrics the exporter
// emits.
func TestDashboard(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(deployDir, "grafana", "rdmalab-dashboard.json"))
	must(t, err)
	var dash struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
		Templating struct {
			List []struct {
				Definition string `json:"definition"`
			} `json:"list"`
		} `json:"templating"`
	}
	must(t, json.Unmarshal(b, &dash))
	var exprs []string
	sub := func(e string) string {
		return dashboardVarsRE.ReplaceAllStringFunc(e, func(v string) string {
			if strings.Contains(v, "interval") || strings.Contains(v, "range") {
				return "5m"
			}
			return ".*"
		})
	}
	for _, p := range dash.Panels {
		for _, tg := range p.Targets {
			if tg.Expr == "" {
				t.Errorf("panel %q has an empty target", p.Title)
			}
			exprs = append(exprs, sub(tg.Expr))
		}
	}
	labelValues := regexp.MustCompile(`^label_values\((.+),\s*\w+\)$`)
	for _, v := range dash.Templating.List {
		m := labelValues.FindStringSubmatch(v.Definition)
		if m == nil {
			t.Errorf("template query %q is not label_values(selector, label)", v.Definition)
			continue
		}
		exprs = append(exprs, sub(m[1]))
	}
	if len(exprs) < 20 {
		t.Fatalf("only %d expressions in the dashboard", len(exprs))
	}
	checkExprs(t, "dashboard", exprs)
}

// The unit stops the exporter the way it stops cleanly (SIGTERM, exit 0)
// and counts a signal exit as success, so systemctl stop never leaves it
// failed; systemd-analyze verify checks the rest where it is installed.
func TestSystemdUnitStopsCleanly(t *testing.T) {
	unit := filepath.Join("..", "..", "deploy", "systemd", "rdmalab-exporter.service")
	b, err := os.ReadFile(unit)
	must(t, err)
	for _, want := range []string{"KillSignal=SIGTERM", "SuccessExitStatus=130 143", "TimeoutStopSec="} {
		if !strings.Contains(string(b), "\n"+want) {
			t.Errorf("%s lacks %s", unit, want)
		}
	}
	sa, err := exec.LookPath("systemd-analyze")
	if err != nil {
		return
	}
	out, err := exec.Command(sa, "verify", unit).CombinedOutput()
	for _, l := range strings.Split(string(out), "\n") {
		// The binary is not installed here; everything else must verify.
		if l != "" && !strings.Contains(l, "/usr/local/bin/rdmalab") && !strings.Contains(l, "ExecStart") {
			t.Errorf("systemd-analyze verify: %s (%v)", l, err)
		}
	}
}
