package phy

import (
	"fmt"
	"path"
	"strconv"
	"strings"

	"github.com/rdmalab/rdmalab/internal/lazyre"
)

// Dir is where a host tree keeps its saved physical-layer outputs, one
// file per port and tool: <Dir>/<ibdev>-<port>.<tool>.<ext> for an RDMA
// port (mlx5_0-1.mlxlink.json), <Dir>/<netdev>.<tool>.<ext> for an
// interface (enp65s0f0np0.ethtool-S.txt). The content decides the format;
// the name says which port it is about, since the outputs rarely do.
const Dir = "/var/lib/rdmalab/phy"

var nameRE = lazyre.New(`^(.+)-(\d+)$`)

// Identity is the port a saved output's file name names.
type Identity struct {
	Device string
	Port   int
	Netdev string
}

// IdentityOf reads a file name of the convention: "mlx5_0-1.mlxlink.json"
// is mlx5_0 port 1; "enp65s0f0np0.ethtool-S.txt" the netdev.
func IdentityOf(file string) Identity {
	base, _, _ := strings.Cut(path.Base(file), ".")
	if m := nameRE().FindStringSubmatch(base); m != nil {
		n, err := strconv.Atoi(m[2])
		if err == nil && n > 0 && n < 256 {
			return Identity{Device: m[1], Port: n}
		}
	}
	return Identity{Netdev: base}
}

// Read reads any per-port PHY format (mlxlink/mstlink, ethtool -S,
// --show-fec, ethtool -m) by its content; name is the file, for sources.
func Read(b []byte, name string) ([]Port, error) {
	switch {
	case SniffMlxlink(b):
		return ParseMlxlink(b, name)
	case SniffShowFEC(b):
		return ParseShowFEC(b, name)
	case SniffModule(b):
		return ParseModule(b, name)
	case SniffEthtoolS(b):
		return ParseEthtoolS(b, name)
	}
	return nil, fmt.Errorf("not a physical-layer output rdmalab reads (mlxlink/mstlink text or --json, ethtool -S, ethtool --show-fec, ethtool -m)")
}

// Named reads a saved output and gives each port the identity its file
// name carries (the output's own device name, an mst path, is kept in
// Source) and the host.
func Named(b []byte, file, hostname string) ([]Port, error) {
	ps, err := Read(b, file)
	if err != nil {
		return nil, err
	}
	id := IdentityOf(file)
	for i := range ps {
		p := &ps[i]
		if p.Device != "" && p.Device != id.Device {
			p.Source += " (the output names " + p.Name() + ")"
		}
		if id.Device != "" {
			p.Device, p.Port = id.Device, id.Port
		} else {
			p.Netdev = id.Netdev
		}
		if p.Host == "" {
			p.Host = hostname
		}
	}
	return ps, nil
}
