// Package judge judges what users already have: saved outputs of the
// InfiniBand tools (ibnetdiscover, iblinkinfo in both modes, ibqueryerrors
// and the older ibcheckerrors, ibstat, ibstatus, ibv_devinfo with or
// without -v), perftest, nccl-tests and NCCL_DEBUG logs, recognised by
// content, with the same rules and the same check.Finding as the live
// commands. Each format is one entry of Formats: a sniffer and a judge.
package judge

import (
	"bytes"
	"fmt"
	"path/filepath"

	"github.com/rdmalab/rdmalab/internal/bench"
	"github.com/rdmalab/rdmalab/internal/check"
	"github.com/rdmalab/rdmalab/internal/fabric"
	"github.com/rdmalab/rdmalab/internal/gpudirect"
	"github.com/rdmalab/rdmalab/internal/host"
	"github.com/rdmalab/rdmalab/internal/linkrate"
	"github.com/rdmalab/rdmalab/internal/nccl"
	"github.com/rdmalab/rdmalab/internal/phy"
)

// Options are what saved outputs are judged against.
type Options struct {
	// Expect is the rate every link and port should run at (no rate:
	// judged by device models and peers) and the link layer every host
	// port should have (none: not checked), with where they come from.
	Expect linkrate.Expect
	// Plan is the intended cabling, for topology outputs (nil: none).
	Plan *fabric.Topology
	// Thresholds override error counter thresholds by PMA name.
	Thresholds map[string]uint64
	// Snapshot is the host a host-side output was saved on (nil: none), to
	// compare it with what rdmalab reads from sysfs.
	Snapshot *host.Snapshot
}

// Format is one kind of saved output.
type Format struct {
	Name string
	// Sniff reports whether b looks like this format. Formats are tried
	// in order; the first that claims the bytes judges them.
	Sniff func(b []byte) bool
	// Judge parses b (from the file called name) and judges it. The
	// payload is what was read (a fabric snapshot, the host ports).
	Judge func(name string, b []byte, opt Options) ([]check.Finding, any, error)
}

// NCCLFormat is the name of the nccl-tests and NCCL_DEBUG format.
const NCCLFormat = "nccl-tests / NCCL_DEBUG"

// Formats is the registry, most specific first.
var Formats = []Format{
	{NCCLFormat, nccl.Sniff, judgeNCCL},
	{"nvidia-smi topo -m", host.SniffTopo, func(_ string, b []byte, o Options) ([]check.Finding, any, error) {
		return gpudirect.JudgeTopoFile(b, o.Snapshot)
	}},
	{"perftest", bench.SniffPerftest, judgePerftest},
	{"ibv_devinfo", host.SniffDevinfo, hostPorts(host.ParseDevinfo)},
	{"ibstatus", host.SniffIBStatus, hostPorts(host.ParseIBStatus)},
	{"ibstat", host.SniffIBStat, hostPorts(host.ParseIBStat)},
	{"ibqueryerrors", fabric.SniffIBQueryErrors, judgeQueryErrors},
	{"ibcheckerrors", sniffCheckErrors, judgeCheckErrors},
	{"iblinkinfo", fabric.SniffIBLinkInfo, judgeLinkInfo},
	{"ibnetdiscover", fabric.SniffTopology, judgeTopology},
	{"ibnetdiscover -p", fabric.SniffIBNetDiscoverPorts, judgePorts},
	{"show_gids", host.SniffShowGIDs, judgeShowGIDs},
	{"mlnx_qos", host.SniffMlnxQos, judgeQoS(host.ParseMlnxQos)},
	{"dcb / lldptool", host.SniffDCB, judgeQoS(host.ParseDCB)},
	{"ethtool -S", host.SniffEthtoolS, judgeEthtoolS},
	{"cma_roce_mode", host.SniffCMARoCEMode, judgeQoS(host.ParseCMARoCEMode)},
	{"mlxlink / mstlink", phy.SniffMlxlink, judgePHY(phy.ParseMlxlink)},
	{"ethtool --show-fec", phy.SniffShowFEC, judgePHY(phy.ParseShowFEC)},
	{"ethtool -m", phy.SniffModule, judgePHY(phy.ParseModule)},
	{"ibdiagnet", phy.SniffIBDiag, judgeIBDiag},
}

// judgeNCCL judges nccl-tests output and NCCL_DEBUG logs; with
// --expect-rate, busbw is judged against what one such NIC carries.
func judgeNCCL(name string, b []byte, opt Options) ([]check.Finding, any, error) {
	var o nccl.JudgeOptions
	if opt.Expect.HasRate() {
		o.NIC, o.NICSource = opt.Expect.Link(), opt.Expect.String()
	}
	return nccl.JudgeFile(name, b, o)
}

// judgePerftest judges saved perftest output against --expect-rate and
// the expected link layer; the layer and MTU the run used are read from
// the output (Link type: Ethernet is RoCE), and a differing expected layer
// is a finding.
func judgePerftest(name string, b []byte, opt Options) ([]check.Finding, any, error) {
	// Only what was expected: an empty layer lets the run's own Link type
	// decide (Expect.Link would default it to InfiniBand).
	l := linkrate.Link{Layer: opt.Expect.Layer, RateGbps: opt.Expect.Rate.Gbps, Speed: opt.Expect.Rate.Speed}
	return bench.JudgePerftestFile(name, b, &l)
}

// UnrecognisedError is a file no format claims.
type UnrecognisedError struct{ Name string }

func (e *UnrecognisedError) Error() string {
	names := ""
	for i, f := range Formats {
		if i > 0 {
			names += ", "
		}
		names += f.Name
	}
	return fmt.Sprintf("%s: not a saved output rdmalab judges (%s)", e.Name, names)
}

// Result is one file judged.
type Result struct {
	File     string          `json:"file"`
	Format   string          `json:"format"`
	Findings []check.Finding `json:"-"`
	Payload  any             `json:"payload,omitempty"`
}

// Recognise returns the first format that claims b (line ends already
// LF), or nil: the one sniffing of saved outputs, which intake asks.
func Recognise(b []byte) *Format {
	for i := range Formats {
		if Formats[i].Sniff(b) {
			return &Formats[i]
		}
	}
	return nil
}

// One judges one file with the format that recognises it.
func One(name string, b []byte, opt Options) (Result, error) {
	b = bytes.ReplaceAll(b, []byte("\r\n"), []byte("\n"))
	f := Recognise(b)
	if f == nil {
		return Result{}, &UnrecognisedError{Name: name}
	}
	return As(f, name, b, opt)
}

// As judges b (line ends LF), from the file called name, as format f.
func As(f *Format, name string, b []byte, opt Options) (Result, error) {
	fs, payload, err := f.Judge(name, b, opt)
	if err != nil {
		return Result{}, fmt.Errorf("%s (%s output): %w", name, f.Name, err)
	}
	host := filepath.Base(name)
	for i := range fs {
		if fs[i].Host == "" {
			fs[i].Host = host
		}
	}
	check.Sort(fs)
	return Result{File: name, Format: f.Name, Findings: fs, Payload: payload}, nil
}

// Findings gathers every result's findings.
func Findings(rs []Result) []check.Finding {
	var fs []check.Finding
	for _, r := range rs {
		fs = append(fs, r.Findings...)
	}
	return fs
}
