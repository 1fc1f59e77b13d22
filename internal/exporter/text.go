package exporter

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
)

// descInfo is what the text renderer needs of a Desc, which keeps its
// name and help to itself.
type descInfo struct {
	name, help string
}

// descInfos holds every Desc the package makes; written only while the
// package initialises.
var descInfos = map[*prometheus.Desc]descInfo{}

func newDesc(name, help string, labels []string) *prometheus.Desc {
	d := prometheus.NewDesc(name, help, labels, nil)
	descInfos[d] = descInfo{name: name, help: help}
	return d
}

// labelCache holds, by Desc and label values, the label pairs and the
// rendered sample prefix of each label set: a port's labels never change,
// and NewConstMetric would make and check them again for every sample.
type labelCache struct{ m sync.Map }

type labelKey struct {
	d       *prometheus.Desc
	a, b, c string
	rest    string // the values after the third, joined by \xff
}

type labelSet struct {
	pairs  []*dto.LabelPair
	prefix []byte // `name{l="v",…} `, labels sorted by name as the registry writes them
}

// reset forgets every label set (the device set changed).
func (l *labelCache) reset() { l.m.Clear() }

func keyOf(d *prometheus.Desc, labels []string) labelKey {
	k := labelKey{d: d}
	for i, v := range labels {
		switch i {
		case 0:
			k.a = v
		case 1:
			k.b = v
		case 2:
			k.c = v
		default:
			k.rest += v + "\xff"
		}
	}
	return k
}

// get returns the label set of d and labels, made (and checked by
// NewConstMetric) the first time it is asked for.
func (l *labelCache) get(d *prometheus.Desc, t prometheus.ValueType, labels []string) (*labelSet, error) {
	k := keyOf(d, labels)
	if s, ok := l.m.Load(k); ok {
		return s.(*labelSet), nil
	}
	c, err := prometheus.NewConstMetric(d, t, 0, labels...)
	if err != nil {
		return nil, err
	}
	var dm dto.Metric
	if err := c.Write(&dm); err != nil {
		return nil, err
	}
	s, err := renderLabels(d, dm.Label)
	if err != nil {
		return nil, err
	}
	got, _ := l.m.LoadOrStore(k, s)
	return got.(*labelSet), nil
}

// renderLabels makes the label set of a sample of d whose label pairs are
// pairs (sorted by name, as const metrics have them).
func renderLabels(d *prometheus.Desc, pairs []*dto.LabelPair) (*labelSet, error) {
	info, ok := descInfos[d]
	if !ok {
		return nil, fmt.Errorf("%s: not made by newDesc", d)
	}
	var b strings.Builder
	b.WriteString(info.name)
	if len(pairs) > 0 {
		b.WriteByte('{')
		for i, p := range pairs {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(p.GetName())
			b.WriteString(`="`)
			labelEscaper.WriteString(&b, p.GetValue())
			b.WriteByte('"')
		}
		b.WriteByte('}')
	}
	b.WriteByte(' ')
	return &labelSet{pairs: pairs, prefix: []byte(b.String())}, nil
}

