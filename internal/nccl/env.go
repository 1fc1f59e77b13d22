package nccl

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/rdmalab/rdmalab/internal/check"
	"github.com/rdmalab/rdmalab/internal/gpudirect"
	"github.com/rdmalab/rdmalab/internal/host"
)

// Var is one environment variable with the reason it has that value.
type Var struct {
	Name   string `json:"name"`
	Value  string `json:"value"`
	Reason string `json:"reason"`
}

// NodeEnv is one node's environment and the prediction behind it.
type NodeEnv struct {
	Host       string                   `json:"host"`
	Vars       []Var                    `json:"vars"`
	Prediction gpudirect.HostPrediction `json:"prediction"`
}

// Env is the NCCL environment for a set of nodes.
type Env struct {
	Nodes []NodeEnv `json:"nodes"`
	// Common are the variables every node gets with the same value: what a
	// launcher can pass (mpirun -x, srun --export).
	Common []Var `json:"common"`
	// Differ names variables whose value differs between nodes; those need
	// a per-node wrapper, not one launcher flag.
	Differ []string `json:"differ,omitempty"`
}

// MakeEnv derives the NCCL environment for each host from its snapshot,
// with findings for what the prediction warns about.
func MakeEnv(snaps []*host.Snapshot) (Env, []check.Finding) {
	var env Env
	var fs []check.Finding
	for _, s := range snaps {
		gdrLevel, gdrWhy := gpudirect.GDRLevelFor(s)
		hp := gpudirect.PredictAt(s, gdrLevel)
		ne := NodeEnv{Host: s.Hostname, Prediction: hp}
		add := func(name, value, reason string) { ne.Vars = append(ne.Vars, Var{name, value, reason}) }
		// finding reports a finding of the rule e about this host; the
		// pointer is for setting its specific fixes at once.
		finding := func(e check.Entry, o check.Outcome, subject, msg string) *check.Finding {
			fs = append(fs, e.Reporter(s.Hostname).New(o, subject, "%s", msg))
			return &fs[len(fs)-1]
		}
		if hp.SocketIf != "" {
			add("NCCL_SOCKET_IFNAME", "="+hp.SocketIf, hp.SocketIfReason+"; '=' matches the name exactly")
		} else {
			finding(CheckEnvSocketIfName, check.Warn, "NCCL_SOCKET_IFNAME", hp.SocketIfReason).Fix =
				[]string{"export NCCL_SOCKET_IFNAME==<management interface>"}
		}
		switch {
		case len(hp.GPUs) == 0:
			finding(CheckEnvRails, check.Unknown, "GPUs", "no GPU in this host's snapshot: there is nothing for NCCL to place (is the NVIDIA driver bound?)")
		case len(hp.Rails) == 0:
			finding(CheckEnvRails, check.Fail, "NCCL_IB_HCA", "no active RDMA port on this host: NCCL would use NET/Socket between nodes")
		default:
			var hcas []string
			for _, p := range hp.GPUs {
				h := fmt.Sprintf("%s:%d", p.Rail, p.RailPort)
				if p.Rail != "" && !slices.Contains(hcas, h) {
					hcas = append(hcas, h)
				}
			}
			add("NCCL_IB_HCA", "="+strings.Join(hcas, ","), fmt.Sprintf("the rail nearest each GPU (%d GPU(s), %d rail(s)); '=' so mlx5_1 does not also match mlx5_10", len(hp.GPUs), len(hcas)))
			// The placement is proven, not silent: every GPU has its rail.
			finding(CheckEnvRails, check.Pass, "NCCL_IB_HCA", fmt.Sprintf("%d GPU(s) on %d rail(s): %s", len(hp.GPUs), len(hcas), strings.Join(hcas, ",")))
		}
		if hp.Layer == "Ethernet" {
			if hp.GIDIndex != nil {
				g := hp.GIDByRail[hp.Rails[0]]
				add("NCCL_IB_GID_INDEX", fmt.Sprint(*hp.GIDIndex), fmt.Sprintf("the RoCE v2 IPv4 GID on every rail (%s %s on %s): NCCL ≥ 2.21 picks it by itself, older NCCL takes index 0 unless told", g.Type, g.GID, hp.Rails[0]))
			} else {
				finding(CheckEnvGIDIndex, check.Warn, "NCCL_IB_GID_INDEX", "the rails' RoCE v2 GID index differs: leave NCCL_IB_GID_INDEX unset (NCCL ≥ 2.21 picks per device) or fix the GID tables")
			}
			for _, rail := range hp.Rails {
				if g := hp.GIDByRail[rail]; g.Warning != "" {
					finding(CheckEnvGID, check.Warn, rail, g.Warning)
				}
			}
			roceClass(s, hp.Rails, add, finding)
		}
		on := 0
		for _, p := range hp.GPUs {
			if p.GDR {
				on++
			} else if p.Rail != "" {
				finding(CheckEnvGDR, check.Warn, "GPU "+p.GPU.String(), fmt.Sprintf("GPUDirect RDMA predicted off with rail %s: %s", p.Rail, p.GDRReason))
			}
		}
		if len(hp.GPUs) > 0 {
			add("NCCL_NET_GDR_LEVEL", gdrLevel, fmt.Sprintf("%s; predicted on for %d of %d GPUs", gdrWhy, on, len(hp.GPUs)))
		}
		add("NCCL_DEBUG", "INFO", "first run of every cluster size: the log proves NET/IB and /GDRDMA (rdmalab judge reads it)")
		add("NCCL_DEBUG_SUBSYS", "INIT,NET", "the transport lines without the noise")
		env.Nodes = append(env.Nodes, ne)
	}
	env.Common, env.Differ = common(env.Nodes)
	if len(env.Differ) > 0 {
		fs = append(fs, CheckEnvDiffer.Reporter("").New(check.Warn, strings.Join(env.Differ, ", "),
			"these values differ between nodes: one mpirun -x or srun --export cannot carry them; use the per-node exports (a wrapper script sourcing them by hostname)"))
	}
	return env, fs
}

