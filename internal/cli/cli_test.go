package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rdmalab/rdmalab/internal/host"
	"github.com/rdmalab/rdmalab/internal/testhost"
)

func TestMain(m *testing.M) { os.Exit(testhost.Main(m)) }

func run(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var o, e bytes.Buffer
	code = Main(args, &o, &e)
	return o.String(), e.String(), code
}

func decode(t *testing.T, s string) *host.Snapshot {
	t.Helper()
	snap, err := host.Decode(strings.NewReader(s))
	if err != nil {
		t.Fatalf("%v\n%s", err, s)
	}
	return snap
}

func TestInventoryOnSeedTree(t *testing.T) {
	root := testhost.WriteTree(t, testhost.Seed000())
	out, errOut, code := run(t, "inventory", "--root", root)
	if code != ExitOK || errOut != "" {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"epyc-lab", "GPU GeForce RTX 3090", "enp65s0f0np0 mlx5_0", "::ffff:10.0.0.1", "SYS"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q", want)
		}
	}
	js, _, code := run(t, "inventory", "--root", root, "--output", "json")
	s := decode(t, js)
	if code != ExitOK || s.SchemaVersion != host.SchemaVersion || len(s.RDMADevices) != 4 {
		t.Fatalf("json: exit %d, %+v", code, s)
	}
	// The snapshot goes back in and renders the same tables.
	snapFile := filepath.Join(t.TempDir(), "h.json")
	os.WriteFile(snapFile, []byte(js), 0o644)
	again, _, code := run(t, "inventory", "--snapshot", snapFile)
	if code != ExitOK || again != out {
		t.Errorf("--snapshot renders differently (exit %d)", code)
	}
}

// gather captures exactly what inventory reads; replaying the capture gives
// the same snapshot.
func TestGatherRoundTrip(t *testing.T) {
	root := testhost.WriteTree(t, testhost.HGX())
	archive := filepath.Join(t.TempDir(), "hgx.tar.gz")
	_, errOut, code := run(t, "gather", archive, "--root", root)
	if code != ExitOK || !strings.Contains(errOut, "wrote "+archive) {
		t.Fatalf("gather exit %d: %s", code, errOut)
	}
	direct, _, _ := run(t, "inventory", "--root", root, "-o", "json")
	replayed, errOut, code := run(t, "inventory", "--root", archive, "-o", "json")
	if code != ExitOK {
		t.Fatalf("replay exit %d: %s", code, errOut)
	}
	a, b := decode(t, direct), decode(t, replayed)
	a.Source, b.Source = "", ""
	a.CollectedAt = b.CollectedAt
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	if !bytes.Equal(ja, jb) {
		t.Errorf("replayed capture differs from the host it captured")
	}
	if st, _ := os.Stat(archive); st.Size() > 1<<20 {
		t.Errorf("capture is %d bytes; it should hold only what inventory reads", st.Size())
	}
	if _, err := os.Stat(archive + ".partial"); err == nil {
		t.Error("a .partial file was left behind")
	}
}

func TestPartialInfinibandCapture(t *testing.T) {
	caps := testhost.Captures(t)
	c := caps["sys-class-infiniband-h100.0"]
	out, errOut, code := run(t, "inventory", "--root", c.Root)
	if code != ExitOK || !strings.Contains(out, "mlx5_bond_0") || !strings.Contains(out, "400 Gb/sec (4X NDR)") {
		t.Fatalf("exit %d %s\n%s", code, errOut, out)
	}
}

