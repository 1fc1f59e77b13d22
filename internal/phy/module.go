package phy

import (
	"bufio"
	"bytes"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/rdmalab/rdmalab/internal/lazyre"
)

// `ethtool -m <if>` prints the module EEPROM decoded: "<name padded to 41>
// : <value>" rows, tab-indented by ethtool, re-indented by mails. SFF-8472
// (SFP) has one channel; SFF-8636 (QSFP) and CMIS print "(Channel N)"
// rows. Alarm/warning flags are latched status bits ("… high alarm :
// Off"); thresholds ("… high alarm threshold") are the module's own
// limits, printed when the module implements them. Power prints as
// "0.7633 mW / -1.17 dBm"; no light prints "-inf dBm".

var (
	moduleCmdRE  = lazyre.New(`\bethtool\s+(?:-m|--module-info|--dump-module-eeprom)\s+(\S+)`)
	moduleRowRE  = lazyre.New(`^([A-Za-z][^:]*?)\s*:\s*(.*)$`)
	moduleChanRE = lazyre.New(`\s*\((?:Channel|Chan)\s*(\d+)\)`)
	moduleNumRE  = lazyre.New(`(-?inf|-?[\d.]+)\s*(mW|dBm|mA|V|mV|degrees C|C)\b`)
	moduleIDRE   = lazyre.New(`^0x[0-9a-fA-F]+\s*\((.*)\)$`)
	// ethtool -m's first row: the SFF-8024 identifier byte and its name.
	moduleSniffRE = lazyre.New(`(?m)^[ \t]*Identifier[ \t]+:[ \t]*0x[0-9a-fA-F]{2}[ \t]*\(`)
)

// SniffModule reports whether b looks like `ethtool -m` output.
func SniffModule(b []byte) bool { return moduleSniffRE().Match(b) }

// quantityOf says what a row measures, from ethtool's names in qsfp.c,
// sfpdiag.c and cmis.c.
func quantityOf(name string) (Quantity, bool) {
	n := strings.ToLower(name)
	switch {
	case strings.Contains(n, "bias"):
		return Bias, true
	case strings.Contains(n, "temperature"):
		return Temperature, true
	case strings.Contains(n, "voltage"):
		return Voltage, true
	case strings.Contains(n, "rcvr") || strings.Contains(n, "receiver") || strings.Contains(n, "rx power") || strings.Contains(n, "rx optical"):
		return RxPower, true
	case strings.Contains(n, "transmit") || strings.Contains(n, "output power") || strings.Contains(n, "tx power") || strings.Contains(n, "tx optical"):
		return TxPower, true
	}
	return "", false
}

// moduleNumber reads a value: powers in dBm (the second of "mW / dBm"),
// temperature in C, voltage in V, bias in mA.
func moduleNumber(q Quantity, v string) (float64, string, bool) {
	ms := moduleNumRE().FindAllStringSubmatch(v, -1)
	want := map[Quantity][]string{TxPower: {"dBm"}, RxPower: {"dBm"}, Bias: {"mA"}, Voltage: {"V", "mV"}, Temperature: {"degrees C", "C"}}[q]
	for _, m := range ms {
		for _, u := range want {
			if m[2] != u {
				continue
			}
			if strings.HasSuffix(m[1], "inf") {
				return math.Inf(-1), u, true
			}
			f, err := strconv.ParseFloat(m[1], 64)
			if err != nil {
				return 0, "", false
			}
			if u == "degrees C" {
				u = "C"
			}
			return f, u, true
		}
	}
	return 0, "", false
}

