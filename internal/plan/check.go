package plan

import (
	"fmt"
	"strings"

	"github.com/rdmalab/rdmalab/internal/check"
	"github.com/rdmalab/rdmalab/internal/host"
	"github.com/rdmalab/rdmalab/internal/hostcheck"
	"github.com/rdmalab/rdmalab/internal/lazyre"
	"github.com/rdmalab/rdmalab/internal/userfile"
	"libvirt.org/go/libvirtxml"
)

// Check judges existing libvirt domains (files written by virsh dumpxml or
// kept in /etc/libvirt/qemu) against the host they run on, with
// hostcheck's VM placement rules. A file that holds no domain is an error
// naming it.
func Check(s *host.Snapshot, paths []string) ([]check.Finding, error) {
	var doms []hostcheck.VMDomain
	for _, p := range paths {
		d, err := ReadDomain(p)
		if err != nil {
			return nil, err
		}
		doms = append(doms, d)
	}
	return hostcheck.JudgeDomains(s, doms), nil
}

// ReadDomain reads one domain from path, through userfile: a FIFO or
// device is refused at once, never blocked on, and the read is bounded.
func ReadDomain(path string) (hostcheck.VMDomain, error) {
	b, err := userfile.ReadFile(path, userfile.Domain)
	if err != nil {
		return hostcheck.VMDomain{}, err
	}
	return ParseDomain(path, b)
}

var dumpxmlName = lazyre.New(`virsh\s+dumpxml\s+(?:--\S+\s+)*([A-Za-z0-9_.:-]+)`)

// ParseDomain parses domain XML as libvirt writes it, and what people
// paste of it: indented inside a docstring or a document, after a shell
// prompt, or an excerpt of `virsh dumpxml NAME` with "..." where parts
// were cut (judged on what it shows; the rules say unknown for the rest).
func ParseDomain(source string, b []byte) (hostcheck.VMDomain, error) {
	text := string(b)
	excerpt := false
	if i := strings.Index(text, "<domain"); i >= 0 {
		j := strings.LastIndex(text, "</domain>")
		if j < i {
			return hostcheck.VMDomain{}, fmt.Errorf("%s: <domain> is never closed (a cut-off paste?)", source)
		}
		text = text[i : j+len("</domain>")]
	} else {
		m := dumpxmlName().FindStringSubmatchIndex(text)
		if m == nil || !strings.Contains(text[m[1]:], "<") {
			return hostcheck.VMDomain{}, fmt.Errorf("%s: no libvirt <domain> XML in it (want virsh dumpxml output or /etc/libvirt/qemu/NAME.xml)", source)
		}
		name := text[m[2]:m[3]]
		var keep []string
		rest := text[m[1]:]
		if nl := strings.IndexByte(rest, '\n'); nl >= 0 {
			rest = rest[nl+1:] // the rest of the command line (a "> file" redirect, say) is not output
		}
		for _, l := range strings.Split(rest, "\n") {
			t := strings.TrimSpace(l)
			if t == "..." || t == "…" || t == "" {
				continue
			}
			if !strings.HasPrefix(t, "<") {
				break // back at a prompt or prose
			}
			keep = append(keep, l)
		}
		if len(keep) == 0 {
			return hostcheck.VMDomain{}, fmt.Errorf("%s: no libvirt <domain> XML in it (virsh dumpxml %s's output is not there)", source, name)
		}
		text = "<domain type='kvm'><name>" + name + "</name>\n" + strings.Join(keep, "\n") + "\n</domain>"
		excerpt = true
	}
	var d libvirtxml.Domain
	if err := d.Unmarshal(text); err != nil {
		return hostcheck.VMDomain{}, fmt.Errorf("%s: not a libvirt domain: %v", source, err)
	}
	if d.Name == "" {
		return hostcheck.VMDomain{}, fmt.Errorf("%s: domain has no <name>", source)
	}
	v := hostcheck.VMDomain{Name: d.Name, Source: source, VCPUPins: map[int]string{}}
	if excerpt {
		v.Source = source + " (excerpt of virsh dumpxml: judged on what it shows)"
	}
	if d.VCPU != nil {
		v.VCPUs = int(d.VCPU.Value)
		if d.VCPU.CPUSet != "" {
			for i := range v.VCPUs {
				v.VCPUPins[i] = d.VCPU.CPUSet
			}
		}
	}
	if d.CPUTune != nil {
		for _, p := range d.CPUTune.VCPUPin {
			v.VCPUPins[int(p.VCPU)] = p.CPUSet
		}
		if d.CPUTune.EmulatorPin != nil {
			v.EmulatorPin = d.CPUTune.EmulatorPin.CPUSet
		}
	}
	if d.NUMATune != nil {
		if m := d.NUMATune.Memory; m != nil {
			v.MemoryMode, v.MemoryNodeset = m.Mode, m.Nodeset
			if v.MemoryMode == "" {
				v.MemoryMode = "strict" // libvirt's default
			}
		}
		for _, m := range d.NUMATune.MemNodes {
			mode := m.Mode
			if mode == "" {
				mode = "strict"
			}
			v.MemNodes = append(v.MemNodes, hostcheck.VMMemNode{Cell: int(m.CellID), Mode: mode, Nodeset: m.Nodeset})
		}
	}
	if d.Memory != nil {
		v.MemoryBytes = scaled(uint64(d.Memory.Value), d.Memory.Unit)
	}
	if mb := d.MemoryBacking; mb != nil && mb.MemoryHugePages != nil {
		v.HugePages = true
		if hp := mb.MemoryHugePages.Hugepages; len(hp) > 0 {
			v.HugePageBytes = scaled(uint64(hp[0].Size), hp[0].Unit)
		}
	}
	if d.Devices != nil {
		for _, h := range d.Devices.Hostdevs {
			if h.SubsysPCI != nil && h.SubsysPCI.Source != nil {
				if a, ok := pciAddress(h.SubsysPCI.Source.Address); ok {
					v.HostPCI = append(v.HostPCI, a)
				}
			}
		}
		for _, n := range d.Devices.Interfaces {
			if n.Source != nil && n.Source.Hostdev != nil && n.Source.Hostdev.PCI != nil {
				if a, ok := pciAddress(n.Source.Hostdev.PCI.Address); ok {
					v.HostPCI = append(v.HostPCI, a)
				}
			}
		}
	}
	return v, nil
}

func pciAddress(a *libvirtxml.DomainAddressPCI) (host.PCIAddress, bool) {
	if a == nil || a.Bus == nil || a.Slot == nil || a.Function == nil {
		return host.PCIAddress{}, false
	}
	dom := uint(0)
	if a.Domain != nil {
		dom = *a.Domain
	}
	p, err := host.NewPCIAddress(dom, *a.Bus, *a.Slot, *a.Function)
	return p, err == nil
}

// scaled converts a libvirt size with its unit (KiB when none) to bytes.
func scaled(v uint64, unit string) int64 {
	mult := map[string]uint64{"": 1 << 10, "b": 1, "bytes": 1, "k": 1 << 10, "kib": 1 << 10, "kb": 1000,
		"m": 1 << 20, "mib": 1 << 20, "mb": 1000 * 1000, "g": 1 << 30, "gib": 1 << 30, "gb": 1000 * 1000 * 1000,
		"t": 1 << 40, "tib": 1 << 40, "tb": 1000 * 1000 * 1000 * 1000}[strings.ToLower(unit)]
	if mult == 0 {
		mult = 1 << 10
	}
	return int64(v * mult)
}