func TestUserMistakesExitTwoWithoutStack(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "nope")
	notSnap := filepath.Join(t.TempDir(), "x.json")
	os.WriteFile(notSnap, []byte(`{"hello":1}`), 0o644)
	empty := t.TempDir()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"inventory", "--root", missing}, missing},
		{[]string{"inventory", "--root", empty}, "no sys/ inside"},
		{[]string{"inventory", "--snapshot", notSnap}, "no schema_version"},
		{[]string{"inventory", "--snapshot", "example:nope"}, "have hgx-h200"},
		{[]string{"inventory", "--output", "yaml"}, "want table or json"},
		{[]string{"inventory", "--frobnicate"}, "unknown flag"},
		{[]string{"gather", "out.zip"}, "must end in .tar.gz"},
		{[]string{"gather"}, "gather: wants 1 argument(s), got 0; usage: rdmalab gather OUT.tar.gz"},
		{[]string{"nosuchcommand"}, "unknown command"},
	} {
		_, errOut, code := run(t, tc.args...)
		if code != ExitUsage || !strings.Contains(errOut, tc.want) || strings.Contains(errOut, "goroutine") {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 mentioning %q", tc.args, code, errOut, tc.want)
		}
	}
}

func TestDemo(t *testing.T) {
	out, _, code := run(t, "demo")
	if code != ExitOK {
		t.Fatalf("exit %d", code)
	}
	for _, want := range []string{"example host seed000-epyc", "example host hgx-h200", "columbia.lab", "PIX", "rdmalab doctor", "gpudirect.path"} {
		if !strings.Contains(out, want) {
			t.Errorf("demo lacks %q", want)
		}
	}
}

func TestHelpTeaches(t *testing.T) {
	out, _, code := run(t, "inventory", "--help")
	if code != ExitOK || !strings.Contains(out, "Example") || !strings.Contains(out, "--snapshot") {
		t.Errorf("help: exit %d\n%s", code, out)
	}
}

func TestDoctorExitCodesAndNHC(t *testing.T) {
	healthy := testhost.WriteTree(t, testhost.Seed000())
	out, _, code := run(t, "doctor", "--root", healthy)
	if code != ExitOK || !strings.Contains(out, "0 fail") {
		t.Fatalf("healthy host: exit %d\n%s", code, out)
	}
	sick := testhost.WriteTree(t, testhost.Seed000())
	os.WriteFile(filepath.Join(sick, "sys/devices/pci0000:40/0000:40:01.1/0000:41:00.0/infiniband/mlx5_0/ports/1/state"), []byte("1: DOWN\n"), 0o644)
	out, _, code = run(t, "doctor", "--root", sick)
	if code != ExitFindings || !strings.Contains(out, "port.state") || !strings.Contains(out, "fix:") {
		t.Fatalf("port down: exit %d\n%s", code, out)
	}
	out, _, code = run(t, "doctor", "--root", sick, "--nhc")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != ExitFindings || len(lines) != 1 || !strings.HasPrefix(lines[0], "ERROR: rdmalab: port.state: epyc-lab mlx5_0 port 1") {
		t.Fatalf("nhc: exit %d %q", code, out)
	}
	js, _, code := run(t, "doctor", "--root", sick, "-o", "json")
	var doc struct {
		Kind     string
		Findings []struct{ Check, Outcome string }
		Summary  map[string]any
	}
	if err := json.Unmarshal([]byte(js), &doc); err != nil || code != ExitFindings || doc.Kind != "doctor" || doc.Summary["fail"] != 1.0 {
		t.Fatalf("json: exit %d err %v summary %v", code, err, doc.Summary)
	}
	if _, errOut, code := run(t, "doctor", "--expect-link-layer", "ethernetz"); code != ExitUsage || !strings.Contains(errOut, "want InfiniBand (IB) or RoCE (Ethernet)") {
		t.Errorf("bad flag: exit %d %q", code, errOut)
	}
}