// roceClass exports NCCL_IB_TC and NCCL_IB_SL that land NCCL's RoCE
// traffic on the rails' lossless priority (NCCL's default TC 0 is DSCP
// 0, priority 0: lossy where only priority 3 has PFC). The export is
// needed even where traffic_class is forced: GPU-initiated (DevX/GDAKI)
// QPs ignore the kernel's traffic_class (NVIDIA/nccl#2383).
func roceClass(s *host.Snapshot, rails []string, add func(name, value, reason string), finding func(e check.Entry, o check.Outcome, subject, msg string) *check.Finding) {
	tc, prio, why := -1, -1, ""
	for _, rail := range rails {
		var q *host.RoCEQoS
		for i := range s.RoCE {
			if s.RoCE[i].Device == rail {
				q = &s.RoCE[i]
				break
			}
		}
		t, p, w, ok := -1, -1, "", false
		if q != nil {
			t, p, w, ok = q.LosslessClass()
		}
		switch {
		case !ok:
			finding(CheckEnvTC, check.Warn, "NCCL_IB_TC", fmt.Sprintf("no single lossless priority read on rail %s (trust and PFC: see doctor's roce.qos.path): NCCL_IB_TC left unset (NCCL's traffic class 0: DSCP 0, priority 0)", rail)).Fix =
				[]string{"rdmalab doctor   # roce.qos.path names the lossless priority", "export NCCL_IB_TC=106 NCCL_IB_SL=3   # seed 001's priority 3 (DSCP 26)"}
			return
		case tc >= 0 && (t != tc || p != prio):
			finding(CheckEnvTC, check.Warn, "NCCL_IB_TC", fmt.Sprintf("the rails' lossless class differs (%s: traffic class %d priority %d; %s: %d priority %d): fix the QoS so one class fits every rail", rails[0], tc, prio, rail, t, p))
			return
		}
		if why == "" {
			tc, prio, why = t, p, w
		}
	}
	if tc < 0 {
		return
	}
	add("NCCL_IB_TC", fmt.Sprint(tc), why+"; exported even where traffic_class is forced, since GPU-initiated (DevX/GDAKI) QPs ignore it (NVIDIA/nccl#2383)")
	add("NCCL_IB_SL", fmt.Sprint(prio), fmt.Sprintf("priority %d, for VLAN-tagged RoCE (the SL becomes the 802.1p PCP)", prio))
}

func common(nodes []NodeEnv) ([]Var, []string) {
	if len(nodes) == 0 {
		return nil, nil
	}
	var same []Var
	var differ []string
	for _, v := range nodes[0].Vars {
		agree := true
		for _, n := range nodes[1:] {
			i := slices.IndexFunc(n.Vars, func(w Var) bool { return w.Name == v.Name })
			if i < 0 || n.Vars[i].Value != v.Value {
				agree = false
			}
		}
		if agree {
			same = append(same, v)
		} else {
			differ = append(differ, v.Name)
		}
	}
	for _, n := range nodes[1:] {
		for _, v := range n.Vars {
			if !slices.ContainsFunc(nodes[0].Vars, func(w Var) bool { return w.Name == v.Name }) && !slices.Contains(differ, v.Name) {
				differ = append(differ, v.Name)
			}
		}
	}
	return same, differ
}

// MPIArgs is the mpirun form: -x NAME=VALUE for every common variable.
func MPIArgs(vars []Var) []string {
	var out []string
	for _, v := range vars {
		out = append(out, "-x", v.Name+"="+v.Value)
	}
	return out
}

