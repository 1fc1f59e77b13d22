// Package formats is the registry of saved tool outputs rdmalab reads:
// each entry recognises a format by its content (never by the file's
// name) and reads it into a model — a partial host snapshot, a fabric
// snapshot, perftest runs, nccl-tests output — and calls no rule. Judging
// what was read is internal/judge's, with the live commands' rules, so a
// new format is one reader, one line in Formats and its tests.
package formats

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/rdmalab/rdmalab/internal/bench"
	"github.com/rdmalab/rdmalab/internal/fabric"
	"github.com/rdmalab/rdmalab/internal/host"
	"github.com/rdmalab/rdmalab/internal/nccl"
	"github.com/rdmalab/rdmalab/internal/phy"
)

// Format is one kind of saved output.
type Format struct {
	Name string
	// Help says in one line what is read, for judge --help.
	Help string
	// Sniff reports whether b (line ends LF) looks like this format.
	// Formats are tried in order; the first that claims the bytes reads
	// them.
	Sniff func(b []byte) bool
	// Read reads b, from the file called name, into its model (see Saved).
	Read func(name string, b []byte) (any, error)
}

// NCCLFormat is the name of the nccl-tests and NCCL_DEBUG format.
const NCCLFormat = "nccl-tests / NCCL_DEBUG"

// Formats is the registry, most specific first.
var Formats = []Format{
	{"ncclras (NCCL RAS)", "NCCL's RAS report (text or -f json): communicators, ranks with host, PID, GPU and state", nccl.SniffRAS, readRAS},
	{NCCLFormat, "nccl-tests tables and NCCL_DEBUG logs: busbw, errors, transports", nccl.Sniff, readNCCL},
	{"nvidia-smi topo -m", "the GPU↔NIC matrix: rails, GPUDirect levels", host.SniffTopo, readTopo},
	{"nvidia-smi -q (Fabric)", "each GPU's multi-node NVLink registration: state, status, clique, health, bandwidth", host.SniffGPUFabric, readGPUFabric},
	{"perftest", "ib_*_bw / ib_*_lat runs: bandwidth, latency, MTU, link layer, warnings", bench.SniffPerftest, readPerftest},
	{"ibv_devinfo", "ports of each HCA (-v: width, speed, MTU) into a host snapshot", host.SniffDevinfo, readPorts(host.ParseDevinfo)},
	{"ibstatus", "ports of each HCA into a host snapshot", host.SniffIBStatus, readPorts(host.ParseIBStatus)},
	{"ibstat", "ports of each CA into a host snapshot", host.SniffIBStat, readPorts(host.ParseIBStat)},
	{"rdma link", "iproute2 rdma link show: port state, physical state, netdev into a host snapshot", sniffRDMALink, readRDMALink},
	{"rdma statistic", "iproute2 rdma statistic show: each port's hw_counters into a host snapshot", sniffRDMAStat, readRDMAStat},
	{"lspci -vvv", "PCIe links now (LnkSta) and at most (LnkCap), ACS/ATS control into a host snapshot", sniffLspci, readLspci},
	{"ibqueryerrors", "error counters of the fabric's ports", fabric.SniffIBQueryErrors, readQueryErrors},
	{"ibcheckerrors", "ports over the older tool's own thresholds", sniffCheckErrors, readCheckErrors},
	{"iblinkinfo", "links, rates, port states and LIDs of the fabric", fabric.SniffIBLinkInfo, readLinkInfo},
	{"ibnetdiscover", "the fabric's links by GUID, device models", fabric.SniffTopology, readTopology},
	{"ibnetdiscover -p", "the fabric's links by GUID (port list)", fabric.SniffIBNetDiscoverPorts, readNetDiscoverPorts},
	{"show_gids", "RoCE GID tables into a host snapshot", host.SniffShowGIDs, readShowGIDs},
	{"mlnx_qos", "RoCE QoS: trust, PFC, ECN, buffers into a host snapshot", host.SniffMlnxQos, readQoS(host.ParseMlnxQos)},
	{"dcb / lldptool", "RoCE QoS (DCB: PFC, DSCP map, ETS) into a host snapshot", host.SniffDCB, readQoS(host.ParseDCB)},
	{"ethtool -S", "pause and discard counters, one or two readings", host.SniffEthtoolS, readEthtoolS},
	{"cma_roce_mode", "the RoCE mode rdma_cm uses", host.SniffCMARoCEMode, readQoS(host.ParseCMARoCEMode)},
	{"mlxlink / mstlink", "a port's physical layer (text or --json): BER, FEC, lanes, module, link state", phy.SniffMlxlink, readPHY(phy.ParseMlxlink)},
	{"ethtool --show-fec", "the FEC mode configured and active (with -I, its counters)", phy.SniffShowFEC, readPHY(phy.ParseShowFEC)},
	{"ethtool -m", "a module's readings against its own thresholds (SFF-8472, SFF-8636, CMIS)", phy.SniffModule, readPHY(phy.ParseModule)},
	{"ibdiagnet", "ibdiagnet's stage summary and its warnings", phy.SniffIBDiag, readIBDiag},
}

// Saved is one saved output read: the file, its format and the model.
//
// Models: *HostPart (a partial host snapshot), *fabric.Snapshot,
// *CheckErrors, *host.Topo, host.GPUFabrics, PerftestRuns, *NCCLOutput.
type Saved struct {
	File   string
	Format *Format
	Model  any
}

// UnrecognisedError is a file no format claims.
type UnrecognisedError struct{ Name string }

func (e *UnrecognisedError) Error() string {
	names := make([]string, len(Formats))
	for i, f := range Formats {
		names[i] = f.Name
	}
	return fmt.Sprintf("%s: not a saved output rdmalab judges (%s)", e.Name, strings.Join(names, ", "))
}

// LF makes CRLF line ends LF, as every sniffer and reader expects.
func LF(b []byte) []byte { return bytes.ReplaceAll(b, []byte("\r\n"), []byte("\n")) }

// Recognise returns the first format that claims b (line ends already
// LF), or nil: the one sniffing of saved outputs.
func Recognise(b []byte) *Format {
	for i := range Formats {
		if Formats[i].Sniff(b) {
			return &Formats[i]
		}
	}
	return nil
}

// Read recognises b, from the file called name, and reads it.
func Read(name string, b []byte) (*Saved, error) {
	b = LF(b)
	f := Recognise(b)
	if f == nil {
		return nil, &UnrecognisedError{Name: name}
	}
	return f.ReadAs(name, b)
}

// ReadAs reads b (line ends LF), from the file called name, as format f.
func (f *Format) ReadAs(name string, b []byte) (*Saved, error) {
	m, err := f.Read(name, b)
	if err != nil {
		return nil, fmt.Errorf("%s (%s output): %w", name, f.Name, err)
	}
	return &Saved{File: name, Format: f, Model: m}, nil
}

// readRAS reads an ncclras report (a named repair for 2.28.x's JSON).
func readRAS(name string, b []byte) (any, error) {
	r, err := nccl.ParseRAS(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return r, nil
}