func TestDoctorFleetOfSnapshots(t *testing.T) {
	dir := t.TempDir()
	var args []string
	for i, rate := range []string{"400 Gb/sec (4X NDR)", "400 Gb/sec (4X NDR)", "200 Gb/sec (4X HDR)"} {
		root := testhost.WriteTree(t, testhost.HGX())
		os.WriteFile(filepath.Join(root, "proc/sys/kernel/hostname"), []byte("node"+string(rune('1'+i))+"\n"), 0o644)
		os.WriteFile(filepath.Join(root, "sys/devices/pci0000:10/0000:10:01.0/0000:11:00.0/0000:12:01.0/0000:14:00.0/infiniband/mlx5_0/ports/1/rate"), []byte(rate+"\n"), 0o644)
		js, _, _ := run(t, "inventory", "--root", root, "-o", "json")
		p := filepath.Join(dir, "n"+string(rune('1'+i))+".json")
		os.WriteFile(p, []byte(js), 0o644)
		args = append(args, "--snapshot", p)
	}
	out, _, code := run(t, append([]string{"doctor", "--nhc"}, args...)...)
	if code != ExitFindings || !strings.Contains(out, "fleet.rate: node3") || !strings.Contains(out, "port.rate.below-expected: node3 mlx5_0 port 1") || strings.Contains(out, "node1") {
		t.Fatalf("exit %d\n%s", code, out)
	}
}

// doctor --profile vm-host judges a hypervisor: seed 000 before its VFIO
// step still has the NVIDIA driver and its GPUs on it.
func TestDoctorVMHostProfile(t *testing.T) {
	out, _, code := run(t, "doctor", "--snapshot", "example:seed000-epyc", "--profile", "vm-host")
	if code != ExitFindings || !strings.Contains(out, "vmhost.nvidia-driver") || !strings.Contains(out, "vmhost.vfio") || strings.Contains(out, "gpudirect.peermem") {
		t.Errorf("exit %d\n%s", code, out)
	}
	if _, errOut, code := run(t, "doctor", "--snapshot", "example:seed000-epyc", "--profile", "vm"); code != ExitUsage || !strings.Contains(errOut, "--profile vm: want bare-metal or vm-host") {
		t.Errorf("bad profile: exit %d %q", code, errOut)
	}
}

