package nccl

import (
	"slices"
	"strings"
	"testing"

	"github.com/rdmalab/rdmalab/internal/check"
	"github.com/rdmalab/rdmalab/internal/host"
)

// NCCL_IB_TC and NCCL_IB_SL land NCCL's RoCE traffic on the rails'
// lossless priority, explained; without the QoS read, a warning instead of
// NCCL's default 0; a forced traffic_class on another priority is not
// copied, the priority's AFx1 DSCP is.
func TestEnvRoCEClass(t *testing.T) {
	s := load(t, "seed000-epyc")
	env, _ := MakeEnv([]*host.Snapshot{s})
	vars := env.Nodes[0].Vars
	if varOf(vars, "NCCL_IB_TC") != "106" || varOf(vars, "NCCL_IB_SL") != "3" {
		t.Fatalf("%+v", vars)
	}
	i := slices.IndexFunc(vars, func(v Var) bool { return v.Name == "NCCL_IB_TC" })
	if r := vars[i].Reason; !strings.Contains(r, "traffic_class 106 (DSCP 26 → priority 3, PFC on: /sys/class/net/enp65s0f0np0/qos/pfc") || !strings.Contains(r, "NVIDIA/nccl#2383") {
		t.Errorf("reason %q", r)
	}

	moved := load(t, "seed000-epyc")
	for i := range moved.RoCE {
		moved.RoCE[i].TrafficClass = host.Got(0, "test")
		moved.RoCE[i].PFC = host.Got([]int{4}, "test")
	}
	env, _ = MakeEnv([]*host.Snapshot{moved})
	if got := varOf(env.Nodes[0].Vars, "NCCL_IB_TC"); got != "138" { // DSCP 34 (AF41) → 4
		t.Errorf("PFC on 4: NCCL_IB_TC %q", got)
	}

	inbox := load(t, "seed000-epyc")
	inbox.RoCE = nil
	env, fs := MakeEnv([]*host.Snapshot{inbox})
	if varOf(env.Nodes[0].Vars, "NCCL_IB_TC") != "" || !slices.ContainsFunc(fs, func(f check.Finding) bool {
		return f.Check == "nccl.env.tc" && f.Outcome == check.Warn && strings.Contains(f.Message, "no single lossless priority read on rail mlx5_0")
	}) {
		t.Errorf("inbox: %+v\n%s", env.Nodes[0].Vars, dump(fs))
	}
}
