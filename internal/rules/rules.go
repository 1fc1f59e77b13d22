// Package rules is the one production list of every check rdmalab reports
// (each rule package's catalog), the central question each command answers,
// and the one verdict: which checks decide a question, so that an unknown
// there makes a run unproven (exit 3) and never OK. `rdmalab explain ID`,
// docs/checks.md and the catalog test read this list.
package rules

import (
	"slices"
	"strings"
	"sync"

	"github.com/rdmalab/rdmalab/internal/bench"
	"github.com/rdmalab/rdmalab/internal/check"
	"github.com/rdmalab/rdmalab/internal/compare"
	"github.com/rdmalab/rdmalab/internal/fabriccheck"
	"github.com/rdmalab/rdmalab/internal/gpudirect"
	"github.com/rdmalab/rdmalab/internal/hostcheck"
	"github.com/rdmalab/rdmalab/internal/nccl"
	"github.com/rdmalab/rdmalab/internal/phycheck"
	"github.com/rdmalab/rdmalab/internal/plan"
	"github.com/rdmalab/rdmalab/internal/schedule"
	"github.com/rdmalab/rdmalab/internal/slurm"
)

// Catalog is one rule package's catalog and the command that reports it.
type Catalog struct {
	Name, Command string
	Entries       []check.Entry
}

// Catalogs is every package's catalog, in the order docs/checks.md lists
// them, with Decides set on the checks a central question rests on.
func Catalogs() []Catalog {
	cs := []Catalog{
		{"doctor", "rdmalab doctor (and judge on ibstat, ibstatus, ibv_devinfo; slurm health)", hostcheck.Catalog()},
		{"fabric", "rdmalab fabric check (and judge on the fabric tools' outputs)", fabriccheck.Catalog},
		{"bench", "rdmalab bench, report on a results log, judge on perftest output", append(append(slices.Clone(bench.Catalog), bench.CoverCatalog...), gpudirect.BenchEntry)},
		{"nccl", "rdmalab nccl env / run / judge, and judge on nccl-tests and NCCL_DEBUG logs", nccl.Catalog},
		{"schedule", "rdmalab bench --schedule", schedule.Catalog},
		{"plan", "rdmalab plan vms (refusals fail, notes warn)", plan.Catalog},
		{"slurm", "rdmalab slurm health", slurm.Catalog},
		{"compare", "rdmalab compare, and report given two runs", compare.Catalog},
		{"phy", "rdmalab judge on mlxlink/mstlink, ethtool -S PHY counters, ethtool --show-fec, ethtool -m and ibdiagnet outputs", phycheck.Catalog},
	}
	for i := range cs {
		cs[i].Entries = slices.Clone(cs[i].Entries)
		for j := range cs[i].Entries {
			e := &cs[i].Entries[j]
			e.Decides = e.Decides || deciding[e.ID]
		}
	}
	return cs
}

// deciding is every check a command's central question rests on: the
// port's state and rate for doctor, a link's rate and the SM for fabric
// check, a direction's bandwidth for bench, a run's completeness,
// correctness, bus bandwidth and transport for nccl, a change for compare.
// An unknown on any of these leaves the question open.
var deciding = map[string]bool{
	"rdma.driver": true, "rdma.present": true, "port.state": true, "port.rate.below-expected": true,
	"port.link-layer": true, "ib.sm": true, "fleet.rate": true,
	"fabric.sm": true, "fabric.port.state": true, "fabric.link.width": true, "fabric.link.speed": true,
	"fabric.link.rate": true, "fabric.port.down": true,
	"bench.direction.slow": true, "bench.direction.error": true, "bench.pair.timeout": true,
	"bench.node.unreachable": true, "bench.run": true, "bench.perftest.bandwidth": true,
	"bench.perftest.latency": true, "bench.link.rate-suspect": true, "bench.cover": true, "bench.cover.inconclusive": true,
	"nccl.tests.complete": true, "nccl.tests.correctness": true, "nccl.tests.busbw": true, "nccl.env.rails": true,
	"nccl.log.network": true, "nccl.log.silent": true, "nccl.log.failure": true, "nccl.log.fatal": true, "nccl.log.socket": true,
	"nccl.tests.measurement": true, "nccl.ras.ranks": true, "nccl.ras.hang": true, "nccl.ras.progress": true, "nccl.ras.status": true, "nccl.run.exit": true, "nccl.run.timeout": true,
	"compare.direction": true, "compare.node": true, "compare.missing": true, "compare.self": true,
	"slurm.health.read": true, "schedule.input": true,
	"phy.ber.effective": true, "phy.fec.uncorrectable": true, "phy.link.state": true, "phy.output.cut": true,
}

var (
	indexOnce sync.Once
	index     map[string]check.Entry
)

// Lookup returns the catalog entry of a check id.
func Lookup(id string) (check.Entry, bool) {
	indexOnce.Do(func() {
		index = map[string]check.Entry{}
		for _, c := range Catalogs() {
			for _, e := range c.Entries {
				index[e.ID] = e
			}
		}
	})
	e, ok := index[id]
	return e, ok
}

// Decides reports whether an unknown on check id leaves a command's
// central question open.
func Decides(id string) bool {
	e, ok := Lookup(id)
	return ok && e.Decides
}

// answer is what would answer a deciding unknown: the finding's own fix
// (it names the device and the flag), else the catalog's words for when
// the check is unknown.
func answer(f check.Finding) string {
	if len(f.Fix) > 0 {
		return strings.Join(f.Fix, "; ")
	}
	if e, ok := Lookup(f.Check); ok && e.UnknownWhen != "" {
		return "it is unknown when " + e.UnknownWhen + "; give what it needs: " + e.Needs
	}
	return ""
}

// Question is the central question a command answers.
type Question string

// The commands' central questions.
const (
	Doctor      Question = "are the RDMA ports meant to carry traffic up at their rate, and is the host ready?"
	Judge       Question = "does this output show a healthy result?"
	FabricCheck Question = "is every link at its rate, under one master subnet manager?"
	Bench       Question = "does every measured direction carry what its link can?"
	NCCL        Question = "did the collective run complete, correct, over RDMA, at the bandwidth the NICs carry?"
	NCCLEnv     Question = "will NCCL use the intended rails and transport on this host?"
	NCCLRAS     Question = "is every rank of the NCCL job alive and making progress?"
	Compare     Question = "did anything get worse?"
	Report      Question = "is the cluster ready?"
	PlanCheck   Question = "are these VMs placed, pinned and isolated as the host's topology needs?"
	Schedule    Question = "can every link host traffic reaches be covered?"
	Slurm       Question = "is every node healthy?"
)

// Verdict is the one verdict rule (check.Decide) with rdmalab's catalog.
func Verdict(q Question, fs []check.Finding) check.Verdict {
	return check.Decide(string(q), fs, Decides, answer)
}
