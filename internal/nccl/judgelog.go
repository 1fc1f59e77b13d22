package nccl

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/rdmalab/rdmalab/internal/check"
)

// informative reports whether the log says anything about transports,
// plugins or failures (a lone "Launch mode Parallel" line does not).
func (d *DebugLog) informative() bool {
	for _, k := range []string{"NCCL_IB_DISABLE", "NCCL_NET", "NCCL_NET_GDR_LEVEL"} {
		if _, ok := d.LaunchEnv[k]; ok {
			return true
		}
	}
	for _, h := range d.Hosts {
		if h.said() {
			return true
		}
	}
	return false
}

func (h *HostLog) said() bool {
	return len(h.NetIB) > 0 || len(h.Networks) > 0 || len(h.Plugins) > 0 || len(h.Channels) > 0 || len(h.GDR) > 0 ||
		len(h.Warns) > 0 || h.InitComplete || h.Bootstrap != "" || len(h.Failures) > 0 || len(h.NCCLVersions) > 0 || len(h.Env) > 0 || len(h.GIN) > 0
}

// JudgeDebug judges an NCCL_DEBUG log per host: which network NCCL chose,
// plugins, GPUDirect RDMA per HCA and per channel, NET/Socket between
// nodes, WARN lines, NCCL versions, and hosts that did not log at all.
func JudgeDebug(d *DebugLog, opt JudgeOptions) []check.Finding {
	var fs []check.Finding
	// add reports a finding of the rule e; the pointer is for setting its
	// specific fixes at once, before the next add.
	add := func(e check.Entry, o check.Outcome, host, subject, msg string, ev ...check.Evidence) *check.Finding {
		f := e.Reporter(host).New(o, subject, "%s", msg)
		f.Evidence = ev
		fs = append(fs, f)
		return &fs[len(fs)-1]
	}
	if v, ok := d.LaunchEnv["NCCL_NET_GDR_LEVEL"]; ok && !slices.ContainsFunc(d.Hosts, func(h *HostLog) bool { _, set := h.Env["NCCL_NET_GDR_LEVEL"]; return set }) {
		gdrLevelFinding(add, "", v, "the command line in the log")
	}
	if !opt.AllowSocket {
		if name, v, why := tcpByEnv(d.LaunchEnv); name != "" {
			f := add(CheckLogSocket, check.Fail, "", name, fmt.Sprintf("%s=%s on the launch line: %s — a TCP run judged as RDMA", name, v, why),
				check.Evidence{What: "launch line", Value: d.LaunchLines[name], Source: "the command line in the log"})
			f.Fix = []string{"remove " + name + "=" + v + " from the launch (mpirun -x, srun --export, export) and rerun", "or judge with --allow-socket if TCP between nodes is what was meant"}
		}
	}
	versions := map[string][]string{}
	for _, h := range d.Hosts {
		if !h.said() {
			continue
		}
		ev := func(what, value string) check.Evidence {
			return check.Evidence{What: what, Value: value, Source: "NCCL_DEBUG log of " + h.Host}
		}
		for _, v := range h.NCCLVersions {
			versions[v] = append(versions[v], h.Host)
		}
		for _, f := range h.Failures {
			add(CheckLogFailure, check.Fail, h.Host, "nccl-tests", "the test stopped: "+f, ev("line", f))
		}

		// plugins: a failure outweighs "absent" on the same host
		var failed, missing []string
		for _, p := range h.Plugins {
			if r, ok := strings.CutPrefix(p, "failed: "); ok {
				if strings.Contains(r, "not found") {
					missing = append(missing, r)
				} else {
					failed = append(failed, r)
				}
			}
		}
		switch {
		case len(missing) > 0:
			f := add(CheckLogPlugin, check.Fail, h.Host, "net plugin", "NCCL was told to use a network whose plugin is not there: "+missing[0], ev("WARN", strings.Join(missing, "; ")))
			f.Fix = []string{"install the plugin (libnccl-net-*.so) on every node and put it on LD_LIBRARY_PATH, or unset NCCL_NET"}
		case len(failed) > 0:
			fallback := "NCCL fell back to " + cmpOr(strings.Join(h.Networks, ", "), "another network (none named)")
			f := add(CheckLogPlugin, check.Warn, h.Host, "net plugin", "a net plugin loaded but failed to initialise; "+fallback, ev("lines", strings.Join(failed, "; ")))
			f.Fix = []string{"remove the failing plugin from LD_LIBRARY_PATH or fix it, so every node takes the same path"}
		case slices.Contains(h.Plugins, "absent"):
			add(CheckLogPlugin, check.Pass, h.Host, "net plugin", "no external net plugin: NCCL uses its internal IB and Socket transports")
		}

		// network chosen
		ib := len(h.NetIB) > 0 || slices.Contains(h.Networks, "IB") || slices.ContainsFunc(h.Networks, func(s string) bool { return strings.HasPrefix(s, "IB") })
		var socketCh, netCh, gdrCh, ibCh []Channel
		for _, c := range h.Channels {
			if strings.HasPrefix(c.Transport, "NET/IB") {
				ibCh = append(ibCh, c)
			}
			if c.Socket() {
				socketCh = append(socketCh, c)
			}
			if c.Net() {
				netCh = append(netCh, c)
				if c.GDR() {
					gdrCh = append(gdrCh, c)
				}
			}
		}
		envName, envVal, envWhy := tcpByEnv(h.Env)
		switch {
		case envName != "" && !opt.AllowSocket:
			f := add(CheckLogSocket, check.Fail, h.Host, envName, fmt.Sprintf("%s set by environment to %s on %s: %s — a TCP run judged as RDMA", envName, envVal, h.Host, envWhy),
				ev(envName, envVal))
			f.Fix = []string{"unset " + envName + " on every rank and rerun", "or judge with --allow-socket if TCP between nodes is what was meant"}
		case len(socketCh) > 0 && !opt.AllowSocket:
			f := add(CheckLogSocket, check.Fail, h.Host, "inter-node channels", fmt.Sprintf("%d inter-node channel(s) of %s use NET/Socket: the RDMA path is not being used", len(socketCh), h.Host),
				ev("channel", socketCh[0].Line))
			f.Fix = []string{"check that NCCL sees the HCAs (NCCL_IB_HCA, /dev/infiniband, ibv_devinfo) and that NCCL_IB_DISABLE is not set", "rdmalab nccl env --snapshot <host>.json"}
		case slices.Contains(h.Networks, "Socket") && !ib && !opt.AllowSocket:
			add(CheckLogSocket, check.Fail, h.Host, "network", "NCCL chose NET/Socket: inter-node traffic will not use RDMA", ev("network", "Socket"))
		case ib:
			devs := make([]string, len(h.NetIB))
			layers := map[string][]string{}
			for i, nd := range h.NetIB {
				devs[i] = fmt.Sprintf("%s:%d/%s", nd.Name, nd.Port, nd.Layer)
				layers[nd.Layer] = append(layers[nd.Layer], nd.Name)
			}
			msg := "NCCL uses network " + strings.Join(h.Networks, ", ")
			if len(devs) > 0 {
				msg = "NCCL uses NET/IB over " + strings.Join(devs, " ")
			}
			if h.OOB != "" {
				msg += "; OOB " + h.OOB
			}
			add(CheckLogNetwork, check.Pass, h.Host, "network", msg, ev("NET/IB", strings.Join(devs, " ")))
			if len(layers) > 1 {
				ls := slices.Sorted(maps.Keys(layers))
				f := add(CheckLogMixedLayers, check.Warn, h.Host, "NET/IB devices", fmt.Sprintf("NET/IB mixes link layers (%s): rings that pair an IB rail with a RoCE NIC cannot connect or run at the slower NIC's rate", describeLayers(ls, layers)))
				f.Fix = []string{"list only the fabric's HCAs: export NCCL_IB_HCA=" + strings.Join(layers[majority(layers)], ",")}
			}
		case len(h.Networks) > 0:
			add(CheckLogNetwork, check.Pass, h.Host, "network", "NCCL uses network "+strings.Join(h.Networks, ", "))
		case len(ibCh) > 0:
			// NCCL before 2.4 printed no "Using network" line: its
			// "Ring 00 : … via NET/IB/0" lines say it
			add(CheckLogNetwork, check.Pass, h.Host, "network", fmt.Sprintf("NCCL's channels cross the network via NET/IB (%d channel line(s), e.g. %q)", len(ibCh), ibCh[0].Line),
				ev("channel", ibCh[0].Line))
		default:
			add(CheckLogNetwork, check.Unknown, h.Host, "network", "the log does not say which network NCCL chose (no \"NET/IB : Using\", \"Using network\" or channel line): set NCCL_DEBUG=INFO and NCCL_DEBUG_SUBSYS=INIT,NET")
		}

		// GPUDirect RDMA
		expect, haveExpect := opt.GDRExpected[h.Host]
		var off []string
		for _, hca := range slices.Sorted(maps.Keys(h.GDR)) {
			if !h.GDR[hca] {
				off = append(off, hca)
			}
		}
		noGDR := 0
		for _, c := range netCh {
			if !c.GDR() && !c.Socket() {
				noGDR++
			}
		}
		switch {
		case len(off) > 0 || noGDR > 0:
			o, why := check.Warn, "GPUDirect RDMA is off"
			switch {
			case haveExpect && expect:
				o, why = check.Fail, "GPUDirect RDMA is off where the prediction said it would be on"
			case len(off) > 0 && !haveExpect:
				// "Disabled for HCA" is NCCL finding no peer-memory support
				// at all (no nvidia-peermem, no DMA-BUF), not its choice by
				// path distance (that shows as channels without /GDRDMA)
				o, why = check.Fail, "NCCL found no GPUDirect RDMA support for "+strings.Join(off, ", ")+" (no nvidia-peermem or DMA-BUF registered), so GPUDirect RDMA is off (a GPU job over RDMA NICs is meant to use it; only GPUs that cannot, such as GeForce, expect this)"
			}
			var evs []check.Evidence
			if len(off) > 0 {
				evs = append(evs, ev("GPU Direct RDMA Disabled for HCA", strings.Join(off, ", ")))
			}
			if noGDR > 0 {
				evs = append(evs, ev("NET/IB channels without /GDRDMA", fmt.Sprint(noGDR)))
			}
			f := add(CheckLogGDR, o, h.Host, "GPUDirect RDMA", why+": network traffic stages through host memory (often 5–10× slower)", evs...)
			f.Fix = []string{"modprobe nvidia-peermem (or use the open kernel module's DMA-BUF)", "put GPU and NIC under one PCIe switch or raise NCCL_NET_GDR_LEVEL", "rdmalab nccl env --snapshot <host>.json shows the path level per GPU"}
		case len(gdrCh) > 0 || len(h.GDR) > 0:
			add(CheckLogGDR, check.Pass, h.Host, "GPUDirect RDMA", fmt.Sprintf("GPUDirect RDMA enabled (%d channel(s) via /GDRDMA, %d HCA(s) enabled)", len(gdrCh), len(h.GDR)))
		case haveExpect && expect && ib:
			add(CheckLogGDR, check.Unknown, h.Host, "GPUDirect RDMA", "GPUDirect RDMA was predicted on, but the log shows no HCA or channel line to confirm it (set NCCL_DEBUG_SUBSYS=INIT,NET)")
		}

		if v, ok := h.Env["NCCL_NET_GDR_LEVEL"]; ok {
			gdrLevelFinding(add, h.Host, v, "NCCL_DEBUG log of "+h.Host+": \"NCCL_NET_GDR_LEVEL set by environment\"")
		}

		ginTCFinding(add, h)

		// every WARN, once per host, judged by what it means
		for _, w := range h.Warns {
			if strings.Contains(w, "network") && strings.Contains(w, "not found") {
				continue // already a plugin finding
			}
			switch class, belief := ClassifyWarn(w); class {
			case WarnFatal:
				evs := []check.Evidence{ev("WARN", w)}
				if len(h.Chains) > 0 {
					evs = append(evs, ev("error chain after it", strings.Join(h.Chains, ", ")))
				}
				f := add(CheckLogFatal, check.Fail, h.Host, "NCCL WARN", belief+": "+w, evs...)
				f.Fix = fatalFix(w, h.Host)
			case WarnHarmless:
				add(CheckLogWarn, check.Pass, h.Host, "NCCL WARN", belief+": "+w, ev("WARN", w))
			default:
				add(CheckLogWarn, check.Warn, h.Host, "NCCL WARN", w, ev("WARN", w))
			}
		}
	}

	// versions must agree across hosts
	if len(versions) > 1 {
		var parts []string
		for _, v := range slices.Sorted(maps.Keys(versions)) {
			parts = append(parts, fmt.Sprintf("%s on %s", v, strings.Join(versions[v], ", ")))
		}
		add(CheckLogVersion, check.Fail, "", "NCCL version", "hosts run different NCCL versions ("+strings.Join(parts, "; ")+"): mismatched versions hang or crash at init")
	} else if len(versions) == 1 {
		for v, hs := range versions {
			add(CheckLogVersion, check.Pass, "", "NCCL version", fmt.Sprintf("NCCL %s on %s", v, strings.Join(hs, ", ")))
		}
	}

	// a host that did not log is named, never assumed like another
	for _, h := range opt.Hosts {
		if hl := d.Host(h); hl == nil || !hl.said() {
			add(CheckLogSilent, check.Unknown, h, "NCCL_DEBUG", h+" took part in the run but its NCCL_DEBUG lines are not in the log: its transport is unknown, not assumed like the others'").Fix =
				[]string{"run with NCCL_DEBUG=INFO exported to every rank (mpirun -x NCCL_DEBUG, srun --export=ALL)"}
		}
	}
	return fs
}

