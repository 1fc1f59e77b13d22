package judge

import (
	"bufio"
	"bytes"
	"fmt"
	"github.com/rdmalab/rdmalab/internal/host"
	"github.com/rdmalab/rdmalab/internal/hostcheck"
	"regexp"
	"strconv"
	"strings"

	"github.com/rdmalab/rdmalab/internal/check"
	"github.com/rdmalab/rdmalab/internal/linkrate"
)

// HostPort is one RDMA port as ibstat, ibstatus or ibv_devinfo prints it.
type HostPort struct {
	Device    string         `json:"device"`
	Port      int            `json:"port"`
	Model     string         `json:"model,omitempty"`      // "ConnectX-6", from the part id
	PartID    string         `json:"part_id,omitempty"`    // PCI device id, 0x101b
	BoardID   string         `json:"board_id,omitempty"`   // PSID (ibv_devinfo)
	State     string         `json:"state"`                // Active, Down, Init, Armed
	PhysState string         `json:"phys_state,omitempty"` // LinkUp, Polling, Disabled, Sleep
	RateGbps  float64        `json:"rate_gbps,omitempty"`
	Width     int            `json:"width,omitempty"`
	Speed     string         `json:"speed,omitempty"`
	Layer     linkrate.Layer `json:"link_layer,omitempty"`
	LID       int            `json:"lid"`
	LIDKnown  bool           `json:"-"`
	SMLID     int            `json:"sm_lid"`
}

// HostPorts is what a host-side output says: its ports, and the tool's
// own failure if it printed one.
type HostPorts struct {
	Tool    string     `json:"tool"`
	Ports   []HostPort `json:"ports"`
	Failure string     `json:"failure,omitempty"`
}

var (
	ibstatCARE     = regexp.MustCompile(`(?m)^[\s│|]*CA '([^']+)'`)
	ibstatusRE     = regexp.MustCompile(`(?m)^\s*Infiniband device '([^']+)' port (\d+) status:`)
	devinfoRE      = regexp.MustCompile(`(?m)^\s*hca_id:\s*\S+`)
	kvRE           = regexp.MustCompile(`^\s*([A-Za-z_ ]+?):\s*(.*?)\s*$`)
	rateParenRE    = regexp.MustCompile(`([\d.]+) Gb/sec \((\d+)X ([A-Z0-9]+)\)`)
	speedCodeRE    = regexp.MustCompile(`\((\d+)\)`)
	numberPrefixRE = regexp.MustCompile(`^\d+:\s*`)
)

func sniffIBStat(b []byte) bool     { return ibstatCARE.Match(b) }
func sniffIBStatus(b []byte) bool   { return ibstatusRE.Match(b) }
func sniffDevinfo(b []byte) bool    { return devinfoRE.Match(b) }
func cleanLine(s string) string     { return strings.Trim(s, " \t│|") }
func lines(b []byte) *bufio.Scanner { return bufio.NewScanner(bytes.NewReader(b)) }

// modelOf names a part by its PCI device id.
func modelOf(vendor, part string) (linkrate.Model, bool) {
	if vendor == "" {
		vendor = "0x15b3"
	}
	return linkrate.ModelOf(vendor, part)
}

// partFromCAType reads ibstat's "MT4123" as device id 0x101b.
func partFromCAType(s string) string {
	n, err := strconv.Atoi(strings.TrimPrefix(strings.TrimSpace(s), "MT"))
	if err != nil {
		return ""
	}
	return fmt.Sprintf("0x%x", n)
}

func lid(s string) (int, bool) {
	s = strings.TrimSpace(s)
	v, err := strconv.ParseInt(s, 0, 32)
	return int(v), err == nil
}

// normState and normPhys map the spellings of ibstat, ibstatus and
// ibv_devinfo ("4: ACTIVE", "PORT_ACTIVE (4)", "LinkUp", "LINK_UP") to the
// fabric model's names.
func normState(s string) string {
	return normalize(strings.TrimPrefix(upper(s), "PORT_"), "Active", "Down", "Init", "Armed")
}

