package schedule

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rdmalab/rdmalab/internal/fabric"
	"github.com/rdmalab/rdmalab/internal/host"
	"github.com/rdmalab/rdmalab/internal/route"
)

// smallFabric is FatTree(2,4,4) with OpenSM's real tables, captured from
// ibsim (see ../route/testdata/README.md).
func smallFabric(t testing.TB, lftDump string) *route.Fabric {
	t.Helper()
	net, err := os.ReadFile(filepath.Join("..", "route", "testdata", "fattree-2x4x4.net"))
	if err != nil {
		t.Fatal(err)
	}
	topo, err := fabric.ParseTopology(string(net))
	if err != nil {
		t.Fatal(err)
	}
	fd, err := os.Open(filepath.Join("..", "route", "testdata", lftDump))
	if err != nil {
		t.Fatal(err)
	}
	defer fd.Close()
	lfts, err := route.ParseLFTs(fd)
	if err != nil {
		t.Fatal(err)
	}
	f, err := route.FromTopology(topo, lfts)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// simulate injects one fault (a directed link, or both directions of a
// cable): a measurement is slow exactly when its path crosses the fault.
// It runs the cover rounds, then the locator's rounds until it has
// nothing more to ask (bounded), and returns the extra rounds and verdict.
func simulate(loc *Locator, cover [][]IPair, fault []int) (int, Verdict) {
	loc.Reset()
	observe := func(r []IPair, round int) {
		for _, pr := range r {
			loc.Observe(
				Observation{pr.A, pr.B, loc.crosses(pr.A, pr.B, fault), round},
				Observation{pr.B, pr.A, loc.crosses(pr.B, pr.A, fault), round})
		}
	}
	for i, r := range cover {
		observe(r, i)
	}
	extra := 0
	for ; extra < 10; extra++ {
		next := loc.NextRound()
		if next == nil {
			break
		}
		observe(next, len(cover)+extra)
	}
	return extra, loc.Verdict()
}

// faults are every directed link and every cable (both directions) that
// host traffic can reach, or a seeded random sample of sample of them.
func faults(p *route.Paths, sample int) [][]int {
	var out [][]int
	for l := range p.F.Links {
		if !p.Coverable[l] {
			continue
		}
		out = append(out, []int{l})
		if r := p.F.Reverse(l); l < r && p.Coverable[r] {
			out = append(out, []int{l, r})
		}
	}
	if sample > 0 && sample < len(out) {
		rng := rand.New(rand.NewPCG(7, 11))
		rng.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
		out = out[:sample]
	}
	return out
}

type locateStats struct {
	faults, confirmed, wrong, unsure int
	indistinct                       int // ambiguous, the fault among the candidates, and no pair can split them
	maxExtra                         int
	extraHist                        map[int]int
}

func runLocate(t testing.TB, p *route.Paths, cover [][]IPair, fs [][]int) locateStats {
	loc := NewLocator(p)
	st := locateStats{extraHist: map[int]int{}}
	for _, fault := range fs {
		st.faults++
		extra, v := simulate(loc, cover, fault)
		st.extraHist[extra]++
		st.maxExtra = max(st.maxExtra, extra)
		got := slices.Clone(v.Links)
		want := slices.Clone(fault)
		slices.Sort(got)
		slices.Sort(want)
		switch {
		case (v.State == "confirmed" || v.State == "named") && !slices.Equal(got, want):
			st.wrong++
			t.Errorf("fault %v named as %v (%s): %s", fault, got, v.State, v.What)
		case v.State == "confirmed":
			st.confirmed++
		case v.State == "ambiguous" && containsAll(got, want) && loc.NextRound() == nil:
			st.indistinct++ // honest: the routes cannot tell the fault from its companions
			t.Logf("fault %v: %s (%s)", fault, v.What, v.Sure)
		case v.State == "ambiguous" && !containsAll(got, want):
			st.wrong++
			t.Errorf("fault %v not among the suspects %v: %s", fault, got, v.What)
		default:
			st.unsure++
			t.Logf("fault %v: %s: %s (%s)", fault, v.State, v.What, v.Sure)
		}
	}
	return st
}

func (s locateStats) String() string {
	return fmt.Sprintf("%d faults injected: %d confirmed, %d wrong, %d indistinguishable by any route (named with their companions), %d not named; rounds beyond cover: max %d, histogram %v",
		s.faults, s.confirmed, s.wrong, s.indistinct, s.unsure, s.maxExtra, s.extraHist)
}

func TestLocateEveryLinkSmallFatTree(t *testing.T) {
	for _, dump := range []string{"fattree-2x4x4-ftree.opensm-lfts.dump", "fattree-2x4x4-updn.opensm-lfts.dump"} {
		t.Run(dump, func(t *testing.T) {
			f := smallFabric(t, dump)
			p := f.Paths()
			c := CoverRounds(p)
			st := runLocate(t, p, c.Rounds, faults(p, 0))
			t.Logf("cover %d rounds; %s", len(c.Rounds), st)
			if st.wrong > 0 || st.unsure > 0 || st.maxExtra > 3 {
				t.Errorf("want every fault confirmed within 3 rounds beyond cover: %s", st)
			}
		})
	}
}

func TestVerdictClean(t *testing.T) {
	f := smallFabric(t, "fattree-2x4x4-ftree.opensm-lfts.dump")
	p := f.Paths()
	loc := NewLocator(p)
	_, v := simulate(loc, CoverRounds(p).Rounds, nil)
	if v.State != "clean" || len(v.Links) != 0 {
		t.Fatalf("no fault: %+v", v)
	}
}

// Two faults at once break the one-fault assumption: the verdict must say
// so rather than name one of them with confidence.
func TestVerdictTwoFaultsIsNotConfident(t *testing.T) {
	f := smallFabric(t, "fattree-2x4x4-ftree.opensm-lfts.dump")
	p := f.Paths()
	cover := CoverRounds(p).Rounds
	loc := NewLocator(p)
	// two spine-side links on different leaves
	var sw []int
	for l := range f.Links {
		if !f.HostLink(l) {
			sw = append(sw, l)
		}
	}
	wrongConfident := 0
	for i := 0; i < len(sw); i += 3 {
		for j := i + 1; j < len(sw); j += 5 {
			_, v := simulate(loc, cover, []int{sw[i], sw[j]})
			if v.State == "confirmed" && len(v.Links) == 1 {
				wrongConfident++
			}
		}
	}
	if wrongConfident > 0 {
		t.Errorf("%d two-fault cases confidently named as one link", wrongConfident)
	}
}

func TestVerdictNamesPorts(t *testing.T) {
	f := smallFabric(t, "fattree-2x4x4-ftree.opensm-lfts.dump")
	p := f.Paths()
	cover := CoverRounds(p).Rounds
	loc := NewLocator(p)
	// node0006's cable (both directions) and one spine uplink direction
	var host, up []int
	for l := range f.Links {
		name := f.LinkName(l)
		if name == "node0006 port 1 → leaf02 port 2" {
			host = []int{l, f.Reverse(l)}
		}
		if name == "leaf03 port 6 → spine02 port 3" {
			up = []int{l}
		}
	}
	_, v := simulate(loc, cover, host)
	if v.State != "confirmed" || v.What != "node0006: its HCA, or its cable to leaf02 port 2 (both directions)" {
		t.Errorf("host cable: %+v", v)
	}
	_, v = simulate(loc, cover, up)
	if v.State != "confirmed" || v.What != "the direction leaf03 port 6 → spine02 port 3" {
		t.Errorf("uplink: %+v", v)
	}
	t.Logf("%s: %s", v.What, v.Sure)
	// by name, as a runner reports it: node0001 → node0016 crosses no fault here
	loc.Reset()
	if err := loc.ObserveByName("node0001", "node0016", false, 0); err != nil {
		t.Fatal(err)
	}
	if err := loc.ObserveByName("node0001", "gpu99", false, 0); err == nil {
		t.Error("an unknown node was accepted")
	}
	if v := loc.Verdict(); v.State != "clean" || len(v.Links) != 0 {
		t.Errorf("clean: %+v", v)
	}
}

// smallFabricMutated is smallFabric with one switch's entry for a LID removed.
func smallFabricMutated(t testing.TB, lftDump, sw string, lid int) *route.Fabric {
	t.Helper()
	net, err := os.ReadFile(filepath.Join("..", "route", "testdata", "fattree-2x4x4.net"))
	if err != nil {
		t.Fatal(err)
	}
	topo, err := fabric.ParseTopology(string(net))
	if err != nil {
		t.Fatal(err)
	}
	fd, err := os.Open(filepath.Join("..", "route", "testdata", lftDump))
	if err != nil {
		t.Fatal(err)
	}
	defer fd.Close()
	lfts, err := route.ParseLFTs(fd)
	if err != nil {
		t.Fatal(err)
	}
	for i := range lfts {
		if lfts[i].Name == sw {
			delete(lfts[i].Out, lid)
		}
	}
	f, err := route.FromTopology(topo, lfts)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func containsAll(set, sub []int) bool {
	for _, x := range sub {
		if !slices.Contains(set, x) {
			return false
		}
	}
	return true
}

// Two hosts on one switch: each link is crossed by one pair only, and the
// two links of a direction always together. The locator must say so and
// stop asking for rounds rather than loop.
func TestLocateStopsWhenRoutesCannotTell(t *testing.T) {
	sw, a, b := host.GUID(0x10), host.GUID(0xa1), host.GUID(0xb1)
	ports := []route.Port{
		{Key: route.PortKey{GUID: sw, Port: 1}, Node: "sw", Switch: true, Remote: route.PortKey{GUID: a, Port: 1}},
		{Key: route.PortKey{GUID: sw, Port: 2}, Node: "sw", Switch: true, Remote: route.PortKey{GUID: b, Port: 1}},
		{Key: route.PortKey{GUID: a, Port: 1}, Node: "a", LID: 2, Remote: route.PortKey{GUID: sw, Port: 1}},
		{Key: route.PortKey{GUID: b, Port: 1}, Node: "b", LID: 3, Remote: route.PortKey{GUID: sw, Port: 2}},
	}
	f, err := route.New(ports, []route.LFT{{Switch: sw, Name: "sw", Out: map[int]int{1: 0, 2: 1, 3: 2}}})
	if err != nil {
		t.Fatal(err)
	}
	p := f.Paths()
	cover := CoverRounds(p)
	if len(cover.Rounds) != 1 || cover.Covered != 4 {
		t.Fatalf("cover: %+v", cover)
	}
	loc := NewLocator(p)
	for _, fault := range faults(p, 0) {
		extra, v := simulate(loc, cover.Rounds, fault)
		if extra != 0 || v.State != "ambiguous" || !containsAll(v.Links, fault) || !strings.Contains(v.Sure, "cannot tell them apart") {
			t.Errorf("fault %v: %d extra rounds, %+v", fault, extra, v)
		}
	}
}
