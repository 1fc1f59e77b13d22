package nccl

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rdmalab/rdmalab/internal/check"
	"github.com/rdmalab/rdmalab/internal/testhost"
)

// A real two-host log with one host's lines behind each launcher's prefix
// judges exactly as the bare log: no host is hidden by Ray/vLLM, Open MPI
// --tag-output, srun --label or a timestamp.
func TestLauncherPrefixesHideNoHost(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(testhost.SharedTestdata(t), "nccl-debug/nccl-issue-1866_H100-2vm_nccl-2.27.6_init_excerpt.log"))
	if err != nil {
		t.Fatal(err)
	}
	summary := func(fs []check.Finding) []string {
		var out []string
		for _, f := range fs {
			out = append(out, fmt.Sprintf("%s/%s/%s/%s", f.Check, f.Outcome, f.Host, f.Subject))
		}
		slices.Sort(out)
		return out
	}
	bare := ParseDebug(b)
	want := summary(JudgeDebug(bare, JudgeOptions{Hosts: []string{"cl4-gpu03-vm", "cl4-gpu04-vm"}}))
	if len(bare.Hosts) != 2 {
		t.Fatalf("bare log: %d hosts", len(bare.Hosts))
	}
	for name, prefix := range map[string]string{
		"ray":       "(RayWorkerWrapper pid=627, ip=10.99.0.3) ",
		"openmpi":   "[1,1]<stdout>:",
		"srun":      "1: ",
		"timestamp": "2025-08-14T09:12:01.123456Z ",
		"bracketed": "[2025-08-14 09:12:01] ",
	} {
		t.Run(name, func(t *testing.T) {
			var lines []string
			for _, l := range strings.Split(string(b), "\n") {
				if strings.HasPrefix(l, "cl4-gpu04-vm:") {
					l = prefix + l
				}
				lines = append(lines, l)
			}
			d := ParseDebug([]byte(strings.Join(lines, "\n")))
			if d.Lines != bare.Lines || len(d.Hosts) != 2 {
				t.Fatalf("%d lines, %d hosts; bare %d, 2", d.Lines, len(d.Hosts), bare.Lines)
			}
			if got := summary(JudgeDebug(d, JudgeOptions{Hosts: []string{"cl4-gpu03-vm", "cl4-gpu04-vm"}})); !slices.Equal(got, want) {
				t.Errorf("got %q\nwant %q", got, want)
			}
		})
	}
}

// NCCL_NET_GDR_LEVEL is read from the log or the command line and judged:
// SYS flagged, PHB (seed 001's setting) passes.
func TestGDRLevelFlagged(t *testing.T) {
	for _, c := range []struct {
		log     string
		outcome check.Outcome
		host    string
	}{
		{"NCCL_NET_GDR_LEVEL=SYS mpirun -np 2 ./all_reduce_perf\nn1:1:1 [0] NCCL INFO NCCL version 2.21.5\n", check.Warn, ""},
		{"n1:1:1 [0] NCCL INFO NCCL_NET_GDR_LEVEL set by environment to SYS\n", check.Warn, "n1"},
		{"export NCCL_NET_GDR_LEVEL=PHB\nn1:1:1 [0] NCCL INFO NCCL version 2.21.5\n", check.Pass, ""},
	} {
		var got []check.Finding
		for _, f := range JudgeDebug(ParseDebug([]byte(c.log)), JudgeOptions{}) {
			if f.Check == "nccl.log.gdr-level" {
				got = append(got, f)
			}
		}
		if len(got) != 1 || got[0].Outcome != c.outcome || got[0].Host != c.host || got[0].Subject != "NCCL_NET_GDR_LEVEL" {
			t.Errorf("%q: %+v", c.log, got)
		}
	}
}