// The text format's escapes: label values escape backslash, quote and
// newline; HELP text backslash and newline.
var (
	labelEscaper = strings.NewReplacer(`\`, `\\`, "\n", `\n`, `"`, `\"`)
	helpEscaper  = strings.NewReplacer(`\`, `\\`, "\n", `\n`)
)

// textBlock is the host collector's samples rendered straight into the
// text exposition format, grouped by metric family in the order first
// emitted. It serves the same samples the registry would
// (TestTextPathEqualsRegistry) without building, checking and encoding a
// dto.Metric for each of the hundreds of port samples on every scrape.
type textBlock struct {
	families []*textFamily
	byDesc   map[*prometheus.Desc]*textFamily
}

type textFamily struct {
	desc  *prometheus.Desc
	typ   prometheus.ValueType
	lines []byte
}

func newTextBlock() *textBlock {
	return &textBlock{byDesc: map[*prometheus.Desc]*textFamily{}}
}

func (t *textBlock) add(d *prometheus.Desc, typ prometheus.ValueType, v float64, s *labelSet) {
	f := t.byDesc[d]
	if f == nil {
		f = &textFamily{desc: d, typ: typ, lines: make([]byte, 0, 1024)}
		t.byDesc[d] = f
		t.families = append(t.families, f)
	}
	f.lines = append(f.lines, s.prefix...)
	f.lines = appendValue(f.lines, v)
	f.lines = append(f.lines, '\n')
}

// appendValue formats v as expfmt's text encoder does.
func appendValue(b []byte, v float64) []byte {
	switch v {
	case 0:
		return append(b, '0')
	case 1:
		return append(b, '1')
	}
	if v > maxFloat || v < -maxFloat {
		if v > 0 {
			return append(b, "+Inf"...)
		}
		return append(b, "-Inf"...)
	}
	if v != v {
		return append(b, "NaN"...)
	}
	return strconv.AppendFloat(b, v, 'g', -1, 64)
}

const maxFloat = 1.7976931348623157e308

// writeHeader writes the family's HELP and TYPE lines.
func (f *textFamily) writeHeader(w io.Writer) error {
	var b bytes.Buffer
	info := descInfos[f.desc]
	b.WriteString("# HELP ")
	b.WriteString(info.name)
	b.WriteByte(' ')
	helpEscaper.WriteString(&b, info.help)
	b.WriteString("\n# TYPE ")
	b.WriteString(info.name)
	if f.typ == prometheus.CounterValue {
		b.WriteString(" counter\n")
	} else {
		b.WriteString(" gauge\n")
	}
	_, err := w.Write(b.Bytes())
	return err
}

// outcome is how one collector did in one scrape.
type outcome struct {
	took time.Duration
	err  error
}

// A textCollector can also hand its samples already rendered in the text
// format: the host collector renders each scrape's samples, the cached
// collectors render once per evaluation.
type textCollector interface {
	collector
	text(ctx context.Context) ([]*textBlock, error)
}

// textOf renders metrics made once per evaluation; nil when there are none.
func textOf(ms []prometheus.Metric) *textBlock {
	t := newTextBlock()
	for _, m := range ms {
		// build made them, and a metric it could not make is not in ms.
		_ = t.addMetric(m)
	}
	return t
}

// addMetric renders a metric made elsewhere, without caching its labels.
func (t *textBlock) addMetric(m prometheus.Metric) error {
	var dm dto.Metric
	if err := m.Write(&dm); err != nil {
		return err
	}
	s, err := renderLabels(m.Desc(), dm.Label)
	if err != nil {
		return err
	}
	switch {
	case dm.Counter != nil:
		t.add(m.Desc(), prometheus.CounterValue, dm.Counter.GetValue(), s)
	case dm.Gauge != nil:
		t.add(m.Desc(), prometheus.GaugeValue, dm.Gauge.GetValue(), s)
	default:
		return fmt.Errorf("%s: neither counter nor gauge", m.Desc())
	}
	return nil
}

// textDone is a text collector's blocks and how it did.
type textDone struct {
	name   string
	blocks []*textBlock
	outcome
}

// serveText answers a scrape that takes the text format (what Prometheus
// and most scrapers get from an exporter without OpenMetrics): collectors
// that can hand rendered text do, concurrently; the others, and every
// collector's duration and success, go through a registry as usual.
func (e *Exporter) serveText(w http.ResponseWriter, r *http.Request, format expfmt.Format) {
	ctx, cancel := context.WithTimeout(r.Context(), e.timeout)
	defer cancel()
	var texts []string
	done := make(chan textDone, len(e.collectors))
	for name, c := range e.collectors {
		tc, ok := c.(textCollector)
		if !ok {
			continue
		}
		texts = append(texts, name)
		go func() {
			start := time.Now()
			var blocks []*textBlock
			err := safely(func() (err error) { blocks, err = tc.text(ctx); return err })
			done <- textDone{name, blocks, outcome{time.Since(start), err}}
		}()
	}
	rest := &restCollector{e: e, ctx: ctx, skip: texts, done: done}
	reg := prometheus.NewRegistry()
	if err := reg.Register(rest); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	mfs, err := reg.Gather()
	if err != nil {
		// As promhttp.ContinueOnError: serve what was gathered.
		e.log.Error("gather", "err", err)
	}
	w.Header().Set("Content-Type", string(format))
	// Only collectors that finished in time: one that outran the scrape
	// timeout is reported failed and may still be writing its block.
	slices.SortFunc(rest.finished, func(a, b textDone) int { return strings.Compare(a.name, b.name) })
	if err := writeFamilies(w, format, mfs, rest.finished); err != nil {
		e.log.Error("write", "err", err)
	}
}

// writeFamilies writes each metric family once, with one HELP and one TYPE
// line, however many collectors emitted it (rdmalab_finding and
// rdmalab_findings come from the host's findings, rendered as text, and
// from the fabric's, gathered by the registry): a family the registry
// gathered is followed at once by the rendered samples of the same name,
// and rendered families of one name are merged under one header. The
// exposition format (and promtool check metrics) refuse a second HELP.
func writeFamilies(w io.Writer, format expfmt.Format, mfs []*dto.MetricFamily, done []textDone) error {
	byName := map[string][]*textFamily{}
	var order []string
	for _, d := range done {
		for _, b := range d.blocks {
			for _, f := range b.families {
				name := descInfos[f.desc].name
				if _, ok := byName[name]; !ok {
					order = append(order, name)
				}
				byName[name] = append(byName[name], f)
			}
		}
	}
	enc := expfmt.NewEncoder(w, format)
	for _, mf := range mfs {
		if err := enc.Encode(mf); err != nil {
			return fmt.Errorf("encode %s: %w", mf.GetName(), err)
		}
		for _, f := range byName[mf.GetName()] {
			if _, err := w.Write(f.lines); err != nil {
				return err
			}
		}
		delete(byName, mf.GetName())
	}
	for _, name := range order {
		fs := byName[name]
		if len(fs) == 0 {
			continue
		}
		if err := fs[0].writeHeader(w); err != nil {
			return err
		}
		for _, f := range fs {
			if _, err := w.Write(f.lines); err != nil {
				return err
			}
		}
	}
	return nil
}

// restCollector runs every collector not in skip and reports the outcome
// of each, the skipped ones' as their text arrives on done.
type restCollector struct {
	e        *Exporter
	ctx      context.Context
	skip     []string
	done     <-chan textDone
	finished []textDone
}

func (*restCollector) Describe(chan<- *prometheus.Desc) {}

func (c *restCollector) Collect(ch chan<- prometheus.Metric) {
	c.e.collect(c.ctx, ch, c.skip...)
	waiting := map[string]bool{}
	for _, n := range c.skip {
		waiting[n] = true
	}
	for len(waiting) > 0 {
		select {
		case d := <-c.done:
			delete(waiting, d.name)
			c.finished = append(c.finished, d)
			c.e.report(ch, d.name, d.outcome)
		case <-c.ctx.Done():
			for n := range waiting {
				c.e.report(ch, n, outcome{err: fmt.Errorf("%s: %w", n, c.ctx.Err())})
			}
			return
		}
	}
}

// textHandler serves the text format itself and hands any other format
// (protobuf, which native histograms ask for) to promhttp.
func (e *Exporter) textHandler(other http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		format := expfmt.Negotiate(r.Header)
		if format.FormatType() != expfmt.TypeTextPlain {
			other.ServeHTTP(w, r)
			return
		}
		e.serveText(w, r, format)
	})
}

// metricNames is every metric name the package can emit, sorted.
func metricNames() []string {
	var out []string
	for _, info := range descInfos {
		out = append(out, info.name)
	}
	slices.Sort(out)
	return slices.Compact(out)
}
