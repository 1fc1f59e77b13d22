package host

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/rdmalab/rdmalab/internal/lazyre"
	"github.com/rdmalab/rdmalab/internal/linkrate"
	"github.com/rdmalab/rdmalab/internal/portstate"
)

var (
	devinfoRE   = lazyre.New(`(?m)^\s*hca_id:\s*\S+`)
	speedCodeRE = lazyre.New(`\((\d+)\)`)
)

// SniffDevinfo reports whether b looks like ibv_devinfo's output.
func SniffDevinfo(b []byte) bool { return devinfoRE().Match(b) }

// ParseDevinfo reads ibv_devinfo's output, with or without -v, into a
// partial snapshot. Without -v it shows no rate; with -v the rate is its
// active_width × active_speed (the IBTA speed code in parentheses).
func ParseDevinfo(b []byte) *Snapshot {
	s := toolSnapshot("ibv_devinfo")
	var dev *RDMADevice
	var port *RDMAPort
	var width, speed string
	setRate := func() {
		if port == nil || width == "" || speed == "" {
			return
		}
		w, _ := linkrate.ParseWidth(width)
		if g := linkrate.IBRateGbps(width, speed); g > 0 {
			port.Rate = IBRate{Raw: fmt.Sprintf("%g Gb/sec (%dX %s)", g, w, speed), Gbps: g, WidthLanes: w, SpeedName: speed}
			port.RateGbps = g
		}
	}
	sc := lines(b)
	for sc.Scan() {
		m := kvRE().FindStringSubmatch(cleanLine(sc.Text()))
		if m == nil {
			continue
		}
		k, v := m[1], m[2]
		switch k {
		case "hca_id":
			s.RDMADevices = append(s.RDMADevices, RDMADevice{Name: v, NUMANode: -1})
			dev, port = &s.RDMADevices[len(s.RDMADevices)-1], nil
			continue
		case "port":
			n, err := strconv.Atoi(v)
			if err == nil && dev != nil {
				dev.Ports = append(dev.Ports, newToolPort(n))
				port, width, speed = &dev.Ports[len(dev.Ports)-1], "", ""
			}
			continue
		}
		if dev == nil {
			continue
		}
		if port == nil {
			switch k {
			case "fw_ver":
				dev.FWVersion = v
			case "node_guid":
				dev.NodeGUID, _ = ParseGUID(v)
			case "sys_image_guid":
				dev.SysImageGUID, _ = ParseGUID(v)
			case "board_id":
				dev.BoardID = v
			case "vendor_part_id":
				// The driver's hca_type for a Mellanox part is "MT" and
				// this number (MT4123 is device id 0x101b).
				if _, err := strconv.Atoi(v); err == nil {
					dev.HCAType = "MT" + v
				}
			}
			continue
		}
		switch k {
		case "state":
			port.State = portstate.ParseState(v)
		case "phys_state":
			port.PhysState = portstate.ParsePhys(v)
		case "port_lid":
			port.LID = lidValue(v)
		case "sm_lid":
			port.SMLID = lidValue(v)
		case "port_lmc":
			if n, err := strconv.ParseInt(v, 0, 32); err == nil {
				port.LMC = int(n)
			}
		case "link_layer":
			port.LinkLayer = sysfsLayer(v)
		case "active_mtu", "max_mtu":
			// "4096 (5)": bytes, then the IBTA enum; anything but an IB
			// MTU (256…4096) is not a reading.
			if n, err := strconv.Atoi(strings.Fields(v + " x")[0]); err == nil && slices.Contains([]int{256, 512, 1024, 2048, 4096}, n) {
				r := Got(n, "ibv_devinfo "+k)
				if k == "active_mtu" {
					port.ActiveMTU = r
				} else {
					port.MaxMTU = r
				}
			}
		case "active_width":
			width = strings.Fields(v + " x")[0]
			setRate()
		case "active_speed":
			if c := speedCodeRE().FindStringSubmatch(v); c != nil {
				n, _ := strconv.Atoi(c[1])
				if sp, ok := linkrate.SpeedByCode(n); ok {
					speed = sp.Name
				}
			}
			setRate()
		}
	}
	return finishTool(s)
}
