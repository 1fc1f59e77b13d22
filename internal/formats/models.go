package formats

import (
	"fmt"
	"path/filepath"

	"github.com/rdmalab/rdmalab/internal/bench"
	"github.com/rdmalab/rdmalab/internal/host"
	"github.com/rdmalab/rdmalab/internal/phy"
	"github.com/rdmalab/rdmalab/internal/portstate"
)

// Shows says which parts of a host a saved output showed, so the judge
// runs only the rules those parts can feed (a port listing says nothing
// of PCIe, a QoS dump nothing of port states).
type Shows uint8

const (
	// ShowsPorts: RDMA devices and their ports (state, rate, LIDs, layer).
	ShowsPorts Shows = 1 << iota
	// ShowsCounters: the ports' error and drop counters.
	ShowsCounters
	// ShowsPCIe: PCI functions with their link now and at most.
	ShowsPCIe
	// ShowsRoCE: RoCE QoS (trust, PFC, ECN, pause counters, mode).
	ShowsRoCE
	// ShowsGIDs: RoCE GID tables.
	ShowsGIDs
)

// HostPart is a partial host snapshot: what one saved output showed of a
// host (named after the file, since the outputs rarely name it).
type HostPart struct {
	Snapshot *host.Snapshot
	Shows    Shows
	// Readings are ethtool -S readings in the file's order (two of one
	// interface show whether pauses rise).
	Readings []host.EthtoolReading
	// PCIeControl is ACS and ATS control as lspci -vvv showed it.
	PCIeControl []PCIeControl
	// PHY are the physical-layer facts the same ethtool -S rows carry
	// (symbol errors, corrected bits, per-lane errors).
	PHY []phy.Port
	// Skipped names what of the output was not read or not judged, and
	// why (with line numbers).
	Skipped []string
}

// PerftestRuns are the runs of one saved perftest output (a transcript
// may hold several).
type PerftestRuns []*bench.PerftestResult

// NCCLOutput is saved nccl-tests output or an NCCL_DEBUG log. nccl reads
// and judges it in one step (nccl.JudgeFile: each table's collective, the
// hosts and the environment are read from the whole file), so the model
// is the text; the registry only recognises it.
type NCCLOutput struct {
	Text []byte
}

// CheckErrors is the older ibcheckerrors' output: each counter over its
// own threshold, by port, and whether its summary was printed.
type CheckErrors struct {
	Over    []CheckError
	Summary bool
}

// CheckError is one counter ibcheckerrors warned about.
type CheckError struct {
	LID, Desc, Port string // Port "all": summed over the node's ports
	Counter         string
	Value           string
	Threshold       string
}

// partial starts the host snapshot of one saved output.
func partial(name string) *host.Snapshot {
	return &host.Snapshot{SchemaVersion: host.SchemaVersion, Hostname: filepath.Base(name), Source: name}
}

func readNCCL(name string, b []byte) (any, error) { return &NCCLOutput{Text: b}, nil }

func readTopo(name string, b []byte) (any, error) { return host.ParseTopo(b) }

func readGPUFabric(name string, b []byte) (any, error) {
	return host.ParseGPUFabric(b, filepath.Base(name))
}

func readPerftest(name string, b []byte) (any, error) {
	runs, err := bench.ParsePerftestRuns(string(b))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return PerftestRuns(runs), nil
}

// readPorts reads a port listing (ibstat, ibstatus, ibv_devinfo) with its
// parser beside the host model.
func readPorts(parse func([]byte) *host.Snapshot) func(string, []byte) (any, error) {
	return func(name string, b []byte) (any, error) {
		s := parse(b)
		s.Hostname = filepath.Base(name)
		return &HostPart{Snapshot: s, Shows: ShowsPorts}, nil
	}
}

func readQoS(parse func([]byte, string) ([]host.RoCEQoS, error)) func(string, []byte) (any, error) {
	return func(name string, b []byte) (any, error) {
		qs, err := parse(b, filepath.Base(name))
		if err != nil {
			return nil, err
		}
		s := partial(name)
		for _, q := range qs {
			// No port state in a saved output: the QoS as shown, keyed
			// by the netdev or, without one, the RDMA port; the device
			// stays for the fixes that name it.
			if q.Netdev == "" && q.Device != "" {
				q.Netdev = fmt.Sprintf("%s port %d", q.Device, q.Port)
			}
			s.AddRoCEQoS(q)
		}
		return &HostPart{Snapshot: s, Shows: ShowsRoCE}, nil
	}
}

func readShowGIDs(name string, b []byte) (any, error) {
	devs, err := host.ParseShowGIDs(b)
	if err != nil {
		return nil, err
	}
	s := partial(name)
	s.RDMADevices = devs
	return &HostPart{Snapshot: s, Shows: ShowsGIDs}, nil
}

// readEthtoolS reads every ethtool -S reading; the last of each
// interface is the snapshot's, the earlier ones stay in Readings.
// readEthtoolS reads ethtool -S rows once: the RoCE pause and discard
// counters into the host snapshot, and the mlx5 PHY counters the same rows
// carry into phy's per-port facts. A paste of PHY counters alone shows no
// RoCE part.
func readEthtoolS(name string, b []byte) (any, error) {
	all, err := phy.ReadEthtoolS(b)
	if err != nil {
		return nil, err
	}
	s := partial(name)
	base := filepath.Base(name)
	hp := &HostPart{Snapshot: s}
	for i, r := range host.RoCEReadings(all) {
		if p, ok := phy.FromEthtoolS(all[i], base); ok {
			hp.PHY = append(hp.PHY, p)
		}
		if len(r.Counters) == 0 && all[i].HasPHY() {
			continue
		}
		hp.Readings = append(hp.Readings, r)
		s.AddRoCEQoS(host.RoCEQoS{Netdev: r.Netdev, Counters: host.Got(r.Counters, fmt.Sprintf("%s line %d", base, r.Line))})
	}
	if len(hp.Readings) > 0 {
		hp.Shows = ShowsRoCE
	}
	return hp, nil
}

// PHYPorts are the physical-layer facts of a saved mlxlink/mstlink,
// ethtool --show-fec or ethtool -m output.
type PHYPorts []phy.Port

// readPHY reads a physical-layer output into per-port facts.
func readPHY(parse func([]byte, string) ([]phy.Port, error)) func(string, []byte) (any, error) {
	return func(name string, b []byte) (any, error) {
		ps, err := parse(b, filepath.Base(name))
		if err != nil {
			return nil, err
		}
		return PHYPorts(ps), nil
	}
}

// readIBDiag reads an ibdiagnet summary.
func readIBDiag(name string, b []byte) (any, error) {
	return phy.ParseIBDiag(b, filepath.Base(name))
}

// The port state vocabulary is portstate's, whatever the tool's spelling.
var (
	parseState = portstate.ParseState
	parsePhys  = portstate.ParsePhys
)
