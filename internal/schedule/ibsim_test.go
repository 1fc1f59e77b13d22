package schedule

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rdmalab/rdmalab/internal/fabric"
	"github.com/rdmalab/rdmalab/internal/route"
	"github.com/rdmalab/rdmalab/internal/testhost"
)

// fatTree is a two-level non-blocking fat tree of hosts HCAs.
type fatTree struct{ spines, leaves, hostsPerLeaf int }

func (t fatTree) hosts() int    { return t.leaves * t.hostsPerLeaf }
func (t fatTree) switches() int { return t.spines + t.leaves }

var fatTrees = map[int]fatTree{
	128:  {8, 16, 8},
	512:  {16, 32, 16},
	1024: {32, 32, 32},
}

// ibsimSizes is 128 HCAs by default; RDMALAB_SCHEDULE_SIZES=128,512,1024
// runs the large fabrics too (minutes: OpenSM routes a 1,024-HCA subnet
// slowly under ibsim).
func ibsimSizes(t *testing.T) []int {
	env := os.Getenv("RDMALAB_SCHEDULE_SIZES")
	if env == "" {
		return []int{128}
	}
	var out []int
	for _, f := range strings.Split(env, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if _, ok := fatTrees[n]; err != nil || !ok {
			t.Fatalf("RDMALAB_SCHEDULE_SIZES: %q is not one of 128, 512, 1024", f)
		}
		out = append(out, n)
	}
	return out
}

// routedFabric runs ibsim on the fat tree with OpenSM routing it with each
// engine in turn, and returns the fabric joined with each engine's real
// forwarding tables.
func routedFabrics(t *testing.T, netlist string, hosts, switches int, engines []string) map[string]*route.Fabric {
	t.Helper()
	topo, err := fabric.ParseTopology(netlist)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*route.Fabric{}
	var first []route.LFT
	for _, engine := range engines {
		// a fresh fabric per engine: OpenSM keeps a switch's existing
		// entries where they are still minimal, so a second engine on a
		// routed subnet would inherit the first one's choices
		sim := testhost.StartIBSim(t, netlist, "-N", "4096", "-S", "512", "-P", "20000")
		start := time.Now()
		dump := sim.StartRoutingSM(engine, switches, 10*time.Minute)
		t.Logf("%d HCAs: opensm -R %s routed the subnet in %s", hosts, engine, time.Since(start).Round(time.Millisecond))
		fd, err := os.Open(dump)
		if err != nil {
			t.Fatal(err)
		}
		lfts, err := route.ParseLFTs(fd)
		fd.Close()
		if err != nil {
			t.Fatal(err)
		}
		sim.StopSMs()
		if first == nil {
			first = lfts
		} else {
			t.Logf("%d HCAs: %s's tables differ from %s's in %d of %d entries", hosts, engine, engines[0], lftDiff(first, lfts), lftEntries(first))
		}
		f, err := route.FromTopology(topo, lfts)
		if err != nil {
			t.Fatal(err)
		}
		out[engine] = f
	}
	return out
}

var engines = []string{"ftree", "updn", "minhop", "sssp"}

// The bar: on ibsim fat trees with real OpenSM routing, every
// coverable link covered, the rounds used, the uncoverable links listed,
// the scheduling time, and the circle method's round counts beside them.
func TestCoverOnIBSimFatTrees(t *testing.T) {
	for _, n := range ibsimSizes(t) {
		ft := fatTrees[n]
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			for _, engine := range engines {
				f := routedFabricsCache(t, ft)[engine]
				// the machine is shared: the best of three runs is the cost
				var p *route.Paths
				var c *Cover
				pathTime, coverTime, cpu := time.Hour, time.Hour, time.Hour
				for range 3 {
					start, cpu0 := time.Now(), cpuTime()
					p = f.Paths()
					pathTime = min(pathTime, time.Since(start))
					c = CoverRounds(p)
					coverTime = min(coverTime, c.Elapsed)
					cpu = min(cpu, cpuTime()-cpu0)
				}
				if len(p.Unrouted) > 0 {
					t.Fatalf("%s: %d unrouted pairs, e.g. %+v", engine, len(p.Unrouted), p.Unrouted[0])
				}
				if c.Covered != c.Coverable {
					t.Errorf("%s: covered %d of %d coverable links", engine, c.Covered, c.Coverable)
				}
				for _, r := range c.Rounds {
					checkDisjoint(t, r)
				}
				unc := p.Uncoverable()
				var names []string
				for _, l := range unc {
					names = append(names, f.LinkName(l))
				}
				byName := make([]int, n)
				for i := range byName {
					byName[i] = i
				}
				shuffled := rand.New(rand.NewPCG(1, 2)).Perm(n)
				circleName := CircleRoundsToCover(p, byName)
				circleShuffled := CircleRoundsToCover(p, shuffled)
				t.Logf("%d HCAs, %s: %d directed links, %d coverable, %d uncoverable; cover: %d rounds (paths %s + schedule %s wall, %s CPU, best of 3); circle: %d rounds, all links carried traffic after %d (host order by name) / %d (shuffled)",
					n, engine, len(f.Links), c.Coverable, len(unc), len(c.Rounds), pathTime.Round(100*time.Microsecond), coverTime.Round(100*time.Microsecond), cpu.Round(100*time.Microsecond), len(Circle(byName)), circleName, circleShuffled)
				if len(unc) > 0 {
					t.Logf("  uncoverable (first 8 of %d): %s", len(unc), strings.Join(names[:min(8, len(names))], "; "))
				}
				for _, l := range unc {
					if f.HostLink(l) {
						t.Errorf("%s: host link %s is uncoverable", engine, f.LinkName(l))
					}
				}
				if len(c.Rounds) > 3 {
					t.Errorf("%s: %d cover rounds", engine, len(c.Rounds))
				}
			}
		})
	}
}