func normPhys(s string) string {
	return normalize(strings.ReplaceAll(upper(s), "_", ""), "LinkUp", "Polling", "Disabled", "Sleep")
}

func upper(s string) string {
	return strings.ToUpper(numberPrefixRE.ReplaceAllString(strings.TrimSpace(s), ""))
}

// normalize returns the first name s starts with (compared upper-case), or
// s as it is.
func normalize(s string, names ...string) string {
	for _, n := range names {
		if strings.HasPrefix(s, strings.ToUpper(n)) {
			return n
		}
	}
	return s
}

func layer(s string) linkrate.Layer {
	l, _ := linkrate.SysfsLayer(strings.TrimSpace(s))
	return l
}

func judgeIBStat(name string, b []byte, opt Options) ([]check.Finding, any, error) {
	hp := HostPorts{Tool: "ibstat"}
	var dev, part string
	var cur *HostPort
	sc := lines(b)
	for sc.Scan() {
		l := cleanLine(sc.Text())
		if strings.HasPrefix(l, "ibpanic:") || strings.HasPrefix(l, "ibwarn:") && strings.Contains(l, "fail") {
			hp.Failure = l
			continue
		}
		if m := ibstatCARE.FindStringSubmatch(l); m != nil {
			dev, part, cur = m[1], "", nil
			continue
		}
		if strings.HasPrefix(l, "Port ") && strings.HasSuffix(l, ":") {
			n, err := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(l, "Port "), ":"))
			if err == nil && dev != "" {
				hp.Ports = append(hp.Ports, HostPort{Device: dev, Port: n, PartID: part})
				cur = &hp.Ports[len(hp.Ports)-1]
			}
			continue
		}
		m := kvRE.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		k, v := m[1], m[2]
		if k == "CA type" {
			part = partFromCAType(v)
			continue
		}
		if cur == nil {
			continue
		}
		switch k {
		case "State":
			cur.State = normState(v)
		case "Physical state":
			cur.PhysState = normPhys(v)
		case "Rate":
			cur.RateGbps, _ = strconv.ParseFloat(v, 64)
		case "Base lid":
			cur.LID, cur.LIDKnown = lid(v)
		case "SM lid":
			cur.SMLID, _ = lid(v)
		case "Link layer":
			cur.Layer = layer(v)
		}
	}
	return judgeHostPorts(hp, opt)
}

func judgeIBStatus(name string, b []byte, opt Options) ([]check.Finding, any, error) {
	hp := HostPorts{Tool: "ibstatus"}
	var cur *HostPort
	sc := lines(b)
	for sc.Scan() {
		l := cleanLine(sc.Text())
		if m := ibstatusRE.FindStringSubmatch(l); m != nil {
			n, _ := strconv.Atoi(m[2])
			hp.Ports = append(hp.Ports, HostPort{Device: m[1], Port: n})
			cur = &hp.Ports[len(hp.Ports)-1]
			continue
		}
		m := kvRE.FindStringSubmatch(l)
		if m == nil || cur == nil {
			continue
		}
		switch v := m[2]; m[1] {
		case "state":
			cur.State = normState(v)
		case "phys state":
			cur.PhysState = normPhys(v)
		case "rate":
			if r := rateParenRE.FindStringSubmatch(v); r != nil {
				cur.RateGbps, _ = strconv.ParseFloat(r[1], 64)
				cur.Width, _ = strconv.Atoi(r[2])
				cur.Speed = r[3]
			} else {
				cur.RateGbps, _ = strconv.ParseFloat(strings.Fields(v + " 0")[0], 64)
			}
		case "base lid":
			cur.LID, cur.LIDKnown = lid(v)
		case "sm lid":
			cur.SMLID, _ = lid(v)
		case "link_layer":
			cur.Layer = layer(v)
		}
	}
	return judgeHostPorts(hp, opt)
}

// speedCodes are ibv_devinfo -v's active_speed codes (IBTA PortInfo).
var speedCodes = map[int]string{1: "SDR", 2: "DDR", 4: "QDR", 8: "FDR10", 16: "FDR", 32: "EDR", 64: "HDR", 128: "NDR", 256: "XDR"}

