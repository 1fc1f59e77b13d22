package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rdmalab/rdmalab/internal/testhost"
)

// The exit contract of nccl judge on real outputs: proven healthy 0, a
// fault 1, bad input or flag 2, a question the input cannot answer 3.
func TestNCCLJudgeVerdictContract(t *testing.T) {
	d := testhost.SharedTestdata(t)
	healthy := filepath.Join(d, "nccl-tests/rtx3090-inc/2node-2gpu-2nic_NO-INC_rdma-mtu1024.txt")
	out, errOut, code := run(t, "nccl", "judge", healthy, "--expect-rate", "100GbE", "--mtu", "1024")
	if code != ExitOK || !strings.Contains(out, "verdict: HEALTHY") {
		t.Errorf("healthy 2-node run: exit %d\n%s%s", code, out, errOut)
	}

	// faults: NET/Socket between nodes; a fatal WARN; NCCL_IB_DISABLE=1 on
	// the launch line of the healthy run
	_, _, code = run(t, "nccl", "judge", filepath.Join(d, "nccl-debug/nccl-issue-398_aws-2node_P2P-IPC_NET-Socket_excerpt.log"))
	if code != ExitFindings {
		t.Errorf("NET/Socket log: exit %d", code)
	}
	b, err := os.ReadFile(healthy)
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	tcp := filepath.Join(tmp, "tcp.txt")
	os.WriteFile(tcp, []byte(strings.Replace(string(b), "--hostfile", "-x NCCL_IB_DISABLE=1 --hostfile", 1)), 0o600)
	out, _, code = run(t, "nccl", "judge", tcp, "--expect-rate", "100GbE", "--mtu", "1024")
	if code != ExitFindings || !strings.Contains(out, "a TCP run judged as RDMA") {
		t.Errorf("NCCL_IB_DISABLE=1: exit %d\n%s", code, out)
	}
	fatal := filepath.Join(tmp, "fatal.log")
	nv, _ := os.ReadFile(filepath.Join(d, "nccl-debug/nv_peer_memory-issue-56_2node_NET-IB-mlx5_0-IB_nccl-2.5.6_excerpt.log"))
	os.WriteFile(fatal, append(nv, "master_node:24570:24910 [0] transport/net_ib.cc:1295 NCCL WARN NET/IB : Got completion from peer 192.168.11.2<58012> with error 12, opcode 0, len 0, vendor err 129\n"...), 0o600)
	out, _, code = run(t, "nccl", "judge", fatal)
	if code != ExitFindings || !strings.Contains(out, "IBV_WC_RETRY_EXC_ERR") {
		t.Errorf("error 12: exit %d\n%s", code, out)
	}

	// bad input and bad flags
	for _, args := range [][]string{
		{"nccl", "judge", "/nonexistent.log"},
		{"nccl", "judge", filepath.Join(d, "PROVENANCE.md")},
		{"nccl", "judge", healthy, "--ranks-per-node", "8"},
		{"nccl", "judge", healthy, "--nodes", "0"},
	} {
		_, errOut, code := run(t, args...)
		if code != ExitUsage || errOut == "" || strings.Contains(errOut, "goroutine") {
			t.Errorf("%v: exit %d: %s", args, code, errOut)
		}
	}

	// unproven: the table names no hosts and --nodes is not given; with
	// --nodes the same table is judged
	paste := filepath.Join(tmp, "paste.txt")
	s := string(b)
	s = s[strings.Index(s, "#       size"):]
	os.WriteFile(paste, []byte(s), 0o600)
	out, _, code = run(t, "nccl", "judge", paste, "--expect-rate", "100GbE", "--mtu", "1024")
	if code != ExitUnproven || !strings.Contains(out, "verdict: UNPROVEN") || !strings.Contains(out, "--nodes N") {
		t.Errorf("no hosts, no --nodes: exit %d\n%s", code, out)
	}
	out, _, code = run(t, "nccl", "judge", paste, "--expect-rate", "100GbE", "--mtu", "1024", "--nodes", "2")
	if code != ExitOK {
		t.Errorf("--nodes 2: exit %d\n%s", code, out)
	}
	// unproven: no NIC rate
	out, _, code = run(t, "nccl", "judge", healthy)
	if code != ExitUnproven || !strings.Contains(out, "--expect-rate") {
		t.Errorf("no --expect-rate: exit %d\n%s", code, out)
	}
}