func checkDisjoint(t *testing.T, r []IPair) {
	t.Helper()
	seen := map[int]bool{}
	for _, p := range r {
		if p.A == p.B || seen[p.A] || seen[p.B] {
			t.Fatalf("node used twice in a round: %+v", p)
		}
		seen[p.A], seen[p.B] = true, true
	}
}

// routedFabricsCache starts each fabric once per test binary: the cover
// test and the localisation test share it.
var fabricCache = map[fatTree]map[string]*route.Fabric{}

func routedFabricsCache(t *testing.T, ft fatTree) map[string]*route.Fabric {
	if f, ok := fabricCache[ft]; ok {
		return f
	}
	f := routedFabrics(t, testhost.FatTree(ft.spines, ft.leaves, ft.hostsPerLeaf), ft.hosts(), ft.switches(), engines)
	fabricCache[ft] = f
	return f
}

// The localisation bar: one degraded link (or cable) at a time,
// every one the routes reach (a seeded sample of 1,500 beyond 128 HCAs,
// RDMALAB_SCHEDULE_ALL_FAULTS=1 for all), named within 3 rounds beyond the
// cover rounds, and never wrong.
func TestLocateOnIBSimFatTrees(t *testing.T) {
	for _, n := range ibsimSizes(t) {
		ft := fatTrees[n]
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			es := engines
			if os.Getenv("RDMALAB_SCHEDULE_SIZES") == "" {
				es = []string{"ftree", "sssp"} // the two that differ, in the normal suite
			}
			for _, engine := range es {
				f := routedFabricsCache(t, ft)[engine]
				p := f.Paths()
				c := CoverRounds(p)
				sample := 0
				if n > 128 && os.Getenv("RDMALAB_SCHEDULE_ALL_FAULTS") == "" {
					sample = 1500
				}
				start := time.Now()
				st := runLocate(t, p, c.Rounds, faults(p, sample))
				t.Logf("%d HCAs, %s: cover %d rounds; %s (%s)", n, engine, len(c.Rounds), st, time.Since(start).Round(time.Millisecond))
				if st.wrong > 0 || st.unsure > 0 || st.maxExtra > 3 {
					t.Errorf("want every fault confirmed within 3 rounds beyond cover: %s", st)
				}
			}
		})
	}
}

// lftDiff counts (switch, LID) entries whose out port differs.
func lftDiff(a, b []route.LFT) int {
	byGUID := map[string]route.LFT{}
	for _, t := range b {
		byGUID[t.Switch.String()] = t
	}
	n := 0
	for _, t := range a {
		o := byGUID[t.Switch.String()]
		for lid, port := range t.Out {
			if q, ok := o.Out[lid]; !ok || q != port {
				n++
			}
		}
	}
	return n
}

func lftEntries(a []route.LFT) int {
	n := 0
	for _, t := range a {
		n += len(t.Out)
	}
	return n
}

