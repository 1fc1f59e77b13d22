package cli

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rdmalab/rdmalab/internal/envelope"
	"github.com/rdmalab/rdmalab/internal/fabric"
	"github.com/rdmalab/rdmalab/internal/testhost"
)

func TestFabricOnSimulator(t *testing.T) {
	sim := testhost.StartIBSim(t, testhost.QDRLab)
	sim.StartSM("lab01 HCA-1", 0)
	sim.WaitUp(30 * time.Second)
	for _, kv := range sim.Env() {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	t.Chdir(sim.Dir) // the shim writes ./sys-<pid> where the tools run

	js, errOut, code := run(t, "fabric", "scan", "-o", "json", "--timeout", "30s")
	if k, err := envelope.Peek([]byte(js)); err != nil || k != envelope.FabricSnapshot {
		t.Fatalf("scan -o json is not a fabric-snapshot envelope: %v %q", err, k)
	}
	s, err := fabric.Decode(strings.NewReader(js))
	if code != ExitOK || err != nil || len(s.Links()) != 3 || len(s.SMs) != 1 {
		t.Fatalf("scan: exit %d %v %s", code, err, errOut)
	}
	table, _, _ := run(t, "fabric", "scan", "--timeout", "30s")
	if !strings.Contains(table, "lab03 HCA-1 port 1") || !strings.Contains(table, "12X DDR") {
		t.Errorf("scan table does not list its links:\n%s", table)
	}
	snap := filepath.Join(t.TempDir(), "fabric.json")
	if err := os.WriteFile(snap, []byte(js), 0o644); err != nil {
		t.Fatal(err)
	}
	plan := filepath.Join(t.TempDir(), "cabling.yaml")
	if err := os.WriteFile(plan, []byte("links:\n  - {a: {node: lab01 HCA-1, port: 1}, b: {node: ib-sw01, port: 5}}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"--timeout", "30s"}, {"--snapshot", snap}} {
		out, _, code := run(t, append([]string{"fabric", "check", "--topology", plan, "--expect-rate", "4X QDR"}, args...)...)
		for _, want := range []string{"fabric.link.rate", "lab03 HCA-1 port 1 ↔ ib-sw01 port 3: runs at 12X DDR (60 Gb/s), below the expected 4X QDR (40 Gb/s)"} {
			if strings.Contains(out, want) {
				t.Errorf("%v: 12X DDR (60) is above 4X QDR (40), yet: %s", args, want)
			}
		}
		for _, want := range []string{"fabric.topology.miswired", "lab01 HCA-1 port 1 ↔ ib-sw01 port 5"} {
			if !strings.Contains(out, want) {
				t.Errorf("%v: output lacks %q:\n%s", args, want, out)
			}
		}
		if code != ExitFindings {
			t.Errorf("%v: exit %d, want 1", args, code)
		}
	}
	out, _, code := run(t, "fabric", "check", "--fabric", snap)
	if code != ExitFindings || !strings.Contains(out, "lab03 HCA-1 port 1 ↔ ib-sw01 port 3: runs at 12X DDR (60 Gb/s), should run at 12X QDR (120 Gb/s): 2 of 3 CA↔Switch links") || !strings.Contains(out, "Worst links first") {
		t.Errorf("exit %d:\n%s", code, out)
	}
	js, _, _ = run(t, "fabric", "check", "--fabric", snap, "-o", "json")
	if k, err := envelope.Peek([]byte(js)); err != nil || k != envelope.FabricCheck {
		t.Errorf("check -o json: %v %q", err, k)
	}
}

// Wrong input and flags: exit 2 with one line naming the flag or the file.
func TestFabricRefusals(t *testing.T) {
	dir := t.TempDir()
	hostSnap := filepath.Join(dir, "host.json")
	inv, _, _ := run(t, "inventory", "--snapshot", "example:r730-qdr", "-o", "json")
	os.WriteFile(hostSnap, []byte(inv), 0o644)
	empty := filepath.Join(dir, "empty.yaml")
	os.WriteFile(empty, nil, 0o644)
	emptyTopo := filepath.Join(dir, "empty.txt")
	os.WriteFile(emptyTopo, []byte("# nothing\n"), 0o644)
	typo := filepath.Join(dir, "typo.yaml")
	os.WriteFile(typo, []byte("links:\n  - a: {node: x, port: 1}\n    b: {nod: y, port: 2}\n"), 0o644)
	byName := filepath.Join(dir, "byname.yaml")
	os.WriteFile(byName, []byte("links:\n  - {a: {node: lab01 HCA-1, port: 1}, b: {node: ib-sw01, port: 1}}\n"), 0o644)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"fabric", "check", "--fabric", "example:qdr-lab", "--threshold", "Bogus=1"}, "--threshold \"Bogus=1\""},
		{[]string{"fabric", "check", "--fabric", "example:qdr-lab", "--threshold", "PortXmitWait=1"}, "--threshold \"PortXmitWait=1\""},
		{[]string{"fabric", "check", "--fabric", "example:qdr-lab", "--expect-rate", "fast"}, "--expect-rate"},
		{[]string{"fabric", "check", "--fabric", "example:qdr-lab", "--expect-rate", "0"}, "--expect-rate"},
		{[]string{"fabric", "check", "--fabric", "example:qdr-lab", "--expect-rate", "-100"}, "--expect-rate"},
		{[]string{"fabric", "check", "--interval", "-5s"}, "--interval -5s: must be positive"},
		{[]string{"fabric", "scan", "--port", "-1"}, "--port -1: a port number is 1 or more"},
		{[]string{"fabric", "scan", "--port", "0"}, "--port 0"},
		{[]string{"fabric", "scan", "--timeout", "0s"}, "--timeout 0s: must be positive"},
		{[]string{"fabric", "check", "--fabric", "example:qdr-lab", "--interval", "5s"}, "--interval reads a live fabric"},
		{[]string{"fabric", "check", "--fabric", "example:nope"}, "no example fabric \"nope\""},
		{[]string{"fabric", "check", "--fabric", hostSnap}, hostSnap + ": this is a host"},
		{[]string{"fabric", "check", "--fabric", "example:qdr-lab", "--topology", "/nonexistent.yaml"}, "/nonexistent.yaml"},
		{[]string{"fabric", "check", "--fabric", "example:qdr-lab", "--topology", empty}, empty + ": the plan lists no links"},
		{[]string{"fabric", "check", "--fabric", "example:qdr-lab", "--topology", emptyTopo}, emptyTopo + ": the plan lists no links"},
		{[]string{"fabric", "check", "--fabric", "example:qdr-lab", "--topology", typo}, "line 3: unknown field \"nod\""},
		{[]string{"fabric", "check", "--fabric", "example:qdr-lab", "--topology", hostSnap}, "this is JSON, not a topology"},
		{[]string{"judge", "/nonexistent.txt"}, "/nonexistent.txt"},
		{[]string{"judge", hostSnap}, hostSnap + ": not a saved output rdmalab judges"},
		{[]string{"judge", "--expect-layer", "fibre", hostSnap}, "--expect-link-layer"},
	} {
		_, errOut, code := run(t, c.args...)
		if code != ExitUsage || !strings.Contains(errOut, c.want) || strings.Count(strings.TrimSpace(errOut), "\n") > 0 {
			t.Errorf("%v: exit %d, stderr %q, want one line with %q", c.args, code, errOut, c.want)
		}
	}
	_, errOut, code := run(t, "fabric", "check", "--fabric", "example:qdr-lab", "--topology", byName)
	if code == ExitUsage {
		t.Errorf("unique names must be accepted: %s", errOut)
	}
}

