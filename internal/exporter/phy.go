package exporter

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os/exec"
	"path"
	"strconv"

	"github.com/rdmalab/rdmalab/internal/hostfs"
	"github.com/rdmalab/rdmalab/internal/inventory"
	"github.com/rdmalab/rdmalab/internal/phy"
)

// PHY metrics: each port's BER, FEC and module readings, polled in the
// background on their own interval and served from the last poll. mlxlink
// takes about 0.8 s per device, so it never runs inside a scrape: a
// scrape only copies what the poller made.
var (
	phyLabels     = []string{"device", "port", "netdev"}
	phyWith       = func(extra ...string) []string { return append(phyLabels[:3:3], extra...) }
	phyEffBERDesc = newDesc(Namespace+"_phy_effective_ber", "Bit error rate after FEC over the counters' window (mlxlink Effective Physical BER; 0 when no error was counted). Published limit 1e-12 (docs/phy.md).", phyLabels)
	phyRawBERDesc = newDesc(Namespace+"_phy_raw_ber", "Bit error rate before FEC (mlxlink Raw Physical BER), per lane when lane is set.", phyWith("lane"))
	phyEffErrDesc = newDesc(Namespace+"_phy_effective_errors_total", "Errors left after FEC in the counters' window (mlxlink Effective Physical Errors).", phyLabels)
	phyRawErrDesc = newDesc(Namespace+"_phy_raw_errors_total", "Raw (pre-FEC) errors per lane (mlxlink Raw Physical Errors Per Lane, ethtool rx_err_lane_N_phy).", phyWith("lane"))
	phyUncorrDesc = newDesc(Namespace+"_phy_fec_uncorrectable_total", "Codewords or symbols the FEC could not correct (uncorrectable_blocks, rx_pcs_symbol_err_phy, IB Symbol Errors): frames lost.", phyWith("counter"))
	phyCorrDesc   = newDesc(Namespace+"_phy_fec_corrected_bits_total", "Bits the FEC corrected (rx_corrected_bits_phy, --show-fec corrected_bits).", phyLabels)
	phyDownDesc   = newDesc(Namespace+"_phy_link_down_total", "Link drops (mlxlink Link Down Counter, link_down_events_phy) and retrains (kind=\"recovery\": Link Error Recovery Counter) in the counters' window.", phyWith("kind"))
	phyWindowDesc = newDesc(Namespace+"_phy_counters_window_seconds", "How long the PHY counters have been counting (mlxlink Time Since Last Clear); absent when the output does not say.", phyLabels)
	phyHistDesc   = newDesc(Namespace+"_phy_fec_histogram_codewords", "Codewords by the number of symbols the FEC corrected in them (mlxlink Histogram of FEC Errors, bin = corrected symbols).", phyWith("bin"))
	phyModuleDesc = newDesc(Namespace+"_phy_module_reading", "A module's DDM reading in base units (temperature celsius, voltage volts, bias amperes, power dBm; -Inf dBm is no light), per channel from 1 (0: module-wide).", phyWith("quantity", "channel"))
	phyThreshDesc = newDesc(Namespace+"_phy_module_threshold", "The module's own threshold for a quantity, in the reading's unit (bound alarm_low, alarm_high, warning_low, warning_high; mlxlink's [lo..hi] as alarm).", phyWith("quantity", "bound"))
	phyPolledDesc = newDesc(Namespace+"_phy_polled_timestamp_seconds", "When the PHY facts served were polled (out of band, every --phy.interval).", nil)
)

// phyPoll gathers the PHY facts of the host once.
type phyPoll = func(ctx context.Context) ([]phy.Port, error)

// phyPoller polls in the background and serves the last result (and, for
// --textfile, its text).
type phyPoller struct {
	lastPoll
	block *textBlock
}

func newPHYPoller(fsys *hostfs.FS, o Options) *phyPoller {
	poll := o.PHYPoll
	if poll == nil {
		poll = livePHYPoll(fsys, o)
	}
	p := &phyPoller{lastPoll: lastPoll{polledDesc: phyPolledDesc}}
	p.start(o.PHYInterval, func(ctx context.Context) {
		facts, err := safePoll(ctx, poll)
		ms, berr := build(func(m *emitter) { emitPHY(m, facts) })
		p.mu.Lock()
		p.block = textOf(ms)
		p.mu.Unlock()
		p.set(ms, o.Now(), errors.Join(err, berr))
	})
	return p
}

func safePoll(ctx context.Context, poll phyPoll) (ps []phy.Port, err error) {
	err = safely(func() error {
		var e error
		ps, e = poll(ctx)
		return e
	})
	return ps, err
}

func (p *phyPoller) text(context.Context) ([]*textBlock, error) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if !p.polled {
		return nil, nil
	}
	at := newTextBlock()
	err := at.addMetric(p.stamp())
	return []*textBlock{p.block, at}, errors.Join(p.err, err)
}

