// Package judge is the judge step: it applies the live commands' rules to
// what internal/formats read from saved tool outputs (ibnetdiscover,
// iblinkinfo, ibqueryerrors and the older ibcheckerrors, ibstat, ibstatus,
// ibv_devinfo, rdma link and statistic, lspci -vvv, perftest, nccl-tests
// and NCCL_DEBUG logs, the RoCE QoS tools, nvidia-smi topo -m), and to
// report's inputs, with the same check.Finding. Judge dispatches on the
// model's type: partial host snapshots to hostcheck's rules, fabric
// snapshots to fabriccheck's, perftest runs to bench's, nccl output to
// nccl's, GPU↔NIC matrices to gpudirect's.
package judge

import (
	"fmt"
	"path/filepath"
	"slices"

	"github.com/rdmalab/rdmalab/internal/bench"
	"github.com/rdmalab/rdmalab/internal/check"
	"github.com/rdmalab/rdmalab/internal/fabric"
	"github.com/rdmalab/rdmalab/internal/fabriccheck"
	"github.com/rdmalab/rdmalab/internal/formats"
	"github.com/rdmalab/rdmalab/internal/gpudirect"
	"github.com/rdmalab/rdmalab/internal/host"
	"github.com/rdmalab/rdmalab/internal/linkrate"
	"github.com/rdmalab/rdmalab/internal/nccl"
	"github.com/rdmalab/rdmalab/internal/phy"
	"github.com/rdmalab/rdmalab/internal/phycheck"
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
	// RAS follows an ncclras report's suspect rank to its rail, cable and
	// routes (Snapshot joins its snapshots).
	RAS *nccl.RASOptions
}

// Result is one file judged.
type Result struct {
	File     string          `json:"file"`
	Format   string          `json:"format"`
	Findings []check.Finding `json:"-"`
	// Skipped names what of the file was not read or not judged, and why.
	Skipped []string `json:"skipped,omitempty"`
	Payload any      `json:"payload,omitempty"`
}

// One reads one file with the format that recognises it and judges it.
func One(name string, b []byte, opt Options) (Result, error) {
	s, err := formats.Read(name, b)
	if err != nil {
		return Result{}, err
	}
	return Saved(s, opt)
}

// Saved judges one saved output read by formats; findings without a host
// are the file's (a saved output rarely names its host).
func Saved(s *formats.Saved, opt Options) (Result, error) {
	fs, payload, err := Judge(s.File, s.Model, opt)
	if err != nil {
		return Result{}, fmt.Errorf("%s (%s output): %w", s.File, s.Format.Name, err)
	}
	host := filepath.Base(s.File)
	for i := range fs {
		if fs[i].Host == "" {
			fs[i].Host = host
		}
	}
	check.Sort(fs)
	r := Result{File: s.File, Format: s.Format.Name, Findings: fs, Payload: payload}
	if h, ok := s.Model.(*formats.HostPart); ok {
		r.Skipped = h.Skipped
	}
	return r, nil
}

// Judge applies the live rules to a model read from the file called name
// and returns the findings and what is shown of the model (the payload of
// --output json).
func Judge(name string, model any, opt Options) ([]check.Finding, any, error) {
	switch m := model.(type) {
	case *formats.HostPart:
		return judgeHost(m, opt)
	case *fabric.Snapshot:
		fs, err := fabriccheck.Run(m, fabriccheck.Options{Expect: opt.Expect, Plan: opt.Plan, Thresholds: opt.Thresholds})
		if err != nil {
			return nil, nil, err
		}
		return fs, m, nil
	case *formats.CheckErrors:
		return judgeCheckErrors(m), nil, nil
	case *host.Topo:
		fs := gpudirect.JudgeTopo(m)
		if opt.Snapshot != nil {
			fs = append(fs, gpudirect.CompareTopo(m, opt.Snapshot)...)
		}
		return fs, m, nil
	case host.GPUFabrics:
		return gpudirect.JudgeFabric(m), m, nil
	case formats.PerftestRuns:
		// Only what was expected: an empty layer lets the run's own Link
		// type decide (Expect.Link would default it to InfiniBand).
		l := linkrate.Link{Layer: opt.Expect.Layer, RateGbps: opt.Expect.Rate.Gbps, Speed: opt.Expect.Rate.Speed}
		fs, payload := bench.JudgePerftestRuns(name, m, &l)
		return fs, payload, nil
	case formats.PHYPorts:
		return phycheck.Ports(m), []phy.Port(m), nil
	case *phy.IBDiag:
		return phycheck.IBDiag(m), m, nil
	case *nccl.RASReport:
		// The host the output was saved with is where a suspect rank is
		// followed to its rail, when RAS names it.
		var o *nccl.RASOptions
		if opt.RAS != nil || opt.Snapshot != nil {
			var c nccl.RASOptions
			if opt.RAS != nil {
				c = *opt.RAS
			}
			if opt.Snapshot != nil {
				c.Snapshots = append(slices.Clone(c.Snapshots), opt.Snapshot)
			}
			o = &c
		}
		fs := nccl.JudgeRAS(filepath.Base(name), m, o)
		return fs, m, nil
	case *formats.NCCLOutput:
		// With --expect-rate, busbw is judged against what one such NIC
		// carries.
		var o nccl.JudgeOptions
		if opt.Expect.HasRate() {
			o.NIC, o.NICSource = opt.Expect.Link(), opt.Expect.String()
		}
		return nccl.JudgeFile(name, m.Text, o)
	}
	return nil, nil, fmt.Errorf("no rules judge a %T", model)
}

// Findings gathers every result's findings.
func Findings(rs []Result) []check.Finding {
	var fs []check.Finding
	for _, r := range rs {
		fs = append(fs, r.Findings...)
	}
	return fs
}
