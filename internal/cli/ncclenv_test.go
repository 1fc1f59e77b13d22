package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rdmalab/rdmalab/internal/testhost"
)

// source <(rdmalab nccl env --snapshot …) sets the variables and runs
// nothing: an mpirun or srun on the PATH that would record being run is
// never run, on one host and on a fleet whose values differ (the case on
// the hostname).
func TestNCCLEnvIsSourceable(t *testing.T) {
	bin := testhost.Rdmalab(t)
	dir := t.TempDir()
	ran := filepath.Join(dir, "ran")
	for _, tool := range []string{"mpirun", "srun"} {
		os.WriteFile(filepath.Join(dir, tool), []byte("#!/bin/sh\necho \"$0\" >> "+ran+"\n"), 0o755)
	}
	for _, c := range []struct {
		args     string
		hostname string
		want     string
	}{
		{"--snapshot example:hgx-h200", "", "NCCL_IB_HCA==mlx5_0:1,mlx5_1:1,mlx5_2:1,mlx5_3:1,mlx5_4:1,mlx5_5:1,mlx5_6:1,mlx5_7:1"},
		{"--snapshot example:hgx-h200 --snapshot example:seed000-epyc", "epyc-lab", "NCCL_IB_HCA==mlx5_0:1,mlx5_2:1"},
	} {
		// hostname -s answers as the node the file is sourced on.
		os.WriteFile(filepath.Join(dir, "hostname"), []byte("#!/bin/sh\necho "+c.hostname+"\n"), 0o755)
		script := `source <("$RDMALAB" nccl env ` + c.args + ` 2>/dev/null); echo "NCCL_IB_HCA=$NCCL_IB_HCA"`
		cmd := exec.Command("bash", "-c", script)
		cmd.Env = append(os.Environ(), "RDMALAB="+bin, "PATH="+dir+":"+os.Getenv("PATH"))
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), c.want) {
			t.Errorf("%s: %v\n%s\nwant %s", c.args, err, out, c.want)
		}
		if b, err := os.ReadFile(ran); err == nil {
			t.Errorf("%s: sourcing ran %s", c.args, b)
		}
	}
	// The launcher lines are there when asked for.
	out, _, code := run(t, "nccl", "env", "--snapshot", "example:hgx-h200", "--launch-lines")
	if code != ExitOK || !strings.Contains(out, "mpirun -x NCCL_SOCKET_IFNAME==eno8303") || !strings.Contains(out, "srun --export=") {
		t.Errorf("--launch-lines: exit %d\n%s", code, out)
	}
}