// SrunExport is the srun --export value. srun splits --export on commas,
// so values with commas cannot go there: they are returned apart, to be
// exported in the shell and forwarded by ALL.
func SrunExport(vars []Var) (export string, viaShell []Var) {
	parts := []string{"ALL"}
	for _, v := range vars {
		if strings.Contains(v.Value, ",") {
			viaShell = append(viaShell, v)
			continue
		}
		parts = append(parts, v.Name+"="+v.Value)
	}
	return strings.Join(parts, ","), viaShell
}

func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("=,:._-/", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// WriteEnv renders the environment as a file a shell sources and that
// runs nothing: comments (the per-GPU prediction, each value's reason,
// wrapped to width when it is not 0) and exports, shell-quoted. With one
// node, plain exports; with several, the values every node shares, then
// the rest per node in a case on the short hostname. The launcher forms
// are WriteLaunchLines'.
func WriteEnv(w io.Writer, env Env, width int) error {
	var b strings.Builder
	// comment writes "LEAD# INDENTtext", wrapped.
	comment := func(lead, indent, s string) {
		for _, l := range wrapWords(s, width-utf8.RuneCountInString(lead+"# "+indent)) {
			b.WriteString(strings.TrimRight(lead+"# "+indent+l, " ") + "\n")
		}
	}
	export := func(lead string, v Var) {
		if v.Reason != "" {
			comment(lead, "", v.Reason)
		}
		fmt.Fprintf(&b, "%sexport %s=%s\n", lead, v.Name, shellQuote(v.Value))
	}
	comment("", "", "NCCL environment written by rdmalab nccl env: source it (. FILE) in the job's shell on each node; it runs nothing.")
	for _, n := range env.Nodes {
		b.WriteString("#\n")
		comment("", "", "--- "+n.Host+" ---")
		for _, p := range n.Prediction.GPUs {
			gdr := "GDR off"
			if p.GDR {
				gdr = "GDR on"
			}
			comment("", "  ", fmt.Sprintf("GPU %s → %s (%s, %s: %s)", p.GPU, cmpOr(p.Rail, "no rail"), cmpOr(p.Level, "-"), gdr, p.GDRReason))
		}
	}
	if len(env.Nodes) == 1 {
		for _, v := range env.Nodes[0].Vars {
			export("", v)
		}
	} else if len(env.Nodes) > 1 {
		for _, v := range env.Common {
			export("", v)
		}
		if len(env.Differ) > 0 {
			comment("", "", "differ between nodes, set per node: "+strings.Join(env.Differ, ", "))
			b.WriteString("case \"$(hostname -s)\" in\n")
			for _, n := range env.Nodes {
				fmt.Fprintf(&b, "%s)\n", shellQuote(strings.SplitN(n.Host, ".", 2)[0]))
				for _, v := range n.Vars {
					if slices.Contains(env.Differ, v.Name) {
						export("  ", v)
					}
				}
				b.WriteString("  ;;\n")
			}
			b.WriteString("esac\n")
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteLaunchLines renders the values every node shares as launcher
// arguments: mpirun -x, and srun --export with the values srun would split
// on their commas exported through the shell first.
func WriteLaunchLines(w io.Writer, env Env) error {
	if len(env.Common) == 0 {
		return nil
	}
	var b strings.Builder
	args := MPIArgs(env.Common)
	for i := range args {
		args[i] = shellQuote(args[i])
	}
	fmt.Fprintf(&b, "# Open MPI (values every node shares):\nmpirun %s ...\n", strings.Join(args, " "))
	exp, shell := SrunExport(env.Common)
	b.WriteString("# Slurm (srun splits --export on commas: those values go through the shell):\n")
	for _, v := range shell {
		fmt.Fprintf(&b, "export %s=%s\n", v.Name, shellQuote(v.Value))
	}
	fmt.Fprintf(&b, "srun --export=%s ...\n", shellQuote(exp))
	_, err := io.WriteString(w, b.String())
	return err
}

// wrapWords splits s into lines of at most width runes between words (no
// limit when width < 20); a word longer than width stays whole.
func wrapWords(s string, width int) []string {
	if width < 20 {
		return []string{s}
	}
	var lines []string
	line := ""
	for _, word := range strings.Fields(s) {
		switch {
		case line == "":
			line = word
		case utf8.RuneCountInString(line)+1+utf8.RuneCountInString(word) <= width:
			line += " " + word
		default:
			lines = append(lines, line)
			line = "  " + word
		}
	}
	return append(lines, line)
}

// Expectations are what the judge takes from the prediction: per host,
// whether GPUDirect RDMA should show in its log (every GPU predicted on),
// and the fewest rails any node has (the busbw expectation).
func (e Env) Expectations() (gdr map[string]bool, rails int) {
	gdr = map[string]bool{}
	for i, n := range e.Nodes {
		on := len(n.Prediction.GPUs) > 0
		for _, p := range n.Prediction.GPUs {
			on = on && p.GDR
		}
		gdr[n.Host] = on
		if i == 0 || len(n.Prediction.Rails) < rails {
			rails = len(n.Prediction.Rails)
		}
	}
	return gdr, rails
}
