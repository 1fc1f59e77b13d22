package host

import (
	"strconv"
	"strings"

	"github.com/rdmalab/rdmalab/internal/lazyre"
	"github.com/rdmalab/rdmalab/internal/portstate"
)

var ibstatCARE = lazyre.New(`(?m)^[\s│|]*CA '([^']+)'`)

// SniffIBStat reports whether b looks like ibstat's output.
func SniffIBStat(b []byte) bool { return ibstatCARE().Match(b) }

// ParseIBStat reads ibstat's output ("CA 'mlx5_0'", "Port 1:", "State:
// Active", "Rate: 200", ...) into a partial snapshot. An ibpanic or a
// failed ibwarn part way is kept as a collect error of the device list:
// devices after the last one listed were not read.
func ParseIBStat(b []byte) *Snapshot {
	s := toolSnapshot("ibstat")
	var dev *RDMADevice
	var port *RDMAPort
	sc := lines(b)
	for sc.Scan() {
		l := cleanLine(sc.Text())
		if strings.HasPrefix(l, "ibpanic:") || strings.HasPrefix(l, "ibwarn:") && strings.Contains(l, "fail") {
			s.Errors = append(s.Errors, CollectError{Subject: "rdma", Path: "ibstat", Error: "ibstat failed part way (" + l + "): devices after the last one listed were not read"})
			continue
		}
		if m := ibstatCARE().FindStringSubmatch(l); m != nil {
			s.RDMADevices = append(s.RDMADevices, RDMADevice{Name: m[1], NUMANode: -1})
			dev, port = &s.RDMADevices[len(s.RDMADevices)-1], nil
			continue
		}
		if dev == nil {
			continue
		}
		if strings.HasPrefix(l, "Port ") && strings.HasSuffix(l, ":") {
			if n, err := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(l, "Port "), ":")); err == nil {
				dev.Ports = append(dev.Ports, newToolPort(n))
				port = &dev.Ports[len(dev.Ports)-1]
			}
			continue
		}
		m := kvRE().FindStringSubmatch(l)
		if m == nil {
			continue
		}
		k, v := m[1], m[2]
		if port == nil {
			switch k {
			case "CA type":
				dev.HCAType = v
			case "Firmware version":
				dev.FWVersion = v
			case "Node GUID":
				dev.NodeGUID, _ = ParseGUID(v)
			case "System image GUID":
				dev.SysImageGUID, _ = ParseGUID(v)
			}
			continue
		}
		switch k {
		case "State":
			port.State = portstate.ParseState(v)
		case "Physical state":
			port.PhysState = portstate.ParsePhys(v)
		case "Rate":
			// ibstat prints the rate alone, without width or speed.
			if g, err := strconv.ParseFloat(v, 64); err == nil {
				port.Rate, port.RateGbps = IBRate{Raw: v, Gbps: g}, g
			}
		case "Base lid":
			port.LID = lidValue(v)
		case "SM lid":
			port.SMLID = lidValue(v)
		case "LMC":
			port.LMC, _ = strconv.Atoi(v)
		case "Capability mask":
			port.CapMask = v
		case "Port GUID":
			port.PortGUID, _ = ParseGUID(v)
		case "Link layer":
			port.LinkLayer = sysfsLayer(v)
		}
	}
	return finishTool(s)
}