func judgeDevinfo(name string, b []byte, opt Options) ([]check.Finding, any, error) {
	hp := HostPorts{Tool: "ibv_devinfo"}
	var dev, vendor, part, board string
	var cur *HostPort
	sc := lines(b)
	for sc.Scan() {
		l := cleanLine(sc.Text())
		m := kvRE.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		k, v := m[1], m[2]
		switch k {
		case "hca_id":
			dev, vendor, part, board, cur = v, "", "", "", nil
		case "vendor_id":
			vendor = v
		case "vendor_part_id":
			if n, err := strconv.Atoi(v); err == nil {
				part = fmt.Sprintf("0x%x", n)
			}
		case "board_id":
			board = v
		case "port":
			n, err := strconv.Atoi(v)
			if err == nil {
				if dev == "" {
					dev = "?"
				}
				hp.Ports = append(hp.Ports, HostPort{Device: dev, Port: n, PartID: part, BoardID: board})
				cur = &hp.Ports[len(hp.Ports)-1]
				if md, ok := modelOf(vendor, part); ok {
					cur.Model = md.Name
				}
			}
		}
		if cur == nil {
			continue
		}
		switch k {
		case "state":
			cur.State = normState(v)
		case "phys_state":
			cur.PhysState = normPhys(v)
		case "port_lid":
			cur.LID, cur.LIDKnown = lid(v)
		case "sm_lid":
			cur.SMLID, _ = lid(v)
		case "link_layer":
			cur.Layer = layer(v)
		case "active_width":
			cur.Width, _ = linkrate.ParseWidth(strings.Fields(v + " x")[0])
		case "active_speed":
			if c := speedCodeRE.FindStringSubmatch(v); c != nil {
				n, _ := strconv.Atoi(c[1])
				cur.Speed = speedCodes[n]
			}
		}
		if cur.Width > 0 && cur.Speed != "" {
			cur.RateGbps = linkrate.IBRateGbps(fmt.Sprintf("%dX", cur.Width), cur.Speed)
		}
	}
	return judgeHostPorts(hp, opt)
}

