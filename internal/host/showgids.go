package host

import (
	"bufio"
	"bytes"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/rdmalab/rdmalab/internal/lazyre"
)

var showGIDsHeaderRE = lazyre.New(`(?m)^[\s*|]*DEV\s+PORT\s+INDEX\s+GID\b`)

// SniffShowGIDs reports whether b looks like MLNX_OFED's show_gids.
func SniffShowGIDs(b []byte) bool { return showGIDsHeaderRE().Match(b) }

// ParseShowGIDs reads show_gids output into RDMA devices with their ports'
// GID tables, as inventory reads them from gids/ and gid_attrs/. A row
// with a netdev is a RoCE port's (link layer Ethernet); a device whose
// rows name no netdev is left with its link layer unknown. Port state is
// not in the output and stays unknown. Lines may carry a comment prefix
// (" * "); "n_gids_found" must agree with the rows when present.
func ParseShowGIDs(b []byte) ([]RDMADevice, error) {
	var devs []RDMADevice
	rows, want := 0, -1
	header := false
	sc := bufio.NewScanner(bytes.NewReader(b))
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimSpace(linePrefixRE().ReplaceAllString(sc.Text(), ""))
		if showGIDsHeaderRE().MatchString(line) {
			header = true
			continue
		}
		if v, ok := strings.CutPrefix(line, "n_gids_found="); ok {
			c, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil {
				return nil, fmt.Errorf("line %d: n_gids_found %q", n, v)
			}
			want = c
			continue
		}
		f := strings.Fields(line)
		if !header || len(f) < 5 || strings.Trim(line, "- \t") == "" {
			continue
		}
		port, err1 := strconv.Atoi(f[1])
		idx, err2 := strconv.Atoi(f[2])
		a, err3 := ParseGID(f[3])
		if err1 != nil || err2 != nil || err3 != nil || port < 1 || idx < 0 {
			return nil, fmt.Errorf("line %d: %q: want DEV PORT INDEX GID [IPv4] VER [NETDEV]", n, line)
		}
		rest := f[4:]
		g := GID{Index: idx, GID: a.String()}
		if v4, ok := GIDIPv4(a); ok {
			g.IPv4 = v4.String()
			if len(rest) > 0 && rest[0] == g.IPv4 {
				rest = rest[1:]
			}
		}
		if len(rest) == 0 {
			return nil, fmt.Errorf("line %d: no GID version", n)
		}
		switch rest[0] {
		case "v1":
			g.Type = GIDTypeIBRoCEv1
		case "v2":
			g.Type = GIDTypeRoCEv2
		default:
			return nil, fmt.Errorf("line %d: version %q: want v1 or v2", n, rest[0])
		}
		if len(rest) > 1 {
			g.NetDev = rest[1]
		}
		di := slices.IndexFunc(devs, func(d RDMADevice) bool { return d.Name == f[0] })
		if di < 0 {
			devs = append(devs, RDMADevice{Name: f[0], NUMANode: -1})
			di = len(devs) - 1
		}
		d := &devs[di]
		pi := slices.IndexFunc(d.Ports, func(p RDMAPort) bool { return p.Port == port })
		if pi < 0 {
			d.Ports = append(d.Ports, RDMAPort{Port: port})
			pi = len(d.Ports) - 1
		}
		p := &d.Ports[pi]
		if slices.ContainsFunc(p.GIDs, func(x GID) bool { return x.Index == idx }) {
			return nil, fmt.Errorf("line %d: %s port %d index %d listed twice", n, f[0], port, idx)
		}
		p.GIDs = append(p.GIDs, g)
		if g.NetDev != "" {
			p.LinkLayer = "Ethernet"
			if !slices.Contains(p.NetDevs, g.NetDev) {
				p.NetDevs = append(p.NetDevs, g.NetDev)
			}
		}
		rows++
	}
	if !header {
		return nil, fmt.Errorf("no show_gids header (DEV PORT INDEX GID …)")
	}
	if want >= 0 && want != rows {
		return nil, fmt.Errorf("n_gids_found=%d but %d GID rows", want, rows)
	}
	return devs, nil
}
