package exporter

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/rdmalab/rdmalab/internal/testhost"
)

// canonical renders families sorted by name, with each family's samples
// sorted, without the volatile families: two expositions of the same
// samples in any order give the same text.
func canonical(t *testing.T, mfs map[string]*dto.MetricFamily) string {
	t.Helper()
	var names []string
	for n := range mfs {
		if !slices.Contains(volatile, n) {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	var out strings.Builder
	for _, n := range names {
		mf := mfs[n]
		var lines []string
		for _, m := range mf.Metric {
			var b bytes.Buffer
			one := &dto.MetricFamily{Name: mf.Name, Type: mf.Type, Metric: []*dto.Metric{m}}
			if _, err := expfmt.MetricFamilyToText(&b, one); err != nil {
				t.Fatal(err)
			}
			lines = append(lines, strings.TrimSuffix(b.String(), "\n"))
		}
		slices.Sort(lines)
		out.WriteString("# HELP " + n + " " + mf.GetHelp() + "\n# TYPE " + n + " " + strings.ToLower(mf.GetType().String()) + "\n")
		out.WriteString(strings.Join(lines, "\n") + "\n")
	}
	return out.String()
}

// scrape asks h for /metrics with the Accept header given ("" for none,
// as Prometheus without OpenMetrics), gzip accepted, and parses the body.
func scrapeParsed(t *testing.T, h http.Handler, accept string) (map[string]*dto.MetricFamily, string) {
	t.Helper()
	r := httptest.NewRequest("GET", "/metrics", nil)
	r.Header.Set("Accept-Encoding", "gzip")
	if accept != "" {
		r.Header.Set("Accept", accept)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	if w.Code != 200 {
		t.Fatalf("HTTP %d: %s", w.Code, w.Body)
	}
	zr, err := gzip.NewReader(w.Body)
	must(t, err)
	body, err := io.ReadAll(zr)
	must(t, err)
	ct := w.Header().Get("Content-Type")
	format := expfmt.ResponseFormat(w.Header())
	if format.FormatType() == expfmt.TypeTextPlain {
		p := expfmt.NewTextParser(model.UTF8Validation)
		mfs, err := p.TextToMetricFamilies(bytes.NewReader(body))
		if err != nil {
			t.Fatalf("text body (%s) does not parse: %v\n%s", ct, err, body)
		}
		return mfs, string(body)
	}
	mfs := map[string]*dto.MetricFamily{}
	dec := expfmt.NewDecoder(bytes.NewReader(body), format)
	for {
		var mf dto.MetricFamily
		if err := dec.Decode(&mf); err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("%s body: %v", ct, err)
		}
		mfs[mf.GetName()] = &mf
	}
	return mfs, string(body)
}

// The text path (host samples rendered straight to text, cached
// collectors' text made once per evaluation) serves exactly what the
// registry serves: on the HGX and seed-000 trees, and on a tree with an
// unreadable counter, a broken port and label values that need escaping.
// The protobuf format still goes through the registry.
func TestTextPathEqualsRegistry(t *testing.T) {
	broken := testhost.WriteTree(t, testhost.Seed000())
	ib := filepath.Join(broken, "sys/class/infiniband")
	ents, err := os.ReadDir(ib)
	must(t, err)
	dev := mustRealpath(t, filepath.Join(ib, ents[0].Name()))
	must(t, os.WriteFile(filepath.Join(dev, "board_id"), []byte("MT_\"0000\"\\00\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(dev, "ports/1/counters/port_xmit_data"), []byte("N/A (no PMA)\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(dev, "ports/1/rate"), []byte("fast\n"), 0o644))

	for _, tc := range []struct {
		name string
		o    Options
	}{
		{"hgx", Options{Root: testhost.WriteTree(t, testhost.HGX())}},
		{"hgx-no-findings", Options{Root: testhost.WriteTree(t, testhost.HGX()), NoFindings: true}},
		{"seed-000", Options{Root: testhost.WriteTree(t, testhost.Seed000())}},
		{"broken", Options{Root: broken}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newExporter(t, tc.o)
			h, err := e.Handler()
			must(t, err)
			fromText, body := scrapeParsed(t, h, "")
			if !strings.Contains(body, "rdmalab_infiniband_port_data_transmitted_bytes_total{") {
				t.Fatalf("no port counters in the text scrape:\n%s", body)
			}
			mfs, err := e.Registry().Gather()
			must(t, err)
			fromRegistry := map[string]*dto.MetricFamily{}
			for _, mf := range mfs {
				fromRegistry[mf.GetName()] = mf
			}
			want := canonical(t, fromRegistry)
			if got := canonical(t, fromText); got != want {
				t.Errorf("the text path differs from the registry:\n%s", lineDiff(want, got))
			}
			fromProto, _ := scrapeParsed(t, h, "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited")
			if got := canonical(t, fromProto); got != want {
				t.Errorf("the protobuf path differs from the registry:\n%s", lineDiff(want, got))
			}
			if tc.name == "broken" {
				for _, s := range []string{`board_id="MT_\"0000\"\\00"`, `rdmalab_infiniband_file_unavailable{device=`} {
					if !strings.Contains(body, s) {
						t.Errorf("text scrape lacks %s", s)
					}
				}
			}
		})
	}
}

// lineDiff lists the lines only in want (-) and only in got (+).
func lineDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	var out []string
	for _, l := range w {
		if !slices.Contains(g, l) {
			out = append(out, "- "+l)
		}
	}
	for _, l := range g {
		if !slices.Contains(w, l) {
			out = append(out, "+ "+l)
		}
	}
	if len(out) > 40 {
		out = append(out[:40], "…")
	}
	return strings.Join(out, "\n")
}