// ParseModule reads `ethtool -m` output into the module of one Port.
func ParseModule(b []byte, name string) ([]Port, error) {
	p := Port{Tool: "ethtool -m", Source: name}
	m := &Module{Thresholds: map[Quantity]Thresholds{}}
	var skipped []string
	rows := 0
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	n := 0
	set := func(q Quantity, f func(*Thresholds)) {
		t := m.Thresholds[q]
		f(&t)
		t.Level = "alarm and warning"
		m.Thresholds[q] = t
	}
	var overrideOn, setOn *bool
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		if line == "..." || line == "[...]" || line == "…" {
			m.Elided = true
			continue
		}
		if c := moduleCmdRE().FindStringSubmatch(line); c != nil {
			p.Netdev = c[1]
			if p.Source == name {
				p.Source = fmt.Sprintf("%s line %d", name, n)
			}
			continue
		}
		r := moduleRowRE().FindStringSubmatch(line)
		if r == nil {
			skipped = append(skipped, fmt.Sprintf("line %d", n))
			continue
		}
		rows++
		key, val := strings.TrimSpace(r[1]), strings.TrimSpace(r[2])
		lane := 0
		if c := moduleChanRE().FindStringSubmatch(key); c != nil {
			lane, _ = strconv.Atoi(c[1])
			key = strings.TrimSpace(moduleChanRE().ReplaceAllString(key, " "))
		}
		lk := strings.ToLower(key)
		switch {
		case lk == "identifier":
			m.Identifier = val
			if id := moduleIDRE().FindStringSubmatch(val); id != nil {
				m.Identifier = id[1]
			}
			continue
		case lk == "vendor name":
			m.Vendor = val
			continue
		case lk == "vendor pn":
			m.PartNumber = val
			continue
		case lk == "vendor sn":
			m.Serial = val
			continue
		case lk == "transceiver type" || lk == "connector" && m.CableType == "":
			if strings.Contains(strings.ToLower(val), "copper") {
				m.CableType = val
				m.Passive = m.Passive || strings.Contains(strings.ToLower(val), "passive")
			}
			continue
		case lk == "power set":
			setOn = boolp(strings.EqualFold(val, "On"))
			continue
		case lk == "power override":
			overrideOn = boolp(strings.EqualFold(val, "On"))
			continue
		}
		if f, ok := losFlag(lk, val); ok {
			m.Flags = append(m.Flags, f)
			continue
		}
		q, ok := quantityOf(key)
		if !ok {
			continue
		}
		level := ""
		for _, l := range []string{"high alarm", "low alarm", "high warning", "low warning"} {
			if strings.Contains(lk, l) {
				level = l
			}
		}
		switch {
		case level != "" && strings.HasSuffix(lk, "threshold"):
			f, _, ok := moduleNumber(q, val)
			if !ok {
				continue
			}
			if math.IsInf(f, 0) {
				// 0 mW as a limit is no limit: kept in the text, not as a bound.
				set(q, func(t *Thresholds) { t.Text += fmt.Sprintf("%s %s (line %d, no bound); ", level, val, n) })
				continue
			}
			set(q, func(t *Thresholds) {
				switch level {
				case "high alarm":
					t.AlarmHi = f64(f)
				case "low alarm":
					t.AlarmLo = f64(f)
				case "high warning":
					t.WarnHi = f64(f)
				case "low warning":
					t.WarnLo = f64(f)
				}
				t.Text += fmt.Sprintf("%s %s (line %d); ", level, val, n)
			})
		case level != "":
			// A latched flag: "Module temperature high alarm : Off".
			on := strings.EqualFold(val, "On") || strings.EqualFold(val, "Yes")
			fname := fmt.Sprintf("%s %s", q, level)
			idx := -1
			for i := range m.Flags {
				if m.Flags[i].Name == fname {
					idx = i
				}
			}
			if idx < 0 {
				m.Flags = append(m.Flags, Flag{Name: fname})
				idx = len(m.Flags) - 1
			}
			m.Flags[idx].Lanes = append(m.Flags[idx].Lanes, on)
			m.Flags[idx].Text = strings.TrimSpace(m.Flags[idx].Text + " " + val)
		case strings.Contains(lk, "alarm") || strings.Contains(lk, "warning") || strings.Contains(lk, "implemented") || strings.Contains(lk, "support"):
		default:
			f, unit, ok := moduleNumber(q, val)
			if !ok {
				continue
			}
			m.Readings = append(m.Readings, Reading{Quantity: q, Lane: lane, Value: f, Unit: unit, Text: val})
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if rows == 0 {
		return nil, fmt.Errorf("no ethtool -m rows (Name : value)")
	}
	if overrideOn != nil {
		switch {
		case *overrideOn && setOn != nil:
			m.LowPower = boolp(*setOn)
			m.PowerLine = fmt.Sprintf("Power override On, Power set %s", onOff(*setOn))
		case !*overrideOn:
			m.PowerLine = "Power override Off: the LPMode pin decides the power mode (not in the output)"
		}
	}
	if len(m.Thresholds) == 0 {
		m.Thresholds = nil
	}
	p.Module = m
	if len(skipped) > 0 {
		p.Skipped = append(p.Skipped, "not ethtool -m rows: "+strings.Join(skipped, ", "))
	}
	if m.Elided {
		p.Skipped = append(p.Skipped, "the author cut the listing (\"...\" lines): rows not shown are unknown")
	}
	return []Port{p}, nil
}

func boolp(b bool) *bool { return &b }

func onOff(b bool) string {
	if b {
		return "On"
	}
	return "Off"
}

// losFlag reads SFF-8636/CMIS per-channel status rows: "Rx loss of
// signal : [ Yes, No, No, No ]", "Tx fault : None", "Tx loss of lock".
func losFlag(key, val string) (Flag, bool) {
	var name string
	switch {
	case strings.Contains(key, "loss of signal") && strings.HasPrefix(key, "rx"):
		name = "Rx LOS"
	case strings.Contains(key, "loss of signal") && strings.HasPrefix(key, "tx"):
		name = "Tx LOS"
	case strings.Contains(key, "loss of lock") && strings.HasPrefix(key, "rx"):
		name = "Rx CDR LOL"
	case strings.Contains(key, "loss of lock") && strings.HasPrefix(key, "tx"):
		name = "Tx CDR LOL"
	case key == "tx fault" || key == "tx adaptive eq fault":
		name = "Tx Fault"
	default:
		return Flag{}, false
	}
	f := Flag{Name: name, Text: val}
	t := strings.Trim(strings.TrimSpace(val), "[]")
	if strings.EqualFold(strings.TrimSpace(t), "None") {
		return f, true
	}
	for _, it := range strings.Split(t, ",") {
		it = strings.TrimSpace(it)
		f.Lanes = append(f.Lanes, strings.EqualFold(it, "Yes") || strings.EqualFold(it, "On") || it == "1")
	}
	return f, true
}
