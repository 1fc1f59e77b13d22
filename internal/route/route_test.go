package route

import (
	"bytes"
	"cmp"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/rdmalab/rdmalab/internal/fabric"
	"github.com/rdmalab/rdmalab/internal/host"
)

func readLFTs(t *testing.T, name string) []LFT {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	lfts, err := ParseLFTs(f)
	if err != nil {
		t.Fatal(err)
	}
	return lfts
}

func topology(t *testing.T, name string) *fabric.Topology {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	topo, err := fabric.ParseTopology(string(b))
	if err != nil {
		t.Fatal(err)
	}
	return topo
}

// OpenSM's own dump and dump_fts (which asks every switch over MADs) read
// the same tables from the same subnet: the two parsers must agree.
func TestParseLFTsOpenSMDumpAgreesWithDumpFTS(t *testing.T) {
	osm := readLFTs(t, "fattree-2x4x4-updn.opensm-lfts.dump")
	fts := readLFTs(t, "fattree-2x4x4-updn.dump_fts.txt")
	if len(osm) != 6 || len(fts) != 6 {
		t.Fatalf("want 6 switches in each dump, got %d and %d", len(osm), len(fts))
	}
	sortLFTs(osm)
	sortLFTs(fts)
	for i := range osm {
		a, b := osm[i], fts[i]
		if a.Switch != b.Switch || a.Name != b.Name {
			t.Fatalf("switch %d: %s %q vs %s %q", i, a.Switch, a.Name, b.Switch, b.Name)
		}
		// OpenSM lists only routed LIDs; a switch answers for every LID up
		// to its top, so compare what OpenSM routed.
		for lid, port := range a.Out {
			if b.Out[lid] != port {
				t.Errorf("%s LID %d: OpenSM says port %d, dump_fts %d", a.Name, lid, port, b.Out[lid])
			}
		}
		for lid, d := range a.Dest {
			if bd, ok := b.Dest[lid]; ok && bd != d {
				t.Errorf("%s LID %d: %+v vs %+v", a.Name, lid, d, bd)
			}
		}
	}
	if osm[0].Name != "spine01" || osm[0].LID != 1 || osm[0].Dest[2].Name != "node0001" || osm[0].Dest[2].Type != "Channel Adapter" {
		t.Errorf("first table: %+v", osm[0])
	}
}

