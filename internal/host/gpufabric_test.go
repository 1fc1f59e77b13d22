package host_test

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/rdmalab/rdmalab/internal/host"
	"github.com/rdmalab/rdmalab/internal/testhost"
)

const gb200Fabric = "grace-blackwell/dra-driver-issue-626_gb200_nvidia-smi-q-grep-C3-Fabric_Completed-Success-clique2_health-Unhealthy_first-gpu-only.txt"

// The real capture: `nvidia-smi -q | grep -C3` of one GB200 GPU, its
// grep command as a prompt line and grep's `--` after it.
func TestParseGPUFabricReal(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(testhost.SharedTestdata(t), gb200Fabric))
	if err != nil {
		t.Fatal(err)
	}
	if !host.SniffGPUFabric(b) {
		t.Fatal("not sniffed")
	}
	got, err := host.ParseGPUFabric(b, "x.txt")
	if err != nil {
		t.Fatal(err)
	}
	want := host.GPUFabrics{{GPU: "fabric block 1", State: "Completed", Status: "Success", CliqueID: "2",
		ClusterUUID: "dc6e40c4-d722-4357-9ba6-5291dd461278", Health: map[string]string{"Summary": "Unhealthy", "Bandwidth": "Full"}, Source: "x.txt line 2"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got  %+v\nwant %+v", got, want)
	}
}

// A whole `nvidia-smi -q` of two GPUs (the layout of its other sections
// kept short): each block named by its GPU heading, the health rows of a
// newer driver read, the sections after the block not.
func TestParseGPUFabricWhole(t *testing.T) {
	in := `==============NVSMI LOG==============

Timestamp                                 : Thu Nov 26 10:00:00 2026
Driver Version                            : 580.65.06

Attached GPUs                             : 2
GPU 00000008:01:00.0
    Product Name                          : NVIDIA GB200
    Fabric
        State                             : Completed
        Status                            : Success
        CliqueId                          : 32766
        ClusterUUID                       : 5bb6e1e0-3c56-4c1c-9a2c-6a0e0a3e0b11
        Health
            Bandwidth                     : Full
            Route Recovery in progress    : False
            Route Unhealthy               : False
            Access Timeout Recovery       : False
    Compute Mode                          : Default

GPU 00000009:01:00.0
    Product Name                          : NVIDIA GB200
    Fabric
        State                             : In Progress
        Status                            : N/A
        CliqueId                          : N/A
        ClusterUUID                       : N/A
`
	got, err := host.ParseGPUFabric([]byte(in), "q.txt")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].GPU != "00000008:01:00.0" || got[0].CliqueID != "32766" || got[0].Health["Route Unhealthy"] != "False" || len(got[0].Health) != 4 ||
		got[1].GPU != "00000009:01:00.0" || got[1].State != "In Progress" || got[1].Health != nil || got[1].Source != "q.txt line 23" {
		t.Errorf("%+v", got)
	}
	for _, b := range []string{"GPU0\tX\tNV18\n", "Fabric\n", "    Fabric\n        Bandwidth : Full\n"} {
		if host.SniffGPUFabric([]byte(b)) {
			t.Errorf("sniffed %q", b)
		}
	}
	if _, err := host.ParseGPUFabric([]byte("Fabric\n    CliqueId : 2\n    Status : Success\n"), "cut.txt"); err == nil {
		t.Error("a block with no State read")
	}
}

// Whatever the input, each block read is a `Fabric` line of it with a
// State, and every value read is text of the input.
func FuzzParseGPUFabric(f *testing.F) {
	if b, err := os.ReadFile(filepath.Join("../../../shared/testdata", gb200Fabric)); err == nil {
		f.Add(b)
	}
	f.Add([]byte("GPU 00000008:01:00.0\n    Fabric\n        State : Completed\n        Health\n            Summary : Healthy\n        CliqueId : 7\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		fs, err := host.ParseGPUFabric(b, "f")
		if err != nil {
			return
		}
		lines := strings.Split(string(b), "\n")
		for _, g := range fs {
			var n int
			if _, err := fmt.Sscanf(g.Source, "f line %d", &n); err != nil || n < 1 || n > len(lines) || strings.TrimSpace(lines[n-1]) != "Fabric" {
				t.Fatalf("block at %q is no Fabric line of %q", g.Source, b)
			}
			for _, v := range append([]string{g.State, g.Status, g.CliqueID, g.ClusterUUID}, slices.Collect(maps.Values(g.Health))...) {
				if !strings.Contains(string(b), v) {
					t.Fatalf("%q read from %q", v, b)
				}
			}
			if g.State == "" {
				t.Fatalf("a block with no State from %q", b)
			}
		}
	})
}
