package formats

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/rdmalab/rdmalab/internal/host"
	"github.com/rdmalab/rdmalab/internal/lazyre"
)

// The reader of `lspci -vvv`: each function's link now (LnkSta) and at
// most (LnkCap) into the host model's PCIe link fields, so doctor's
// pcie.link.degraded judges a NIC or GPU trained below its capability;
// ACS control of bridges and ATS control of endpoints (config space only
// root reads, hence never in a snapshot) into PCIeControl. With -nn the
// class code and vendor:device ids are read as printed. Paste warts read: mail
// archives wrap long lines at column 0, authors cut blocks with dots,
// indentation changes, an `lspci -tv` tree follows.

var (
	lspciHeadRE   = lazyre.New(`^(?:([0-9a-fA-F]{4}):)?([0-9a-fA-F]{2}):([0-9a-fA-F]{2})\.([0-7])\s+([A-Za-z0-9 /\-]+?)(?: \[([0-9a-fA-F]{4})\])?:\s+(.*)$`)
	lspciIDsRE    = lazyre.New(`\[([0-9a-fA-F]{4}):([0-9a-fA-F]{4})\]`)
	lspciLnkCapRE = lazyre.New(`LnkCap:\s.*?Speed ([\d.]+)GT/s.*?Width x(\d+)`)
	lspciLnkStaRE = lazyre.New(`LnkSta:\s.*?Speed ([\d.]+)GT/s[^,]*, Width x(\d+)`)
	lspciSniffRE  = lazyre.New(`(?m)^(?:[0-9a-fA-F]{4}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7] [A-Za-z0-9 /\-]+(?: \[[0-9a-fA-F]{4}\])?: .*\n(?:.*\n){0,80}?\s*(?:LnkCap|LnkSta|ACSCtl|ATSCtl|Capabilities):`)
	lspciTreeRE   = lazyre.New(`^\s*[+|\\]-|^\s+\|`)
	lspciPowerRE  = lazyre.New(`^\s*Status: (D[0-3](?:hot|cold)?)\b`)
	lspciFieldRE  = lazyre.New(`^[A-Za-z][A-Za-z0-9]*(?: [A-Za-z][A-Za-z0-9]*){0,3}:\s`)
)

// lspciClasses are lspci's class names (spaces dropped, lower case: mail
// archives drop spaces) and their class codes.
var lspciClasses = map[string]string{
	"ethernetcontroller": "0x020000", "networkcontroller": "0x028000", "infinibandcontroller": "0x020700",
	"vgacompatiblecontroller": "0x030000", "3dcontroller": "0x030200", "displaycontroller": "0x038000",
	"processingaccelerators": "0x120000", "pcibridge": "0x060400", "audiodevice": "0x040300",
	"non-volatilememorycontroller": "0x010802",
}

// vendorOf reads the vendor from lspci's device description.
func vendorOf(desc string) string {
	switch {
	case strings.Contains(desc, "NVIDIA"):
		return host.VendorNVIDIA
	case strings.Contains(desc, "Mellanox"):
		return host.VendorMellanox
	case strings.Contains(desc, "AMD/ATI"), strings.Contains(desc, "ATI Technologies"):
		return host.VendorAMD
	case strings.Contains(desc, "Advanced Micro Devices"):
		return "0x1022"
	case strings.Contains(desc, "Intel"):
		return "0x8086"
	case strings.Contains(desc, "Broadcom"):
		return "0x14e4"
	}
	return ""
}

// PCIeControl is what lspci -vvv shows of a function's ACS and ATS
// control: the flags set (+) and cleared (-), as printed. The host model
// has no place for them yet; they are kept here as read.
type PCIeControl struct {
	Address host.PCIAddress `json:"address"`
	// ACSCtl maps each ACS control flag (SrcValid, ReqRedir, CmpltRedir,
	// UpstreamFwd, …) to whether it is set.
	ACSCtl map[string]bool `json:"acs_ctl,omitempty"`
	// ATSEnabled is ATSCtl's Enable (nil: not shown).
	ATSEnabled *bool  `json:"ats_enabled,omitempty"`
	Source     string `json:"source"`
}

// sniffLspci wants a function's header line and, below it, a capability
// line of -vv: a bare `lspci` list or a tree is not judged.
func sniffLspci(b []byte) bool { return lspciSniffRE().Match(b) }

// lspciLines undoes mail wrapping: a line at column 0 that is not a
// device header, a field ("LnkSta: …", of a paste that lost its
// indentation), a tree line or an author's dots continues the line
// before it.
func lspciLines(b []byte) (lines []string, at []int) {
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	n := 0
	for sc.Scan() {
		n++
		l := strings.TrimRight(sc.Text(), " \t")
		t := strings.TrimSpace(l)
		wrapped := len(lines) > 0 && l != "" && l[0] != ' ' && l[0] != '\t' &&
			!lspciHeadRE().MatchString(l) && !lspciFieldRE().MatchString(l) && !strings.HasPrefix(t, "..") && !lspciTreeRE().MatchString(l) &&
			strings.TrimSpace(lines[len(lines)-1]) != "" && !strings.HasPrefix(strings.TrimSpace(lines[len(lines)-1]), "..")
		if wrapped {
			lines[len(lines)-1] += " " + t
			continue
		}
		lines, at = append(lines, l), append(at, n)
	}
	return lines, at
}