// judgeHostPorts applies doctor's port rules to what a host tool printed:
// port.state, ib.sm, port.rate.below-expected (--expect-rate, else the
// majority of the same part's active ports in the output), and
// port.link-layer (--expect-layer).
func judgeHostPorts(hp HostPorts, opt Options) ([]check.Finding, any, error) {
	if len(hp.Ports) == 0 && hp.Failure == "" {
		return []check.Finding{{Check: "port.state", Outcome: check.Unknown, Subject: hp.Tool,
			Message: fmt.Sprintf("the %s output has no port section (device attributes only, or cut short): nothing to judge the ports by", hp.Tool)}}, hp, nil
	}
	for i := range hp.Ports {
		p := &hp.Ports[i]
		if p.Model == "" {
			if m, ok := modelOf("", p.PartID); ok {
				p.Model = m.Name
			}
		}
	}
	src := hp.Tool
	var fs []check.Finding
	if hp.Failure != "" {
		fs = append(fs, check.Finding{Check: "port.state", Outcome: check.Unknown, Subject: hp.Tool,
			Message:  fmt.Sprintf("%s failed part way (%s): devices after the last one listed were not read", hp.Tool, hp.Failure),
			Evidence: []check.Evidence{{What: hp.Tool, Value: hp.Failure, Source: src}}})
	}
	active, up, unread := 0, 0, 0
	for _, p := range hp.Ports {
		if p.State == "Active" {
			up++
		}
		if p.State == "" {
			unread++
		}
	}
	subject := func(p HostPort) string { return fmt.Sprintf("%s port %d", p.Device, p.Port) }
	stateEv := func(p HostPort) []check.Evidence {
		return []check.Evidence{{What: "state", Value: stateText(p), Source: src}}
	}
	for _, p := range hp.Ports {
		switch {
		case p.State == "":
			fs = append(fs, check.Finding{Check: "port.state", Outcome: check.Unknown, Subject: subject(p),
				Message: "no state in the output (cut short)"})
		case p.State == "Active" && (p.PhysState == "LinkUp" || p.PhysState == ""):
			active++
		case p.PhysState == "LinkUp":
			msg, fix := hostcheck.NotActivated(p.State, strings.HasSuffix(host.DeviceName("0x15b3", p.PartID), " VF"), p.SMLID)
			fs = append(fs, check.Finding{Check: "port.state", Outcome: check.Fail, Subject: subject(p),
				Message: msg, Evidence: stateEv(p), Fix: fix})
		case up == 0 && unread == 0 && hp.Failure == "":
			fs = append(fs, check.Finding{Check: "port.state", Outcome: check.Fail, Subject: subject(p),
				Message:  fmt.Sprintf("%s, and no port in this output is up: nothing here can carry RDMA traffic", stateText(p)),
				Evidence: stateEv(p), Fix: []string{"check the cable and the switch port; ibportstate / ip link set <netdev> up"}})
		default:
			why := "no cable, or the far end is down"
			if p.PhysState == "Disabled" {
				why = "disabled"
			}
			fs = append(fs, check.Finding{Check: "port.state", Outcome: check.Warn, Subject: subject(p),
				Message:  fmt.Sprintf("%s (%s): unused, or a cable to check if it should be up", stateText(p), why),
				Evidence: stateEv(p), Fix: []string{"if it should be cabled: check the cable and the switch port"}})
		}
	}
	if active > 0 {
		fs = append(fs, check.Finding{Check: "port.state", Outcome: check.Pass, Subject: "ports", Message: fmt.Sprintf("%d port(s) Active/LinkUp", active)})
	}
	fs = append(fs, smRule(hp, subject)...)
	fs = append(fs, rateRule(hp, opt, subject)...)
	if opt.ExpectLayer != "" {
		ok := 0
		for _, p := range hp.Ports {
			if p.Layer == "" || p.State != "Active" {
				continue
			}
			if p.Layer != opt.ExpectLayer {
				fs = append(fs, check.Finding{Check: "port.link-layer", Outcome: check.Fail, Subject: subject(p),
					Message:  fmt.Sprintf("link layer %s, expected %s (--expect-layer)", p.Layer, opt.ExpectLayer),
					Evidence: []check.Evidence{{What: "link layer", Value: string(p.Layer), Source: src}}, Fix: []string{"mlxconfig -d <dev> set LINK_TYPE_P<port>=1 (IB) or 2 (Ethernet), then reboot"}})
				continue
			}
			ok++
		}
		if ok > 0 {
			fs = append(fs, check.Finding{Check: "port.link-layer", Outcome: check.Pass, Subject: "ports", Message: fmt.Sprintf("%d active port(s) on %s", ok, opt.ExpectLayer)})
		}
	}
	return fs, hp, nil
}

// smRule: an active InfiniBand port needs a LID and an SM LID.
func smRule(hp HostPorts, subject func(HostPort) string) []check.Finding {
	var fs []check.Finding
	ok := 0
	for _, p := range hp.Ports {
		if p.Layer != linkrate.InfiniBand || p.State != "Active" || !p.LIDKnown {
			continue
		}
		if p.LID == 0 || p.LID >= 0xc000 || p.SMLID == 0 {
			fs = append(fs, check.Finding{Check: "ib.sm", Outcome: check.Fail, Subject: subject(p),
				Message:  fmt.Sprintf("Active InfiniBand port with LID %d and SM LID %d: no subnet manager has given it a unicast LID", p.LID, p.SMLID),
				Evidence: []check.Evidence{{What: "LID", Value: fmt.Sprint(p.LID), Source: hp.Tool}}, Fix: []string{"run a subnet manager (opensm) on the fabric"}})
			continue
		}
		ok++
	}
	if ok > 0 {
		fs = append(fs, check.Finding{Check: "ib.sm", Outcome: check.Pass, Subject: "ports", Message: fmt.Sprintf("%d active InfiniBand port(s) with a LID from a subnet manager", ok)})
	}
	return fs
}

