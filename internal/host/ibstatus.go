package host

import (
	"strconv"
	"strings"

	"github.com/rdmalab/rdmalab/internal/lazyre"
	"github.com/rdmalab/rdmalab/internal/portstate"
)

var ibstatusRE = lazyre.New(`(?m)^\s*Infiniband device '([^']+)' port (\d+) status:`)

// SniffIBStatus reports whether b looks like ibstatus's output.
func SniffIBStatus(b []byte) bool { return ibstatusRE().Match(b) }

// ParseIBStatus reads ibstatus's output ("Infiniband device 'mlx5_0' port
// 1 status:", "state: 4: ACTIVE", "rate: 200 Gb/sec (4X HDR)") into a
// partial snapshot.
func ParseIBStatus(b []byte) *Snapshot {
	s := toolSnapshot("ibstatus")
	var port *RDMAPort
	sc := lines(b)
	for sc.Scan() {
		l := cleanLine(sc.Text())
		if m := ibstatusRE().FindStringSubmatch(l); m != nil {
			n, _ := strconv.Atoi(m[2])
			d := s.RDMA(m[1])
			if d == nil {
				s.RDMADevices = append(s.RDMADevices, RDMADevice{Name: m[1], NUMANode: -1})
				d = &s.RDMADevices[len(s.RDMADevices)-1]
			}
			d.Ports = append(d.Ports, newToolPort(n))
			port = &d.Ports[len(d.Ports)-1]
			continue
		}
		m := kvRE().FindStringSubmatch(l)
		if m == nil || port == nil {
			continue
		}
		switch v := m[2]; m[1] {
		case "state":
			port.State = portstate.ParseState(v)
		case "phys state":
			port.PhysState = portstate.ParsePhys(v)
		case "rate":
			if r, err := ParseIBRate(v); err == nil {
				port.Rate, port.RateGbps = r, r.Gbps
			} else if g, err := strconv.ParseFloat(strings.Fields(v + " x")[0], 64); err == nil {
				// RoCE ports: "100 Gb/sec (4X EDR)" or just "25 Gb/sec".
				port.Rate, port.RateGbps = IBRate{Raw: v, Gbps: g}, g
			}
		case "base lid":
			port.LID = lidValue(v)
		case "sm lid":
			port.SMLID = lidValue(v)
		case "link_layer":
			port.LinkLayer = sysfsLayer(v)
		}
	}
	return finishTool(s)
}