// livePHYPoll reads the outputs saved under the root (docs/phy.md) and,
// on a live host, runs mstlink (mstflint's mlxlink) on every RDMA device
// and ethtool -S on its netdevs, each bounded by inventory's tool timeout;
// a tool that is not installed is skipped.
func livePHYPoll(fsys *hostfs.FS, o Options) phyPoll {
	run := inventory.ExecTool(inventory.ToolTimeout)
	return func(ctx context.Context) ([]phy.Port, error) {
		out, cerrs := inventory.ReadPHY(fsys, "")
		var errs []error
		for _, e := range cerrs {
			errs = append(errs, fmt.Errorf("%s: %s", e.Path, e.Error))
		}
		if o.Root != "/" {
			return out, errors.Join(errs...)
		}
		devs, _ := fsys.ReadDir("/sys/class/infiniband")
		for _, d := range devs {
			if ctx.Err() != nil {
				break
			}
			base := path.Join("/sys/class/infiniband", d)
			if link, err := fsys.Readlink(path.Join(base, "device")); err == nil {
				b, err := run(ctx, "mstlink", "-d", path.Base(link), "-c", "-m", "--json")
				switch {
				case errors.Is(err, exec.ErrNotFound):
				case err != nil && len(b) == 0:
					errs = append(errs, fmt.Errorf("mstlink -d %s: %w", path.Base(link), err))
				default:
					// mstlink exits non-zero on some -E- lines and still prints
					// the sections before them: read what it printed.
					if ps, perr := phy.ParseMlxlink(b, "mstlink -d "+path.Base(link)); perr == nil {
						for _, p := range ps {
							p.Device, p.Port = d, 1
							out = append(out, p)
						}
					}
				}
			}
			ports, _ := fsys.ReadDir(path.Join(base, "ports"))
			for _, pn := range ports {
				nds, _ := fsys.ReadDir(path.Join(base, "ports", pn, "gid_attrs", "ndevs"))
				if len(nds) == 0 {
					continue
				}
				nd, err := fsys.ReadString(path.Join(base, "ports", pn, "gid_attrs", "ndevs", nds[0]))
				if err != nil || nd == "" {
					continue
				}
				b, err := run(ctx, "ethtool", "-S", nd)
				if err != nil {
					if !errors.Is(err, exec.ErrNotFound) {
						errs = append(errs, fmt.Errorf("ethtool -S %s: %w", nd, err))
					}
					continue
				}
				ps, err := phy.ParseEthtoolS(b, "ethtool -S "+nd)
				if err != nil {
					continue
				}
				n, _ := strconv.Atoi(pn)
				for _, p := range ps {
					p.Device, p.Port, p.Netdev = d, n, nd
					out = append(out, p)
				}
			}
		}
		return out, errors.Join(errs...)
	}
}

// emitPHY turns PHY facts into metrics.
func emitPHY(m *emitter, ps []phy.Port) {
	for _, p := range ps {
		l := []string{p.Device, strconv.Itoa(p.Port), p.Netdev}
		with := func(extra ...string) []string { return append(l[:3:3], extra...) }
		if c := p.Counters; c != nil {
			if c.EffectiveBER != nil {
				v := c.EffectiveBER.Value
				if c.EffectiveBER.NoErrors {
					v = 0
				}
				m.gauge(phyEffBERDesc, v, l...)
			}
			if c.RawBER != nil {
				m.gauge(phyRawBERDesc, c.RawBER.Value, with("")...)
			}
			for i, b := range c.RawBERLane {
				m.gauge(phyRawBERDesc, b.Value, with(strconv.Itoa(i))...)
			}
			if c.Effective != nil {
				m.counter(phyEffErrDesc, float64(*c.Effective), l...)
			}
			for i, v := range c.RawLane {
				m.counter(phyRawErrDesc, float64(v), with(strconv.Itoa(i))...)
			}
			if c.Uncorrectable != nil {
				m.counter(phyUncorrDesc, float64(*c.Uncorrectable), with("uncorrectable_blocks")...)
			}
			if c.Symbol != nil {
				m.counter(phyUncorrDesc, float64(*c.Symbol), with(c.SymbolName)...)
			}
			if c.CorrectedBits != nil {
				m.counter(phyCorrDesc, float64(*c.CorrectedBits), l...)
			}
			if c.LinkDown != nil {
				m.counter(phyDownDesc, float64(*c.LinkDown), with("down")...)
			}
			if c.Recovery != nil {
				m.counter(phyDownDesc, float64(*c.Recovery), with("recovery")...)
			}
			if c.WindowMin != nil {
				m.gauge(phyWindowDesc, *c.WindowMin*60, l...)
			}
		}
		if h := p.Histogram; h != nil {
			for _, b := range h.Bins {
				m.gauge(phyHistDesc, float64(b.Count), with(strconv.Itoa(b.Lo))...)
			}
		}
		if mod := p.Module; mod != nil && !mod.Passive {
			for _, r := range mod.Readings {
				v, _ := baseUnit(r.Unit, r.Value)
				m.gauge(phyModuleDesc, v, with(string(r.Quantity), strconv.Itoa(r.Lane))...)
			}
			for q, t := range mod.Thresholds {
				unit := ""
				for _, r := range mod.Readings {
					if r.Quantity == q {
						unit = r.Unit
					}
				}
				for _, b := range []struct {
					v    *float64
					name string
				}{{t.AlarmLo, "alarm_low"}, {t.AlarmHi, "alarm_high"}, {t.WarnLo, "warning_low"}, {t.WarnHi, "warning_high"}} {
					if b.v != nil {
						v, _ := baseUnit(unit, *b.v)
						m.gauge(phyThreshDesc, v, with(string(q), b.name)...)
					}
				}
			}
		}
	}
}

// baseUnit converts a module reading to Prometheus base units.
func baseUnit(unit string, v float64) (float64, string) {
	switch unit {
	case "mV":
		return v / 1000, "volts"
	case "mA":
		return v / 1000, "amperes"
	case "V":
		return v, "volts"
	case "C":
		return v, "celsius"
	}
	if math.IsNaN(v) {
		return v, ""
	}
	return v, unit
}