// rateRule judges active ports' rates: against --expect-rate when given;
// else against the majority of active ports of the same part and link
// layer in the output (an 8-rail node with one port at half rate); else
// the rate is unknown, not fine.
func rateRule(hp HostPorts, opt Options, subject func(HostPort) string) []check.Finding {
	var fs []check.Finding
	type group struct {
		model string
		layer linkrate.Layer
	}
	count := map[group]map[float64]int{}
	total := map[group]int{}
	for _, p := range hp.Ports {
		if p.State == "Active" && p.RateGbps > 0 {
			g := group{p.Model + p.PartID, p.Layer}
			if count[g] == nil {
				count[g] = map[float64]int{}
			}
			count[g][p.RateGbps]++
			total[g]++
		}
	}
	ok, unknown, noRate := 0, 0, 0
	for _, p := range hp.Ports {
		if p.State == "Active" && p.RateGbps <= 0 {
			noRate++
		}
		if p.State != "Active" || p.RateGbps <= 0 {
			continue
		}
		ev := []check.Evidence{{What: "rate", Value: portRate(p), Source: hp.Tool}}
		if opt.ExpectRate != nil {
			if p.RateGbps < opt.ExpectRate.Gbps {
				fs = append(fs, check.Finding{Check: "port.rate.below-expected", Outcome: check.Fail, Subject: subject(p),
					Message:  fmt.Sprintf("runs at %s, below the expected %s (--expect-rate)", portRate(p), opt.ExpectRate),
					Evidence: ev, Fix: []string{"check the cable (mlxlink -d <dev> -m) and the switch port's speed"}})
				continue
			}
			ok++
			continue
		}
		g := group{p.Model + p.PartID, p.Layer}
		best, n := 0.0, 0
		for r, c := range count[g] {
			if c > n {
				best, n = r, c
			}
		}
		if total[g] >= 3 && 2*n > total[g] {
			if p.RateGbps < best {
				name := p.Model
				if name == "" {
					name = "same-part"
				}
				fs = append(fs, check.Finding{Check: "port.rate.below-expected", Outcome: check.Fail, Subject: subject(p),
					Message:  fmt.Sprintf("runs at %s; %d of %d active %s %s ports in this output run at %g Gb/s", portRate(p), n, total[g], name, p.Layer, best),
					Evidence: ev, Fix: []string{"check the cable (mlxlink -d <dev> -m) and the switch port's speed"}})
				continue
			}
			ok++
			continue
		}
		unknown++
	}
	if ok > 0 {
		basis := "the majority of the same part's ports"
		if opt.ExpectRate != nil {
			basis = "--expect-rate " + opt.ExpectRate.String()
		}
		fs = append(fs, check.Finding{Check: "port.rate.below-expected", Outcome: check.Pass, Subject: "ports", Message: fmt.Sprintf("%d active port(s) at the expected rate (judged by %s)", ok, basis)})
	}
	if noRate > 0 {
		fs = append(fs, check.Finding{Check: "port.rate.below-expected", Outcome: check.Unknown, Subject: "ports",
			Message: fmt.Sprintf("%d active port(s) whose rate this output does not show (ibv_devinfo without -v)", noRate)})
	}
	if unknown > 0 {
		fs = append(fs, check.Finding{Check: "port.rate.below-expected", Outcome: check.Unknown, Subject: "ports",
			Message: fmt.Sprintf("%d active port(s) with nothing to judge their rate against: give --expect-rate (fewer than three ports of one part to compare)", unknown)})
	}
	return fs
}

func portRate(p HostPort) string {
	if p.Width > 0 && p.Speed != "" {
		return fmt.Sprintf("%dX %s (%g Gb/s)", p.Width, p.Speed, p.RateGbps)
	}
	return fmt.Sprintf("%g Gb/s", p.RateGbps)
}

func stateText(p HostPort) string {
	if p.PhysState == "" {
		return p.State
	}
	return p.State + "/" + p.PhysState
}
