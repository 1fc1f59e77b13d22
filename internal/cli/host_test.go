package cli

import (
	"archive/tar"
	"compress/gzip"
	"crypto/sha256"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rdmalab/rdmalab/internal/envelope"
	"github.com/rdmalab/rdmalab/internal/testhost"
)

func sum(t *testing.T, p string) [32]byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return sha256.Sum256(b)
}

// Wrong input is refused with exit 2 and one line naming the file and
// what it is, and the user's file is not touched.
func TestHostCommandsRefuseWrongInput(t *testing.T) {
	fabricBare, _ := filepath.Abs("../../examples/fabric/qdr-lab.json")
	fabricDoc := filepath.Join(t.TempDir(), "fabric.json")
	f, _ := os.Create(fabricDoc)
	envelope.Write(f, envelope.FabricSnapshot, nil, map[string]any{"schema_version": 1})
	f.Close()
	procOnly := t.TempDir()
	os.MkdirAll(filepath.Join(procOnly, "proc"), 0o755)
	os.WriteFile(filepath.Join(procOnly, "proc/cmdline"), []byte("ro\n"), 0o644)
	emptySys := t.TempDir()
	os.MkdirAll(filepath.Join(emptySys, "sys"), 0o755)
	before := sum(t, fabricDoc)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"inventory", "--snapshot", fabricBare}, fabricBare + " is a fabric-snapshot document, not a host snapshot"},
		{[]string{"doctor", "--snapshot", fabricDoc}, fabricDoc + " is a fabric-snapshot document, not a host snapshot"},
		{[]string{"doctor", "--root", fabricDoc}, fabricDoc + " is a fabric-snapshot document, not a host snapshot"},
		{[]string{"inventory", "--root", procOnly}, procOnly + ": has proc/ but no sys/"},
		{[]string{"doctor", "--root", emptySys}, emptySys + ": sys/ is empty"},
		{[]string{"doctor", "--snapshot", "example:hgx-h200", "--expect-rate", "-5"}, "--expect-rate"},
		{[]string{"doctor", "--snapshot", "example:hgx-h200", "--expect-rate", "0"}, "positive"},
		{[]string{"doctor", "--snapshot", "example:hgx-h200", "--expect-rate", "fast"}, "--expect-rate"},
		{[]string{"doctor", "--snapshot", "example:hgx-h200", "--expect-link-layer", "TCP"}, "--expect-link-layer"},
		{[]string{"doctor", "--snapshot", "example:hgx-h200", "--expect-ports", "mlx5_0/x"}, "--expect-ports"},
	} {
		out, errOut, code := run(t, tc.args...)
		lines := strings.Split(strings.TrimSpace(errOut), "\n")
		if code != ExitUsage || len(lines) != 1 || !strings.Contains(errOut, tc.want) || out != "" {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 and one line with %q", tc.args, code, errOut, tc.want)
		}
	}
	if sum(t, fabricDoc) != before {
		t.Error("a refused input file changed")
	}
}

// One rate syntax: doctor takes "4X NDR" and "400" alike, and cites the
// flag it was given.
func TestDoctorRateSyntax(t *testing.T) {
	for _, rate := range []string{"400", "4X NDR", "NDR", "400G"} {
		out, errOut, code := run(t, "doctor", "--snapshot", "example:hgx-h200", "--expect-rate", rate, "--expect-link-layer", "IB", "-v")
		if code != ExitOK || !strings.Contains(out, "400 Gb/s as expected (--expect-rate)") || !strings.Contains(out, "InfiniBand as expected") {
			t.Errorf("%q: exit %d %s\n%s", rate, code, errOut, out)
		}
	}
	out, _, code := run(t, "doctor", "--snapshot", "example:hgx-h200", "--expect-rate", "4X XDR")
	if code != ExitFindings || !strings.Contains(out, "expected 4X XDR (800 Gb/s) (--expect-rate)") {
		t.Errorf("4X XDR: exit %d\n%s", code, out)
	}
}