func TestPlanVMs(t *testing.T) {
	dir := filepath.Join(testhost.TempDir(t), "lab")
	out, errOut, code := run(t, "plan", "vms", "--root", testhost.WriteTree(t, testhost.Seed000()), "--vms", "2", "--dir", dir)
	if code != ExitOK || errOut != "" {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"vm00 (6 cores)", "host (2 cores)", "hugepages=64", "06:00.0 ↔ 41:00.0 SYS", "Wrote " + dir} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	for _, f := range []string{"plan.json", "kernel-cmdline.txt", "vfio.sh", "vm00.xml", "vm01.xml", "virt-install.sh", "CHECKLIST.md"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Error(err)
		}
	}

	// Refused: exit 1, the reason, the nearest request and its plan; no files.
	dir2 := filepath.Join(testhost.TempDir(t), "none")
	out, _, code = run(t, "plan", "vms", "--snapshot", "example:seed000-epyc", "--vms", "3", "--vcpus", "40", "--dir", dir2)
	if code != ExitFindings || !strings.Contains(out, "plan.vms") || !strings.Contains(out, "plan.cpus") ||
		!strings.Contains(out, "Nearest feasible request: --vms 2 --vcpus 28") || !strings.Contains(out, "vm01") {
		t.Errorf("refusal: exit %d\n%s", code, out)
	}
	if _, err := os.Stat(dir2); !os.IsNotExist(err) {
		t.Errorf("a refused plan wrote %s", dir2)
	}
	js, _, code := run(t, "plan", "vms", "--snapshot", "example:seed000-epyc", "--policy", "single-numa-node", "--vms", "2", "-o", "json")
	var res struct {
		Kind     string
		Findings []struct{ Check, Outcome string }
		Payload  struct {
			Plan    struct{ VMs []struct{ Name string } }
			Nearest struct{ Policy string } `json:"nearest_request"`
		}
	}
	if err := json.Unmarshal([]byte(js), &res); err != nil || code != ExitFindings || res.Kind != "plan" || len(res.Findings) == 0 ||
		res.Findings[0].Check != "plan.policy" || res.Payload.Nearest.Policy != "restricted" || len(res.Payload.Plan.VMs) != 2 {
		t.Errorf("json refusal: exit %d err %v\n%s", code, err, js)
	}

	// User mistakes: exit 2 with the culprit named.
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--vm", "07:00.0"}, "no PCI device 0000:07:00.0"},
		{[]string{"--vm", "zz"}, "--vm zz"},
		{[]string{"--memory", "lots"}, "--memory: size \"lots\""},
		{[]string{"--policy", "strict"}, "--policy strict"},
		{[]string{"--page-size", "4K"}, "--page-size 4K: want 1G or 2M"},
		// Issue 12: numbers that meant something else are refused, never replaced.
		{[]string{"--memory", "200"}, "size \"200\" has no unit: write 200G (GiB) or 200GB"},
		{[]string{"--memory", "32GB"}, "not a whole number of 1G hugepages"},
		{[]string{"--housekeeping-cores", "0"}, "--housekeeping-cores 0: the host needs at least 1 whole core"},
		{[]string{"--vms", "0"}, "--vms 0: want at least 1 VM"},
		{[]string{"--vcpus", "-4"}, "--vcpus -4"},
		{[]string{"--name-prefix", "../../evil", "--dir", filepath.Join(testhost.TempDir(t), "o1")}, "--name-prefix \"../../evil\""},
		{[]string{"--name-prefix", "a/b"}, "--name-prefix \"a/b\""},
		{[]string{"--osinfo", "CentOS 9; rm -rf /"}, "--osinfo \"CentOS 9; rm -rf /\": want an osinfo short id"},
		{[]string{"--dir", "/dev/null"}, "--dir /dev/null: not a directory"},
		{[]string{"--dir", "/nonexistent/dir/lab"}, "parent directory /nonexistent/dir does not exist"},
	} {
		out, errOut, code := run(t, append([]string{"plan", "vms", "--snapshot", "example:seed000-epyc"}, c.args...)...)
		if code != ExitUsage || !strings.Contains(errOut, c.want) || strings.Contains(errOut, "goroutine") || out != "" {
			t.Errorf("%v: exit %d, stdout %d bytes, stderr %q, want %q", c.args, code, len(out), errOut, c.want)
		}
	}
	// plan check: the plan's own domains pass; a file with no domain is exit 2 naming it.
	if out, errOut, code := run(t, "plan", "check", "--root", testhost.WriteTree(t, testhost.Seed000()), filepath.Join(dir, "vm00.xml"), filepath.Join(dir, "vm01.xml")); code != ExitOK {
		t.Errorf("plan check of the plan's domains: exit %d %s\n%s", code, errOut, out)
	}
	notDomain := filepath.Join(dir, "plan.json")
	if _, errOut, code := run(t, "plan", "check", "--snapshot", "example:seed000-epyc", notDomain); code != ExitUsage || !strings.Contains(errOut, notDomain+": no libvirt <domain> XML") {
		t.Errorf("plan check of a non-domain: exit %d %q", code, errOut)
	}
	// The README's plan examples that name a snapshot run as written (issue 28).
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	examples := 0
	for _, line := range strings.Split(string(readme), "\n") {
		if !strings.HasPrefix(line, "rdmalab plan vms --snapshot ") {
			continue
		}
		examples++
		args := strings.Fields(strings.SplitN(line, "#", 2)[0])[1:]
		if _, errOut, code := run(t, args...); code != ExitOK {
			t.Errorf("README example %q: exit %d %s", line, code, errOut)
		}
	}
	if examples < 2 {
		t.Errorf("README has %d plan vms examples with --snapshot, want the seed 000 ones", examples)
	}
	// Nothing was written outside --dir by the hostile prefix.
	if _, err := os.Stat(filepath.Join(testhost.TempDir(t), "..", "evil00.xml")); err == nil {
		t.Error("--name-prefix ../../evil wrote outside --out")
	}
}
