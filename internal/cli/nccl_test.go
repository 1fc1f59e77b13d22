package cli

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rdmalab/rdmalab/internal/envelope"
	"github.com/rdmalab/rdmalab/internal/nccl"
	"github.com/rdmalab/rdmalab/internal/testhost"
)

func TestNCCLEnvJSON(t *testing.T) {
	out, errOut, code := run(t, "nccl", "env", "--snapshot", "example:hgx-h200", "-o", "json")
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	p, err := envelope.Payload([]byte(out), envelope.NCCL)
	if err != nil {
		t.Fatal(err)
	}
	var env nccl.Env
	if err := json.Unmarshal(p, &env); err != nil {
		t.Fatal(err)
	}
	g := env.Nodes[0].Prediction.GPUs
	if len(g) != 8 || g[0].Rail != "mlx5_0" || g[0].Level != "PIX" || !g[0].GDR || g[0].GDRReason == "" {
		t.Errorf("%+v", g)
	}
}

func TestNCCLJudgeExitCodes(t *testing.T) {
	d := testhost.SharedTestdata(t)
	_, _, code := run(t, "nccl", "judge", filepath.Join(d, "nccl-debug/nccl-issue-398_aws-2node_P2P-IPC_NET-Socket_excerpt.log"))
	if code != ExitFindings {
		t.Errorf("NET/Socket log: exit %d", code)
	}
	out, _, code := run(t, "nccl", "judge", filepath.Join(d, "nccl-tests/rtx3090-inc/2node-2gpu-2nic_NO-INC_rdma-mtu1024.txt"), "--nic-rate", "100GbE", "--mtu", "1024")
	if code != ExitOK || !strings.Contains(out, "84% of the NIC ceiling") {
		t.Errorf("exit %d\n%s", code, out)
	}
	_, errOut, code := run(t, "nccl", "judge", "/nonexistent.log")
	if code != ExitUsage || !strings.Contains(errOut, "/nonexistent.log") {
		t.Errorf("exit %d: %s", code, errOut)
	}
	_, errOut, code = run(t, "nccl", "judge", filepath.Join(d, "PROVENANCE.md"))
	if code != ExitUsage || !strings.Contains(errOut, "neither nccl-tests output, an NCCL_DEBUG log nor an ncclras report") {
		t.Errorf("exit %d: %s", code, errOut)
	}
}