// -v means verbose wherever it exists; the version is --version only.
func TestVerboseIsNotVersion(t *testing.T) {
	out, _, code := run(t, "doctor", "--snapshot", "example:hgx-h200", "-v")
	if code != ExitOK || !strings.Contains(out, "PASS (") {
		t.Errorf("doctor -v: exit %d\n%s", code, out)
	}
	if _, errOut, code := run(t, "-v"); code != ExitUsage || !strings.Contains(errOut, "unknown shorthand flag: 'v'") {
		t.Errorf("rdmalab -v: exit %d %q", code, errOut)
	}
	if out, _, code := run(t, "--version"); code != ExitOK || !strings.Contains(out, "rdmalab version") {
		t.Errorf("--version: exit %d %q", code, out)
	}
}

// A capture whose entries try to leave the root: the escapes are counted
// and shown, never silently dropped; with nothing else inside it is exit 2.
func TestArchiveTraversalShown(t *testing.T) {
	root := testhost.WriteTree(t, testhost.R730())
	archive := filepath.Join(t.TempDir(), "evil.tar.gz")
	f, _ := os.Create(archive)
	gz := gzip.NewWriter(f)
	tw := tar.NewWriter(gz)
	if err := tw.AddFS(os.DirFS(root)); err != nil {
		t.Fatal(err)
	}
	tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: "../../evil", Size: 1, Mode: 0o644})
	tw.Write([]byte("x"))
	tw.Close()
	gz.Close()
	f.Close()
	out, errOut, code := run(t, "inventory", "--root", archive)
	if code != ExitOK || !strings.Contains(out, "1 archive entries refused for escaping the capture's root: ../../evil") {
		t.Errorf("exit %d %s\n%s", code, errOut, out)
	}
	onlyEvil := filepath.Join(t.TempDir(), "only.tar.gz")
	f, _ = os.Create(onlyEvil)
	gz = gzip.NewWriter(f)
	tw = tar.NewWriter(gz)
	tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: "../sys/x", Size: 1, Mode: 0o644})
	tw.Write([]byte("x"))
	tw.Close()
	gz.Close()
	f.Close()
	if _, errOut, code := run(t, "doctor", "--root", onlyEvil); code != ExitUsage || !strings.Contains(errOut, "1 archive entries refused") {
		t.Errorf("only escapes: exit %d %q", code, errOut)
	}
}

// Broken nodes do not pass: ConnectX on mlx5_core without mlx5_ib exits 1
// with an NHC line, also with --expect-rate; a node with no RDMA device at
// all fails under --nhc (RDMA is meant to be there) and warns otherwise.
func TestDoctorBrokenNodesFail(t *testing.T) {
	m := testhost.Seed000()
	m.RDMA = nil
	m.Modules = []string{"mlx5_core", "ib_core"}
	root := testhost.WriteTree(t, m)
	out, _, code := run(t, "doctor", "--root", root, "--nhc", "--expect-rate", "25")
	if code != ExitFindings || strings.Count(out, "ERROR: rdmalab: rdma.driver: epyc-lab 0000:") != 4 || !strings.Contains(out, "mlx5_ib: not loaded") {
		t.Errorf("no mlx5_ib: exit %d\n%s", code, out)
	}
	noRDMA := testhost.Captures(t)["linux-amd64-8581cf3a529e5d8b97ea876eade2f60d"].Root
	out, _, code = run(t, "doctor", "--root", noRDMA, "--nhc")
	if code != ExitFindings || !strings.HasPrefix(out, "ERROR: rdmalab: rdma.present") {
		t.Errorf("no RDMA, --nhc: exit %d\n%s", code, out)
	}
	// Without --nhc nothing says RDMA is meant to be there: no failure,
	// but no port to prove up either.
	out, _, code = run(t, "doctor", "--root", noRDMA)
	if code != ExitUnproven || !strings.Contains(out, "0 fail · 1 warn") || !strings.Contains(out, "no RDMA device") || !strings.Contains(out, "verdict: UNPROVEN") {
		t.Errorf("no RDMA: exit %d\n%s", code, out)
	}
}