// judge on a saved dump, a file and stdin, json in the envelope.
func TestJudgeCommand(t *testing.T) {
	dir := t.TempDir()
	dump := filepath.Join(dir, "ibnetdiscover.txt")
	os.WriteFile(dump, []byte(testhost.Degrade(testhost.EDRDump(2, 4, 4), 3, 2, "4xDDR")), 0o644)
	out, errOut, code := run(t, "judge", dump)
	if code != ExitFindings || !strings.Contains(out, "(ibnetdiscover output)") || !strings.Contains(out, "runs at 4X DDR (20 Gb/s), should run at 4X EDR (100 Gb/s)") {
		t.Errorf("exit %d %s\n%s", code, errOut, out)
	}
	js, _, code := run(t, "judge", "-o", "json", "--expect-rate", "4X EDR", dump)
	if k, err := envelope.Peek([]byte(js)); code != ExitFindings || err != nil || k != envelope.Judge {
		t.Errorf("json: exit %d %v %q", code, err, k)
	}
}

// An interrupted scan exits 130, not 2.
func TestFabricInterrupted(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	in := fabricInput{timeout: time.Minute}
	_, err := in.load(ctx, io.Discard)
	var ee *exitError
	if !errors.As(err, &ee) || ee.code != exitInterrupted {
		t.Errorf("want exit %d, got %v", exitInterrupted, err)
	}
}

