package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rdmalab/rdmalab/internal/check"
	"github.com/rdmalab/rdmalab/internal/route"
	"github.com/rdmalab/rdmalab/internal/testhost"
)

// The cable named end to end: a fat tree of 4 spines, 4 leaves and 32 HCAs
// in ibsim, routed by OpenSM (ftree); each HCA is a host of a real cluster
// (a network namespace with sshd; the tcp engine over ssh). Every node sends
// at 100 Mbit/s. (32 ssh connections at once take 10 s on this shared
// two-core machine, hence the long --timeout, which preflight uses too.)
// Then:
//   - nothing slowed: `bench --schedule cover` names nothing;
//   - every pair whose route crosses the cable leaf02 ↔ spine03 (either
//     way) slowed to 10 Mbit/s in its sender's namespace (tc: a slow class
//     chosen by destination): that cable is named by both ends, within the
//     cover rounds plus at most 3, and nothing else is;
//   - one node slowed both ways: that node is named, not a link.
func TestCoverNamesTheCable(t *testing.T) {
	if testing.Short() {
		t.Skip("32 namespaces with sshd and ibsim: scripts/test runs it without -short")
	}
	const spines, leaves, perLeaf = 4, 4, 8
	const n = leaves * perLeaf
	netlist := testhost.FatTree(spines, leaves, perLeaf)
	sim := testhost.StartIBSim(t, netlist)
	// the SM stays (it does not sweep again): ibqueryerrors asks its SA
	dump := sim.StartRoutingSM("ftree", spines+leaves, 2*time.Minute)
	netFile := filepath.Join(sim.Dir, "net")
	f, _, err := route.Load(context.Background(), route.Input{FabricFile: netFile, RoutesFile: dump})
	if err != nil {
		t.Fatal(err)
	}
	p := f.Paths()
	// the cable leaf02 port perLeaf+3 ↔ spine03 port 2, both directions
	cable := -1
	for l, link := range f.Links {
		if f.PortName(link.From) == fmt.Sprintf("leaf02 port %d", perLeaf+3) {
			cable = l
		}
	}
	if cable < 0 || f.PortName(f.Links[cable].To) != "spine03 port 2" {
		t.Fatalf("no cable leaf02 ↔ spine03 in %s", netFile)
	}
	back := f.Reverse(cable)

	c := testhost.StartNetCluster(t, "cover", n)
	var nodes strings.Builder
	for i := range n {
		fmt.Fprintf(&nodes, "  - {name: %s, ssh: root@%s, data: %s}\n", f.CAs[i].Name, c.Addrs[i], c.Addrs[i])
	}
	bin := testhost.Rdmalab(t)
	cluster := filepath.Join(c.Dir, "cluster.yaml")
	os.WriteFile(cluster, []byte("nodes:\n"+nodes.String()+fmt.Sprintf(`link: {layer: TCP}
thresholds: {bandwidth: 0.5}
launcher:
  type: ssh
  known_hosts: %s
  ssh_options: ["-F", "/dev/null", "-i", "%s"]
  rdmalab: %s
  base_port: 25400
`, c.KnownHosts(), c.KeyFile(), bin)), 0o644)
	tc := func(i int, args ...string) {
		t.Helper()
		if out, err := exec.Command("ip", append([]string{"netns", "exec", c.NS[i], "tc"}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("tc %s in %s: %v %s", strings.Join(args, " "), c.NS[i], err, out)
		}
	}
	// every node: a 100 Mbit/s default class and a 10 Mbit/s slow one
	base := func() {
		for i := range n {
			dev := c.Inner[i]
			exec.Command("ip", "netns", "exec", c.NS[i], "tc", "qdisc", "del", "dev", dev, "root").Run() // none the first time
			tc(i, "qdisc", "add", "dev", dev, "root", "handle", "1:", "htb", "default", "10")
			tc(i, "class", "replace", "dev", dev, "parent", "1:", "classid", "1:10", "htb", "rate", "100mbit")
			tc(i, "class", "replace", "dev", dev, "parent", "1:", "classid", "1:20", "htb", "rate", "10mbit")
		}
	}
	files := []string{"--fabric", netFile, "--routes", dump}
	runWith := func(name string, from []string, env []string, onLine func(string)) (fs []check.Finding, cover *Cover, out string) {
		t.Helper()
		results := filepath.Join(c.Dir, name+".jsonl")
		cmd := exec.Command(bin, append([]string{"bench", "--cluster", cluster, "--engine", "tcp", "--schedule", "cover",
			"--seconds", "1", "--samples", "1", "--timeout", "40s", "--results", results, "--output", "json"}, from...)...)
		cmd.Env = append(os.Environ(), env...)
		var stdout, stderr strings.Builder
		cmd.Stdout = &stdout
		pipe, _ := cmd.StderrPipe()
		start := time.Now()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(pipe)
		for sc.Scan() {
			stderr.WriteString(sc.Text() + "\n")
			if onLine != nil {
				onLine(sc.Text())
			}
		}
		err := cmd.Wait()
		t.Logf("%s: exit %d in %s", name, exitCode(err), time.Since(start).Round(time.Second))
		var doc struct {
			Findings []check.Finding `json:"findings"`
			Payload  Report          `json:"payload"`
		}
		if jerr := json.Unmarshal([]byte(stdout.String()), &doc); jerr != nil || doc.Payload.Cover == nil {
			t.Fatalf("%s: exit %d, no cover report (%v)\n%s\n%s", name, exitCode(err), jerr, stdout.String(), stderr.String())
		}
		return doc.Findings, doc.Payload.Cover, stderr.String()
	}
	run := func(name string) ([]check.Finding, *Cover, string) { return runWith(name, files, nil, nil) }
	named := func(fs []check.Finding) []string {
		var out []string
		for _, f := range fs {
			if f.Outcome == check.Fail {
				out = append(out, f.Check+" "+cmpOr(f.Host, f.Subject))
			}
		}
		return out
	}

	base()
	fs, cv, progress := run("healthy")
	if got := named(fs); len(got) > 0 || cv.State != "clean" {
		t.Errorf("healthy: state %s, named %v\n%s", cv.State, got, progress)
	}

	// the cable: every pair whose route crosses it, slowed at its sender
	slowCable := func() (slowed int) {
		for s := range n {
			for d := range n {
				if s != d && (crossesAny(p.Path(s, d), []int{cable}) || crossesAny(p.Path(s, d), []int{back})) {
					tc(s, "filter", "add", "dev", c.Inner[s], "parent", "1:", "protocol", "ip", "prio", "1", "u32",
						"match", "ip", "dst", c.Addrs[d]+"/32", "flowid", "1:20")
					slowed++
				}
			}
		}
		return slowed
	}
	slowed := slowCable()
	fs, cv, progress = run("cable")
	want := fmt.Sprintf("bench.cover.link leaf02 port %d ↔ spine03 port 2", perLeaf+3)
	if got := named(fs); len(got) != 1 || got[0] != want {
		t.Errorf("cable (%d directions slowed): named %v, want [%s]\n%s", slowed, got, want, progress)
	}
	if cv.FollowUps > MaxFollowUps || cv.Fault == nil || cv.Fault.Kind != "link" || len(cv.Fault.Slow) < 2 || len(cv.Fault.Fast) != 0 {
		t.Errorf("cable: %d follow-ups, fault %+v", cv.FollowUps, cv.Fault)
	}
	t.Logf("cable: %d cover round(s) + %d follow-up(s), %s, %s", cv.InitialRounds, cv.FollowUps, cv.State, cv.Confidence)
	for _, fd := range fs {
		if fd.Outcome == check.Fail { // docs/schedule.md quotes this
			t.Logf("%s %s: %s", fd.Check, fd.Subject, fd.Message)
			for _, e := range fd.Evidence {
				t.Logf("  %s: %s", e.What, e.Value)
			}
		}
	}

	// one slow node, both ways (its sending class and its receiving veth)
	base() // a new root qdisc: the filters are gone
	const slowNode = 13
	tc(slowNode, "class", "replace", "dev", c.Inner[slowNode], "parent", "1:", "classid", "1:10", "htb", "rate", "10mbit")
	c.ShapeDir(slowNode, "10mbit", false, true)
	fs, cv, progress = run("node")
	want = "bench.cover.node " + f.CAs[slowNode].Name
	if got := named(fs); len(got) != 1 || got[0] != want {
		t.Errorf("node: named %v, want [%s]\n%s", got, want, progress)
	}
	if cv.FollowUps > MaxFollowUps || cv.Fault == nil || cv.Fault.Kind != "node" {
		t.Errorf("node: %d follow-ups, fault %+v", cv.FollowUps, cv.Fault)
	}
	t.Logf("node: %d cover round(s) + %d follow-up(s), %s, %s", cv.InitialRounds, cv.FollowUps, cv.State, cv.Confidence)

	// The same cable with the fabric read live (ibsim through its umad
	// shim, for the diagnostic tools only: wrappers first in PATH), and its
	// leaf port's SymbolErrorCounter raised once round 1 runs: the counters
	// join the evidence as a second witness.
	base()
	exec.Command("tc", "qdisc", "del", "dev", c.Veths[slowNode], "root").Run()
	slowCable()
	wrappers := t.TempDir()
	for _, tool := range []string{"ibnetdiscover", "iblinkinfo", "ibqueryerrors", "sminfo", "saquery", "dump_fts"} {
		real, err := exec.LookPath(tool)
		if err != nil {
			t.Fatalf("%s: %v", tool, err)
		}
		// attached at a host: ftree's tables need not route a spine to every switch LID
		script := "#!/bin/sh\nexport " + strings.Join(append(sim.Env(), "SIM_HOST=node0001"), " ") + "\ncd " + sim.Dir + "\nexec " + real + ` "$@"` + "\n"
		os.WriteFile(filepath.Join(wrappers, tool), []byte(script), 0o755)
	}
	raised := false
	fs, cv, progress = runWith("live", nil, []string{"PATH=" + wrappers + ":" + os.Getenv("PATH")}, func(line string) {
		if !raised && strings.Contains(line, "round 1/") {
			raised = true
			sim.Console(fmt.Sprintf(`PerformanceSet "leaf02"[%d] PortCounters.SymbolErrorCounter=50`, perLeaf+3))
		}
	})
	if !raised {
		t.Fatalf("live: round 1 never started:\n%s", progress)
	}
	want = fmt.Sprintf("bench.cover.link leaf02 port %d ↔ spine03 port 2", perLeaf+3)
	if got := named(fs); len(got) != 1 || got[0] != want {
		t.Fatalf("live: named %v, want [%s]\n%s", got, want, progress)
	}
	var counters []string
	for _, fd := range fs {
		if fd.Check == "bench.cover.link" {
			for _, e := range fd.Evidence {
				if strings.HasPrefix(e.What, "counters") {
					counters = append(counters, e.What+": "+e.Value)
				}
			}
			if !strings.Contains(fd.Message, "its error counters rose during the run") {
				t.Errorf("live: the counters did not corroborate: %s", fd.Message)
			}
		}
	}
	t.Logf("live: %s; %s", cv.Source, strings.Join(counters, "; "))
	if len(counters) != 2 || !strings.Contains(counters[0]+counters[1], fmt.Sprintf("leaf02 port %d over the run: SymbolErrorCounter +50", perLeaf+3)) {
		t.Errorf("live: counter evidence %q", counters)
	}
}