func describeLayers(keys []string, layers map[string][]string) string {
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s: %s", k, strings.Join(layers[k], ",")))
	}
	return strings.Join(parts, "; ")
}

// majority is the layer most devices use (ties: IB).
func majority(layers map[string][]string) string {
	best := ""
	for _, k := range slices.Sorted(maps.Keys(layers)) {
		if best == "" || len(layers[k]) > len(layers[best]) {
			best = k
		}
	}
	return best
}

// gdrLevelFinding judges an NCCL_NET_GDR_LEVEL the run set: SYS forces
// GPUDirect RDMA across the CPU interconnect, LOC turns it off; PIX, PXB
// (the default) and PHB (through the host bridge, as seed 001 sets it) are
// levels the hardware may well give.
func gdrLevelFinding(add func(e check.Entry, o check.Outcome, host, subject, msg string, ev ...check.Evidence) *check.Finding, host, v, source string) {
	e := check.Evidence{What: "NCCL_NET_GDR_LEVEL", Value: v, Source: source}
	switch strings.ToUpper(v) {
	case "SYS":
		add(CheckLogGDRLevel, check.Warn, host, "NCCL_NET_GDR_LEVEL", "NCCL_NET_GDR_LEVEL=SYS forces GPUDirect RDMA for every GPU↔NIC pair, even across the interconnect between sockets, where peer reads are slow (often slower than staging through host memory) or unsupported", e).Fix =
			[]string{"unset it (default PXB), or set PHB where GPU and NIC share a socket and it measures faster", "rdmalab nccl env --snapshot <host>.json shows each GPU's path level"}
	case "LOC":
		add(CheckLogGDRLevel, check.Warn, host, "NCCL_NET_GDR_LEVEL", "NCCL_NET_GDR_LEVEL=LOC turns GPUDirect RDMA off: network traffic stages through host memory", e).Fix =
			[]string{"unset it unless GPUDirect RDMA is known broken here"}
	case "PIX", "PXB", "PHB", "NODE":
		add(CheckLogGDRLevel, check.Pass, host, "NCCL_NET_GDR_LEVEL", fmt.Sprintf("NCCL_NET_GDR_LEVEL=%s: GPUDirect RDMA up to %s (NCCL's default is PXB)", v, v), e)
	default:
		add(CheckLogGDRLevel, check.Warn, host, "NCCL_NET_GDR_LEVEL", fmt.Sprintf("NCCL_NET_GDR_LEVEL=%s: numeric levels changed meaning between NCCL versions; name the level (PIX, PXB, PHB, SYS)", v), e)
	}
}