// judge - reads standard input.
func TestJudgeStdin(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(testhost.SharedTestdata(t), "ibtools/h20-cx7-ndr200/ibstatus_2X-NDR_redacted.txt"))
	if err != nil {
		t.Fatal(err)
	}
	var o, e strings.Builder
	root := newRoot(&o, &e)
	root.SetIn(strings.NewReader(string(b)))
	root.SetArgs([]string{"judge", "--expect-rate", "4X NDR", "-"})
	err = root.Execute()
	if err != errFindings || !strings.Contains(o.String(), "== (stdin) (ibstatus output)") || !strings.Contains(o.String(), "mlx5_7 port 1: runs at 200 Gb/s (200 Gb/sec (2X NDR)), expected 4X NDR (400 Gb/s)") {
		t.Errorf("%v\n%s%s", err, o.String(), e.String())
	}
}

// Issue 35's done-when through the command: a fabric under ibsim whose
// nodes describe themselves with iblinkinfo's and ibnetdiscover's syntax
// (quotes cannot pass ibsim's netlist; they are tested on recorded output
// in internal/fabric) is judged as its plain twin: exit 0 healthy, exit 1
// with one link at 1X, that link named by both GUIDs.
func TestFabricCheckForgedDescriptionsExit(t *testing.T) {
	forge := func(dump string) string {
		dump = strings.ReplaceAll(dump, `"SwitchIB Mellanox Technologies"`, `"x 3 1[ ] ==(12X 10.0 Gbps Active/ LinkUp)==> 1 2[ ] y"`)
		return strings.ReplaceAll(dump, `"HCA-1"`, `"S-000 [1] # lid 4 lmc 0 \e[8m q\te 9 9[  ] ==( 1X 2.5 Gbps"`)
	}
	dump := testhost.EDRDump(1, 2, 3)
	for _, c := range []struct {
		name, netlist string
		code          int
		want          []string
	}{
		{"healthy", forge(dump), 0, nil},
		{"degraded", forge(testhost.Degrade(dump, 2, 3, "1xEDR")), 1, []string{"fabric.link.width", "0x248a070300c70206", "0x7cfe900300b60020", "1X EDR"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			sim := testhost.StartIBSim(t, c.netlist)
			sim.StartSM("", 0)
			sim.WaitUp(60 * time.Second)
			for _, kv := range sim.Env() {
				k, v, _ := strings.Cut(kv, "=")
				t.Setenv(k, v)
			}
			t.Chdir(sim.Dir)
			out, errOut, code := run(t, "fabric", "check", "--timeout", "30s")
			if code != c.code {
				t.Fatalf("exit %d, want %d:\n%s\n%s", code, c.code, out, errOut)
			}
			for _, w := range c.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
			if strings.Contains(out, "fabric.parse.unreadable") {
				t.Errorf("unreadable lines:\n%s", out)
			}
		})
	}
}

// Issue 34: no subnet manager answering is a failure (exit 1), even with
// ports still Active from an SM that is gone; sminfo unable to ask at all
// leaves the SM question open: UNPROVEN, exit 3, never 0.
func TestFabricCheckSubnetManagerExit(t *testing.T) {
	dir := "../fabric/testdata/edr-ibsim/"
	read := func(name string) string {
		b, err := os.ReadFile(dir + name)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	for _, c := range []struct {
		name, sminfo string
		code         int
		want         string
	}{
		{"no answer", "ibwarn: [1647] mad_rpc: _do_madrpc failed; dport (DR path slid 0; dlid 0; 0)\nsminfo: iberror: failed: query\n", 1, "no subnet manager answers sminfo"},
		{"cannot ask", "ibwarn: [1692] mad_rpc_open_port: can't open UMAD port (mlx5_9:0)\nsminfo: iberror: failed: Failed to open 'mlx5_9' port '0'\n", 3, "sminfo could not ask"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := fabric.Replay{
				"ibnetdiscover": {Stdout: read("ibnetdiscover.out")},
				"iblinkinfo":    {Stdout: read("iblinkinfo-line.out")},
				"ibqueryerrors": {Stdout: read("ibqueryerrors.out"), Exit: 1},
				"sminfo":        {Stderr: c.sminfo, Exit: 255},
				"saquery":       {Stderr: "ibwarn: [1662] sa_get_handle: No SM/SA found on port (null):0\n", Exit: 255},
			}
			s, err := fabric.Scan(context.Background(), r, fabric.ScanOptions{})
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(t.TempDir(), "fabric.json")
			f, err := os.Create(path)
			if err != nil {
				t.Fatal(err)
			}
			if err := envelope.Write(f, envelope.FabricSnapshot, nil, s); err != nil {
				t.Fatal(err)
			}
			f.Close()
			out, errOut, code := run(t, "fabric", "check", "--fabric", path, "--expect-rate", "4X DDR", "--threshold", "SymbolErrorCounter=100")
			if code != c.code || !strings.Contains(out, c.want) {
				t.Errorf("exit %d (want %d), output lacks %q?\n%s\n%s", code, c.code, c.want, out, errOut)
			}
		})
	}
}