func TestParseLFTsRejects(t *testing.T) {
	for _, tc := range []struct{ name, text, want string }{
		{"entry before header", "0x0001 001\n", "before any"},
		{"bad entry", "Unicast lids [0-1] of switch Lid 1 guid 0x1 ('s'):\n0x0001 abc\n", "not `0xLID PORT`"},
		{"duplicate LID", "Unicast lids [0-1] of switch Lid 1 guid 0x1 ('s'):\n0x0001 001\n0x0001 002\n", "twice"},
		{"port too big", "Unicast lids [0-1] of switch Lid 1 guid 0x1 ('s'):\n0x0001 300\n", "above 254"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseLFTs(strings.NewReader(tc.text))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
}

// checkFatTree asserts what any correct routing of FatTree(2,4,4) gives:
// every pair routed, 2 hops within a leaf and 4 across, every host link
// crossed.
func checkFatTree(t *testing.T, f *Fabric) *Paths {
	t.Helper()
	if len(f.CAs) != 16 || len(f.Links) != 2*(16+8) {
		t.Fatalf("%d CAs, %d directed links; want 16 and 48", len(f.CAs), len(f.Links))
	}
	if len(f.Problems) > 0 {
		t.Fatalf("problems: %v", f.Problems)
	}
	p := f.Paths()
	if len(p.Unrouted) > 0 {
		t.Fatalf("unrouted: %+v", p.Unrouted[:min(3, len(p.Unrouted))])
	}
	for s := range p.N {
		for d := range p.N {
			if s == d {
				continue
			}
			path := p.Path(s, d)
			want := 4
			if s/4 == d/4 {
				want = 2
			}
			if len(path) != want {
				t.Fatalf("%s → %s: %d hops, want %d", f.CAs[s].Name, f.CAs[d].Name, len(path), want)
			}
			if f.Links[path[0]].From != f.CAs[s].Key || f.Links[path[len(path)-1]].To != f.CAs[d].Key {
				t.Fatalf("%s → %s does not start and end at the CAs", f.CAs[s].Name, f.CAs[d].Name)
			}
			for i := 1; i < len(path); i++ {
				if f.Links[path[i]].From.GUID != f.Links[path[i-1]].To.GUID {
					t.Fatalf("%s → %s: hop %d leaves from another switch than hop %d arrived at", f.CAs[s].Name, f.CAs[d].Name, i, i-1)
				}
			}
		}
	}
	for l := range f.Links {
		if f.HostLink(l) && !p.Coverable[l] {
			t.Errorf("host link %s crossed by no path", f.LinkName(l))
		}
	}
	return p
}

func TestFromTopologyNetlistAndIBNetDiscover(t *testing.T) {
	lfts := readLFTs(t, "fattree-2x4x4-ftree.opensm-lfts.dump")
	for _, name := range []string{"fattree-2x4x4.net", "fattree-2x4x4.ibnetdiscover"} {
		t.Run(name, func(t *testing.T) {
			f, err := FromTopology(topology(t, name), lfts)
			if err != nil {
				t.Fatal(err)
			}
			p := checkFatTree(t, f)
			// ftree spreads destinations over the spines: every up and
			// down link carries host traffic.
			if u := p.Uncoverable(); len(u) != 0 {
				t.Errorf("ftree leaves %d links uncoverable, e.g. %s", len(u), f.LinkName(u[0]))
			}
			// node0001 is on leaf01 port 1
			if got := f.PortName(f.Links[p.Path(0, 1)[0]].To); got != "leaf01 port 1" {
				t.Errorf("node0001's first hop arrives at %s", got)
			}
		})
	}
}

// loadSnapshot reads a fabric snapshot file as intake does.
func loadSnapshot(path string) (*fabric.Snapshot, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return fabric.Decode(f)
}

func TestFromSnapshotJoinsByGUID(t *testing.T) {
	s, err := loadSnapshot(filepath.Join("testdata", "fattree-2x4x4.fabric.json"))
	if err != nil {
		t.Fatal(err)
	}
	lfts := readLFTs(t, "fattree-2x4x4-updn.dump_fts.txt")
	f, err := FromSnapshot(s, lfts)
	if err != nil {
		t.Fatal(err)
	}
	p := checkFatTree(t, f)
	// the same join by name must give the same paths
	g, err := FromTopology(topology(t, "fattree-2x4x4.ibnetdiscover"), lfts)
	if err != nil {
		t.Fatal(err)
	}
	q := g.Paths()
	if !reflect.DeepEqual(f.Links, g.Links) || !reflect.DeepEqual(f.CAs, g.CAs) || !samePaths(p, q) {
		t.Fatal("snapshot join and topology join disagree")
	}
}

func TestFromTopologyRefusesDuplicateNames(t *testing.T) {
	lfts := readLFTs(t, "fattree-2x4x4-ftree.opensm-lfts.dump")
	for i := range lfts {
		if lfts[i].Name == "spine02" {
			lfts[i].Name = "spine01" // two switches with one factory description
		}
	}
	_, err := FromTopology(topology(t, "fattree-2x4x4.net"), lfts)
	if err == nil || !strings.Contains(err.Error(), `"spine01" names more than one node`) || !strings.Contains(err.Error(), "fabric snapshot") {
		t.Fatalf("err = %v", err)
	}
}

// A table that sends a LID nowhere, or to an uncabled port, makes that
// pair unrouted with the reason; the other pairs still stand.
func TestUnroutedPairsSayWhy(t *testing.T) {
	lfts := readLFTs(t, "fattree-2x4x4-ftree.opensm-lfts.dump")
	f0, err := FromTopology(topology(t, "fattree-2x4x4.net"), lfts)
	if err != nil {
		t.Fatal(err)
	}
	lid := f0.CAs[15].LID // node0016
	for i := range lfts {
		if lfts[i].Name == "leaf01" {
			delete(lfts[i].Out, lid)
		}
		if lfts[i].Name == "leaf02" {
			lfts[i].Out[lid] = 7 // a spare port
		}
	}
	f, err := FromTopology(topology(t, "fattree-2x4x4.net"), lfts)
	if err != nil {
		t.Fatal(err)
	}
	p := f.Paths()
	if len(p.Unrouted) != 8 {
		t.Fatalf("%d unrouted pairs, want 8 (4 sources on each of two leaves): %+v", len(p.Unrouted), p.Unrouted)
	}
	if r := p.Unrouted[0].Reason; r != "leaf01 has no entry for LID 22" {
		t.Errorf("reason %q", r)
	}
	if r := p.Unrouted[4].Reason; r != "leaf02 forwards LID 22 to port 7, which has no cable" {
		t.Errorf("reason %q", r)
	}
}

func FuzzParseLFTsRoundTrip(f *testing.F) {
	for _, name := range []string{"fattree-2x4x4-updn.dump_fts.txt", "fattree-2x4x4-ftree.opensm-lfts.dump"} {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(b))
	}
	f.Add("Unicast lids [0-1] of switch Lid 1 guid 0x1 ('s'):\n0x0001 001 # Switch portguid 0x1: 'x'\n1 lids dumped\n")
	f.Fuzz(func(t *testing.T, text string) {
		lfts, err := ParseLFTs(strings.NewReader(text))
		if err != nil {
			return
		}
		// every entry line that parsed is in a table: no lost records
		entries := 0
		for _, l := range lfts {
			entries += len(l.Out)
		}
		var buf bytes.Buffer
		if err := WriteLFTs(&buf, lfts); err != nil {
			t.Fatal(err)
		}
		again, err := ParseLFTs(&buf)
		if err != nil {
			t.Fatalf("re-read of written tables: %v\n%s", err, buf.String())
		}
		if len(again) != len(lfts) {
			t.Fatalf("%d tables written, %d read back", len(lfts), len(again))
		}
		n := 0
		for i := range lfts {
			n += len(again[i].Out)
			if !reflect.DeepEqual(normalize(lfts[i]), normalize(again[i])) {
				t.Fatalf("table %d changed:\n%+v\n%+v", i, lfts[i], again[i])
			}
		}
		if n != entries {
			t.Fatalf("%d entries, %d read back", entries, n)
		}
	})
}

// normalize makes an absent Dest map and an empty one equal.
func normalize(l LFT) LFT {
	if len(l.Dest) == 0 {
		l.Dest = nil
	}
	return l
}

// sortLFTs orders tables by switch GUID.
func sortLFTs(lfts []LFT) {
	slices.SortFunc(lfts, func(a, b LFT) int { return cmp.Compare(a.Switch, b.Switch) })
}

// The hand-written line reader replaced these regexps (too slow over half
// a million lines); they stay here as the oracle it must agree with.
var (
	oracleHeaderRE = regexp.MustCompile(`^Unicast lids \[[^\]]*\] of switch (.*?)\s*guid (0x[0-9a-fA-F]+) \((.*)\):\s*$`)
	oracleLidRE    = regexp.MustCompile(`^Lid (\d+)$`)
	oracleEntryRE  = regexp.MustCompile(`^0x([0-9a-fA-F]{1,4})\s+(\d{1,3})\s*(?::\s*\((.*)\)|#\s*(.*))?$`)
	oracleDestRE   = regexp.MustCompile(`^(Switch|Channel Adapter|Router) portguid (0x[0-9a-fA-F]+): '(.*)'$`)
	oracleTailRE   = regexp.MustCompile(`^\d+ (?:valid )?lids dumped\s*$`)
)

func FuzzLineReadersMatchRegexps(f *testing.F) {
	for _, s := range []string{
		"Unicast lids [0x0-0x16] of switch DR path slid 0; dlid 0; 0,1,6 guid 0x0000000000200001 (spine02):",
		"Unicast lids [0-22] of switch Lid 1 guid 0x0000000000200000 ('spine01'):",
		"Unicast lids [0-22] of switch Lid 1 guid 0x1 (a) guid 0x2 (b):",
		"0x0002 001 : (Channel Adapter portguid 0x0000000000100001: 'node0001')",
		"0x0002 001 # Channel Adapter portguid 0x0000000000100001: 'node0001'",
		"0x0016 004", "0x00016 004", "0x0001 1234", "21 valid lids dumped ", "7 lids dumped",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		line = strings.TrimSpace(line)
		if strings.Contains(line, "\n") {
			return // lines are read one at a time: none holds a newline
		}
		m := oracleHeaderRE.FindStringSubmatch(line)
		tb, ok, msg := parseHeader(line)
		if (m != nil) != ok {
			t.Fatalf("header %q: regexp %v, reader %v", line, m != nil, ok)
		}
		if ok && msg == "" {
			lid := 0
			if l := oracleLidRE.FindStringSubmatch(m[1]); l != nil {
				lid, _ = strconv.Atoi(l[1])
			}
			g, _ := host.ParseGUID(m[2])
			if tb.Switch != g || tb.Name != strings.Trim(m[3], "'") || tb.LID != lid {
				t.Fatalf("header %q: reader %+v, regexp %q", line, tb, m)
			}
		}
		if oracleTailRE.MatchString(line) != isTail(line) {
			t.Fatalf("tail %q: regexp %v", line, oracleTailRE.MatchString(line))
		}
		if !strings.HasPrefix(line, "0x") {
			return
		}
		e := oracleEntryRE.FindStringSubmatch(line)
		lid, port, info, ok := parseEntry(line)
		if (e != nil) != ok {
			t.Fatalf("entry %q: regexp %v, reader %v", line, e != nil, ok)
		}
		if !ok {
			return
		}
		wl, _ := strconv.ParseInt(e[1], 16, 32)
		wp, _ := strconv.Atoi(e[2])
		if lid != int(wl) || port != wp || strings.TrimSpace(info) != strings.TrimSpace(e[3]+e[4]) {
			t.Fatalf("entry %q: reader %d %d %q, regexp %q", line, lid, port, info, e)
		}
		d := oracleDestRE.FindStringSubmatch(strings.TrimSpace(info))
		got, ok, msg := parseDest(info)
		if (d != nil) != ok {
			t.Fatalf("dest %q: regexp %v, reader %v", info, d != nil, ok)
		}
		if ok && msg == "" && (got.Type != d[1] || got.Name != d[3]) {
			t.Fatalf("dest %q: reader %+v, regexp %q", info, got, d)
		}
	})
}

func samePaths(p, q *Paths) bool {
	if p.N != q.N {
		return false
	}
	for s := range p.N {
		for d := range p.N {
			if !slices.Equal(p.Path(s, d), q.Path(s, d)) {
				return false
			}
		}
	}
	return true
}
