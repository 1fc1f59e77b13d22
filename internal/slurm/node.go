// Package slurm is rdmalab's side of Slurm that runs nothing: a node's
// state as scontrol prints it, the health-check policy that drains only
// for its own findings and resumes only what it drained, a health run's
// result, and the node-list syntax of SLURM_JOB_NODELIST. What runs
// scontrol and srun is internal/slurmrun.
package slurm

import (
	"fmt"
	"strings"
)

// ReasonPrefix marks a drain as rdmalab's. A node drained with any other
// reason belongs to an admin or another tool and is never resumed.
const ReasonPrefix = "rdmalab:"

// Node is what scontrol says about one node.
type Node struct {
	Name   string
	Addr   string // NodeAddr: where the node is reached
	State  string // "IDLE", "IDLE+DRAIN", "MIXED+DRAIN", "DOWN*+DRAIN" ...
	Reason string // empty when none
}

// Drained reports a node that is draining or drained.
func (n Node) Drained() bool {
	return strings.Contains(n.State, "DRAIN")
}

// OursToResume reports a drain rdmalab made.
func (n Node) OursToResume() bool {
	return n.Drained() && strings.HasPrefix(n.Reason, ReasonPrefix)
}

// ParseNode reads `scontrol --oneliner show node` output: space-separated
// Key=Value words, where Reason's value runs to the end of the line (it
// may hold spaces) and ends with "[user@time]".
func ParseNode(out string) (Node, error) {
	line := strings.TrimSpace(out)
	if i := strings.IndexByte(line, '\n'); i >= 0 {
		line = line[:i]
	}
	var n Node
	if i := strings.Index(line, " Reason="); i >= 0 {
		n.Reason = strings.TrimSpace(line[i+len(" Reason="):])
		line = line[:i]
		if j := strings.LastIndex(n.Reason, " ["); j >= 0 && strings.HasSuffix(n.Reason, "]") {
			n.Reason = n.Reason[:j]
		}
		if n.Reason == "(null)" {
			n.Reason = ""
		}
	}
	for _, w := range strings.Fields(line) {
		k, v, _ := strings.Cut(w, "=")
		switch k {
		case "NodeName":
			n.Name = v
		case "State":
			n.State = v
		case "NodeAddr":
			n.Addr = v
		}
	}
	if n.Name == "" || n.State == "" {
		return Node{}, fmt.Errorf("scontrol show node: no NodeName/State in %q", strings.TrimSpace(out))
	}
	return n, nil
}