// Links no host route crosses are listed, not hidden: a stub switch hung
// off a leaf (nothing behind it) and a leaf-to-leaf cable beside the fat
// tree, routed by updn and minhop.
func TestUncoverableLinksListedOnIBSim(t *testing.T) {
	ft := fatTrees[128]
	netlist := testhost.FatTree(ft.spines, ft.leaves, ft.hostsPerLeaf)
	for _, edit := range [][2]string{
		{"[16]\t\"spine08\"[1]\n", "[16]\t\"spine08\"[1]\n[17]\t\"stub01\"[1]\n[18]\t\"leaf02\"[18]\n"},
		{"[16]\t\"spine08\"[2]\n", "[16]\t\"spine08\"[2]\n[18]\t\"leaf01\"[18]\n"},
	} {
		if !strings.Contains(netlist, edit[0]) {
			t.Fatalf("netlist has no %q", edit[0])
		}
		netlist = strings.Replace(netlist, edit[0], edit[1], 1)
	}
	netlist += "Switch\t4 \"stub01\"\n[1]\t\"leaf01\"[17]\n"
	for engine, f := range routedFabrics(t, netlist, ft.hosts(), ft.switches()+1, []string{"updn", "minhop"}) {
		p := f.Paths()
		if len(p.Unrouted) > 0 {
			t.Fatalf("%s: unrouted %+v", engine, p.Unrouted[0])
		}
		c := CoverRounds(p)
		var unc []string
		for _, l := range p.Uncoverable() {
			unc = append(unc, f.LinkName(l))
		}
		t.Logf("%s: %d links, %d coverable, cover %d round(s); uncoverable: %s", engine, len(f.Links), c.Coverable, len(c.Rounds), strings.Join(unc, "; "))
		for _, want := range []string{"leaf01 port 17 → stub01 port 1", "stub01 port 1 → leaf01 port 17"} {
			if !slices.Contains(unc, want) {
				t.Errorf("%s: %s not listed uncoverable", engine, want)
			}
		}
		if c.Covered != c.Coverable {
			t.Errorf("%s: covered %d of %d", engine, c.Covered, c.Coverable)
		}
	}
}

// cpuTime is this process's CPU time: on a shared machine, wall time
// measures the neighbours as much as the code.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// A fabric derived from a real Azure HDR cluster (SuperBench's test
// topology: a director's spine and leaves, ToR switches, hosts named
// "RMD701091901003 ibp11s0f0"; the file is pruned, so the cables to nodes
// it leaves out are dropped here) under ibsim and OpenSM: the live scan
// joined by GUID and the file joined by name give the same paths, every
// host pair is routed, the cover covers and every injected fault is named.
func TestRealDerivedFabric(t *testing.T) {
	path := filepath.Join(testhost.SharedTestdata(t), "ibnetdiscover", "superbench_topo_aware_ibnetdiscover_FAKED.txt")
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	defined := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^(?:Switch|Ca)\s+\d+\s+"([^"]+)"`).FindAllStringSubmatch(string(raw), -1) {
		defined[m[1]] = true
	}
	portRE := regexp.MustCompile(`^\[\d+\]\s+"([^"]+)"\[`)
	var kept []string
	dropped := 0
	for _, line := range strings.Split(string(raw), "\n") {
		if m := portRE.FindStringSubmatch(line); m != nil && !defined[m[1]] {
			dropped++
			continue
		}
		kept = append(kept, line)
	}
	text := strings.Join(kept, "\n")
	topo, err := fabric.ParseTopology(text)
	if err != nil {
		t.Fatal(err)
	}
	switches := 0
	for _, n := range topo.Nodes {
		if n.Type == "Switch" {
			switches++
		}
	}
	sim := testhost.StartIBSim(t, text)
	dump := sim.StartRoutingSM("updn", switches, 2*time.Minute)
	fd, err := os.Open(dump)
	if err != nil {
		t.Fatal(err)
	}
	lfts, err := route.ParseLFTs(fd)
	fd.Close()
	if err != nil {
		t.Fatal(err)
	}
	snap, err := fabric.Scan(context.Background(), fabric.Exec{Dir: sim.Dir, Env: sim.Env(), Timeout: time.Minute}, fabric.ScanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	f, err := route.FromSnapshot(snap, lfts)
	if err != nil {
		t.Fatal(err)
	}
	byName, err := route.FromTopology(topo, lfts)
	if err != nil {
		t.Fatal(err)
	}
	p := f.Paths()
	if len(p.Unrouted) > 0 || len(f.Problems) > 0 {
		t.Fatalf("unrouted %+v, problems %v", p.Unrouted, f.Problems)
	}
	q := byName.Paths()
	for s := range p.N {
		for d := range p.N {
			if !slices.Equal(p.Path(s, d), q.Path(s, d)) {
				t.Fatalf("%s → %s: the GUID join and the name join disagree", f.CAs[s].Name, f.CAs[d].Name)
			}
		}
	}
	c := CoverRounds(p)
	var unc []string
	for _, l := range p.Uncoverable() {
		unc = append(unc, f.LinkName(l))
	}
	st := runLocate(t, p, c.Rounds, faults(p, 0))
	t.Logf("%d cables to absent nodes dropped; %d CA ports, %d directed links, %d coverable; cover %d round(s), circle %d; uncoverable: %v; %s",
		dropped, p.N, len(f.Links), c.Coverable, len(c.Rounds), len(Circle(make([]int, p.N))), unc, st)
	if c.Covered != c.Coverable || st.wrong > 0 || st.unsure > 0 {
		t.Errorf("covered %d of %d; %s", c.Covered, c.Coverable, st)
	}
}