// ginTCFinding: GPU-initiated networking on the GDAKI backend builds its
// QPs from the GPU side (DevX), which the kernel's per-port traffic_class
// never touches; without NCCL_GIN_IB_TC or NCCL_IB_TC they carry DSCP 0,
// the lossy priority of a RoCE fabric lossless on another
// (NVIDIA/nccl#2383). On InfiniBand-only rails the DSCP does not matter.
func ginTCFinding(add func(e check.Entry, o check.Outcome, host, subject, msg string, ev ...check.Evidence) *check.Finding, h *HostLog) {
	if len(h.GIN) == 0 {
		return
	}
	roce := len(h.NetIB) == 0 // unknown rails: the caveat may apply
	for _, d := range h.NetIB {
		roce = roce || d.Layer == "RoCE"
	}
	if !roce {
		return
	}
	src := "NCCL_DEBUG log of " + h.Host
	e := []check.Evidence{{What: "GPU-initiated networking (GDAKI)", Value: h.GIN[0], Source: src}}
	for _, name := range []string{"NCCL_GIN_IB_TC", "NCCL_IB_TC"} {
		if v, ok := h.Env[name]; ok {
			e = append(e, check.Evidence{What: name, Value: v, Source: src + ": \"" + name + " set by environment\""})
			add(CheckLogGINTC, check.Pass, h.Host, "GPU-initiated networking", fmt.Sprintf("GPU-initiated (GDAKI) QPs carry %s=%s, set by environment", name, v), e...)
			return
		}
	}
	e = append(e, check.Evidence{What: "NCCL_GIN_IB_TC / NCCL_IB_TC", Value: "not set by environment (no \"set by environment\" line): NCCL uses traffic class 0", Source: src})
	f := add(CheckLogGINTC, check.Warn, h.Host, "GPU-initiated networking",
		"GPU-initiated networking (GDAKI) is on and NCCL_IB_TC is unset: its GPU-built (DevX) QPs ignore the kernel's per-port traffic_class and send with DSCP 0, on the lossy priority while the host's own QPs may be lossless; under load they drop, retry out and hang the kernel (NVIDIA/nccl#2383)", e...)
	f.Fix = []string{"export NCCL_IB_TC=<the lossless class> on every rank: rdmalab nccl env --snapshot <host>.json computes it (106 for DSCP 26 on priority 3)", "or NCCL_GIN_IB_TC for GIN traffic alone (NCCL ≥ 2.30.7)"}
}