// readLspci reads lspci -vvv into a partial host snapshot: every function
// with its class, vendor, driver, NUMA node and link; GPUs (GPU classes)
// and RDMA NICs listed as such, so pcie.link.degraded judges them as
// doctor does (doctor's NICs are RDMA devices: a 1 GbE management port
// is not one); ACS and ATS control kept in PCIeControl.
func readLspci(name string, b []byte) (any, error) {
	s := partial(name)
	s.Tool = "lspci -vvv"
	base := filepath.Base(name)
	part := &HostPart{Snapshot: s, Shows: ShowsPCIe}
	lines, at := lspciLines(b)
	var d *host.PCIDevice
	var ctl *PCIeControl
	power := map[host.PCIAddress]string{}
	flush := func() {
		if d == nil {
			return
		}
		s.PCIDevices = append(s.PCIDevices, *d)
		if ctl != nil && (ctl.ACSCtl != nil || ctl.ATSEnabled != nil) {
			part.PCIeControl = append(part.PCIeControl, *ctl)
		}
		d, ctl = nil, nil
	}
	for i, l := range lines {
		src := fmt.Sprintf("%s line %d", base, at[i])
		if m := lspciHeadRE().FindStringSubmatch(l); m != nil {
			flush()
			addr, err := host.ParsePCIAddress(fmt.Sprintf("%s:%s:%s.%s", cmpOr(m[1], "0000"), m[2], m[3], m[4]))
			if err != nil {
				continue
			}
			cls := lspciClasses[strings.ToLower(strings.ReplaceAll(m[5], " ", ""))]
			if m[6] != "" { // -nn: the class code as printed
				cls = "0x" + strings.ToLower(m[6]) + "00"
			}
			vendor, device := vendorOf(m[7]), ""
			if ids := lspciIDsRE().FindAllStringSubmatch(m[7], -1); len(ids) > 0 { // -nn: the last [vvvv:dddd] is the function's
				last := ids[len(ids)-1]
				vendor, device = "0x"+strings.ToLower(last[1]), "0x"+strings.ToLower(last[2])
			}
			d = &host.PCIDevice{Address: addr, Class: cls, ClassName: m[5], Vendor: vendor, Device: device, NUMANode: -1, LocalityNUMANode: -1, LocalitySource: "unknown",
				Sources: map[string]string{"device": src}}
			if host.IsBridgeClass(cls) {
				d.BridgeRole = "bridge"
			}
			ctl = &PCIeControl{Address: addr, Source: src}
			continue
		}
		if d == nil {
			continue
		}
		t := strings.TrimSpace(l)
		switch {
		case strings.HasPrefix(t, "LnkCap:"):
			if m := lspciLnkCapRE().FindStringSubmatch(t); m != nil {
				d.MaxLinkSpeedGTps, _ = strconv.ParseFloat(m[1], 64)
				d.MaxLinkWidth, _ = strconv.Atoi(m[2])
				d.Sources["max_link_speed"], d.Sources["max_link_width"] = src+" (LnkCap)", src+" (LnkCap)"
			}
		case strings.HasPrefix(t, "LnkSta:"):
			if m := lspciLnkStaRE().FindStringSubmatch(t); m != nil {
				d.CurrentLinkSpeedGTps, _ = strconv.ParseFloat(m[1], 64)
				d.CurrentLinkWidth, _ = strconv.Atoi(m[2])
				d.Sources["current_link_speed"], d.Sources["current_link_width"] = src+" (LnkSta)", src+" (LnkSta)"
			}
		case strings.HasPrefix(t, "ACSCtl:"):
			ctl.ACSCtl = flags(strings.TrimPrefix(t, "ACSCtl:"))
			ctl.Source = src
		case strings.HasPrefix(t, "ATSCtl:"):
			if f := flags(strings.TrimPrefix(t, "ATSCtl:")); f != nil {
				if v, ok := f["Enable"]; ok {
					ctl.ATSEnabled = &v
				}
			}
		case strings.HasPrefix(t, "Kernel driver in use:"):
			d.Driver = strings.TrimSpace(strings.TrimPrefix(t, "Kernel driver in use:"))
		case strings.HasPrefix(t, "NUMA node:"):
			if n, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(t, "NUMA node:"))); err == nil {
				d.NUMANode, d.LocalityNUMANode, d.LocalitySource = n, n, "numa_node"
			}
		case strings.HasPrefix(t, "IOMMU group:"):
			if n, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(t, "IOMMU group:"))); err == nil {
				d.IOMMUGroup = &n
			}
		default:
			if m := lspciPowerRE().FindStringSubmatch(l); m != nil {
				power[d.Address] = m[1]
			}
		}
	}
	flush()
	if len(s.PCIDevices) == 0 {
		return nil, errors.New("no PCI function header (BB:DD.F class: device)")
	}
	var others []string
	for _, p := range s.PCIDevices {
		switch {
		case host.IsGPUClass(p.Class, p.Vendor):
			s.GPUs = append(s.GPUs, host.GPU{Address: p.Address, Vendor: p.Vendor, Name: p.ClassName, Driver: p.Driver, NUMANode: p.LocalityNUMANode})
		case rdmaNIC(p):
			// lspci names no RDMA device: the NIC is known by its
			// function, which is what the PCIe rule judges.
			s.RDMADevices = append(s.RDMADevices, host.RDMADevice{PCIAddress: p.Address, Driver: p.Driver, NUMANode: p.LocalityNUMANode})
		case !host.IsBridgeClass(p.Class) && p.CurrentLinkSpeedGTps > 0 && (p.CurrentLinkSpeedGTps < p.MaxLinkSpeedGTps || p.CurrentLinkWidth < p.MaxLinkWidth):
			// Below its capability but no RDMA NIC or GPU: named, with
			// what would explain it, not judged.
			why := "not an RDMA NIC or a GPU, not judged"
			if p.Driver != "" {
				why = "driver " + p.Driver + ": " + why
			}
			why += fmt.Sprintf("; its link %g GT/s x%d of %g GT/s x%d", p.CurrentLinkSpeedGTps, p.CurrentLinkWidth, p.MaxLinkSpeedGTps, p.MaxLinkWidth)
			if pw := power[p.Address]; pw != "" && pw != "D0" {
				why += ", in power state " + pw + ", where the link idles"
			}
			part.Skipped = append(part.Skipped, fmt.Sprintf("%s: %s (%s): %s", strings.TrimPrefix(p.Sources["device"], base+" "), p.Address, p.ClassName, why))
		default:
			others = append(others, p.ClassName)
		}
	}
	if len(others) > 0 {
		slices.Sort(others)
		part.Skipped = append(part.Skipped, fmt.Sprintf("%d other function(s) (%s) read, not judged: pcie.link.degraded judges RDMA NICs and GPUs", len(others), strings.Join(slices.Compact(others), ", ")))
	}
	var acs, redirect []string
	for _, c := range part.PCIeControl {
		if c.ACSCtl == nil {
			continue
		}
		acs = append(acs, c.Address.String())
		var set []string
		for _, k := range []string{"ReqRedir", "CmpltRedir"} {
			if c.ACSCtl[k] {
				set = append(set, k+"+")
			}
		}
		if len(set) > 0 {
			redirect = append(redirect, fmt.Sprintf("%s (%s) %s", c.Address, strings.TrimPrefix(c.Source, base+" "), strings.Join(set, " ")))
		}
	}
	if len(acs) > 0 {
		what := "none redirects peer requests"
		if len(redirect) > 0 {
			what = "ACS redirect on " + strings.Join(redirect, ", ")
		}
		part.Skipped = append(part.Skipped, fmt.Sprintf("ACSCtl of %d function(s) read (%s), not judged: gpudirect.acs judges the bridges on a GPU↔NIC path of a host snapshot, which holds no ACS yet", len(acs), what))
	}
	s.Normalize()
	return part, nil
}

