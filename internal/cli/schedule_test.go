package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/rdmalab/rdmalab/internal/envelope"
	"github.com/rdmalab/rdmalab/internal/schedule"
	"github.com/rdmalab/rdmalab/internal/testhost"
)

// runBenchSchedule runs 'rdmalab bench schedule ARGS'.
func runBenchSchedule(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	return run(t, append([]string{"bench", "schedule"}, args...)...)
}

func routeTestdata(name string) string { return filepath.Join("..", "route", "testdata", name) }

func TestBenchScheduleFromFiles(t *testing.T) {
	for _, fab := range []string{"fattree-2x4x4.ibnetdiscover", "fattree-2x4x4.fabric.json", "fattree-2x4x4.net"} {
		t.Run(fab, func(t *testing.T) {
			out, errOut, code := runBenchSchedule(t, "--fabric", routeTestdata(fab), "--routes", routeTestdata("fattree-2x4x4-updn.dump_fts.txt"))
			if code != ExitOK || errOut != "" {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			for _, want := range []string{"16 CA ports, 48 directed links, 48 coverable, 0 uncoverable", "Cover schedule:  1 round(s)", "Circle method:   15 rounds", "node0001 ↔"} {
				if !strings.Contains(out, want) {
					t.Errorf("output lacks %q:\n%s", want, out)
				}
			}
		})
	}
}

func TestBenchScheduleJSONAndRoundFile(t *testing.T) {
	rounds := filepath.Join(t.TempDir(), "cover.txt")
	out, errOut, code := runBenchSchedule(t, "--fabric", routeTestdata("fattree-2x4x4.fabric.json"),
		"--routes", routeTestdata("fattree-2x4x4-ftree.opensm-lfts.dump"), "--output", "json", "--rounds", rounds, "--rounds-format", "clusterkit")
	if code != ExitOK || errOut != "" {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	raw, err := envelope.Payload([]byte(out), envelope.Schedule)
	if err != nil {
		t.Fatal(err)
	}
	var pl schedule.Payload
	if err := json.Unmarshal(raw, &pl); err != nil {
		t.Fatal(err)
	}
	if pl.Nodes != 16 || len(pl.Rounds) != 1 || pl.CircleRounds != 15 || pl.Covered != 48 || len(pl.Uncoverable) != 0 {
		t.Fatalf("payload: %+v", pl)
	}
	p := pl.Rounds[0].Pairs[0]
	if p.A.PortGUID == 0 || p.A.Name == "" || len(pl.Rounds[0].Links) != 48 {
		t.Errorf("round 0: %+v, %d links", p, len(pl.Rounds[0].Links))
	}
	fd, err := os.Open(rounds)
	if err != nil {
		t.Fatal(err)
	}
	defer fd.Close()
	s, err := schedule.ReadRounds(fd, schedule.ClusterKit, nil)
	if err != nil || len(s.Rounds) != 1 || len(s.Rounds[0]) != 8 {
		t.Fatalf("round file: %+v %v", s, err)
	}
}

func TestBenchScheduleRefusesBadInput(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--fabric", routeTestdata("fattree-2x4x4.net"), "--routes", routeTestdata("fattree-2x4x4.net")}, "no forwarding table in it"},
		{[]string{"--fabric", routeTestdata("missing"), "--routes", routeTestdata("fattree-2x4x4-updn.dump_fts.txt")}, "missing: no such file"},
		{[]string{"--fabric", routeTestdata("fattree-2x4x4.net"), "--routes", routeTestdata("fattree-2x4x4-updn.dump_fts.txt"), "--rounds", "x", "--rounds-format", "csv"}, "--rounds-format"},
		{[]string{"--output", "yaml"}, "--output"},
	} {
		_, errOut, code := runBenchSchedule(t, tc.args...)
		if code != ExitUsage || !strings.Contains(errOut, tc.want) || strings.Count(strings.TrimSpace(errOut), "\n") > 0 {
			t.Errorf("%v: exit %d, %q; want 2 and one line with %q", tc.args, code, errOut, tc.want)
		}
	}
}

// Live: the fabric scanned and the tables read with dump_fts through the
// simulator agree with OpenSM's own dump of what it programmed.
func TestBenchScheduleLiveOnSimulator(t *testing.T) {
	sim := testhost.StartIBSim(t, testhost.FatTree(2, 4, 4))
	dump := sim.StartRoutingSM("updn", 6, time.Minute)
	for _, kv := range sim.Env() {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	t.Chdir(sim.Dir) // the shim writes ./sys-<pid> where the tools run
	live, errOut, code := runBenchSchedule(t, "--timeout", "60s", "-o", "json")
	if code != ExitOK {
		t.Fatalf("live: exit %d: %s", code, errOut)
	}
	fromDump, errOut, code := runBenchSchedule(t, "--timeout", "60s", "-o", "json", "--routes", dump)
	if code != ExitOK {
		t.Fatalf("live fabric, dumped routes: exit %d: %s", code, errOut)
	}
	var a, b schedule.Payload
	for _, x := range []struct {
		js string
		pl *schedule.Payload
	}{{live, &a}, {fromDump, &b}} {
		raw, err := envelope.Payload([]byte(x.js), envelope.Schedule)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(raw, x.pl); err != nil {
			t.Fatal(err)
		}
	}
	if a.Nodes != 16 || a.Coverable != 48 || a.Covered != 48 || len(a.Rounds) != 1 || a.Source != "live scan; routes dump_fts" {
		t.Fatalf("live payload: %+v", a)
	}
	a.Source, b.Source, a.ScheduleSeconds, b.ScheduleSeconds = "", "", 0, 0
	if !reflect.DeepEqual(a, b) {
		t.Errorf("dump_fts and OpenSM's dump give different schedules")
	}
}