// tcpByEnv names the variable that keeps NCCL off RDMA between nodes:
// NCCL_IB_DISABLE=1 turns its IB/RoCE transport off, NCCL_NET=Socket
// picks the TCP transport by name.
func tcpByEnv(env map[string]string) (name, value, why string) {
	if v, ok := env["NCCL_IB_DISABLE"]; ok && strings.TrimSpace(v) != "0" && v != "" {
		return "NCCL_IB_DISABLE", v, "NCCL's IB/RoCE transport is off, so traffic between nodes goes over TCP sockets (NET/Socket)"
	}
	if v, ok := env["NCCL_NET"]; ok && strings.EqualFold(strings.Trim(v, `"'`), "Socket") {
		return "NCCL_NET", v, "NCCL was told to use its TCP socket transport between nodes"
	}
	return "", "", ""
}

// fatalFix is the first thing to do about a fatal WARN on host.
func fatalFix(w, host string) []string {
	switch {
	case wcErrorRE().MatchString(w):
		m := wcErrorRE().FindStringSubmatch(w)
		m[1], _, _ = strings.Cut(m[1], "<")
		return []string{fmt.Sprintf("check the path between %s and peer %s: rdmalab doctor on both hosts (port.state, counters), rdmalab fabric check for the links between them", host, m[1]),
			"retest the pair with rdmalab bench (perftest both directions) before rerunning NCCL"}
	case strings.Contains(w, "ibv_create_qp") || strings.Contains(w, "ibv_reg_mr"):
		return []string{"raise the locked-memory limit on " + host + " (ulimit -l unlimited; LimitMEMLOCK=infinity for the launcher's service)", "rdmalab doctor on " + host + " (memlock, nvidia-peermem)"}
	}
	return []string{"read the first fatal WARN on " + host + " and the lines before it; rerun with NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET"}
}