// flags reads lspci's flag list ("SrcValid+ TransBlk- ReqRedir+") into
// name → set; nil when none reads.
func flags(s string) map[string]bool {
	var out map[string]bool
	for _, w := range strings.FieldsFunc(s, func(r rune) bool { return r == ' ' || r == '\t' || r == ',' }) {
		if len(w) < 2 {
			continue
		}
		switch w[len(w)-1] {
		case '+', '-':
			if out == nil {
				out = map[string]bool{}
			}
			out[w[:len(w)-1]] = w[len(w)-1] == '+'
		}
	}
	return out
}

// rdmaDrivers are the Ethernet drivers of NICs with an RDMA function
// (mlx5_ib, bnxt_re, irdma, qedr, efa, ionic_rdma, erdma, iw_cxgb4,
// hns_roce sit on them).
var rdmaDrivers = []string{"mlx5_core", "mlx4_core", "bnxt_en", "ice", "qede", "efa", "ionic", "erdma", "cxgb4", "hns3"}

// rdmaNIC: an InfiniBand controller, a Mellanox network function, or a
// network function whose driver carries RDMA.
func rdmaNIC(p host.PCIDevice) bool {
	if !strings.HasPrefix(p.Class, "0x02") {
		return false
	}
	return p.Class == "0x020700" || p.Vendor == host.VendorMellanox || slices.Contains(rdmaDrivers, p.Driver)
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
