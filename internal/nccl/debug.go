package nccl

import (
	"bufio"
	"bytes"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/rdmalab/rdmalab/internal/lazyre"
)

// DebugLog is what NCCL_DEBUG=INFO (or TRACE) output says, per host.
type DebugLog struct {
	Hosts []*HostLog `json:"hosts"`
	// Lines is how many NCCL lines were read.
	Lines int `json:"lines"`
	// LaunchEnv holds NCCL variables set on a command line in the log
	// (mpirun -x NAME=V, srun --export=…,NAME=V, export NAME=V, NAME=V
	// before a command), not attributed to a host.
	LaunchEnv map[string]string `json:"launch_env,omitempty"`
	// LaunchLines are the lines LaunchEnv came from, by variable.
	LaunchLines map[string]string `json:"launch_lines,omitempty"`
}

// HostLog is one host's part of an NCCL_DEBUG log.
type HostLog struct {
	Host string `json:"host"`
	// Ranks maps process ids to NCCL ranks where "comm … rank R" said so.
	Ranks        map[string]int `json:"ranks,omitempty"`
	NCCLVersions []string       `json:"nccl_versions,omitempty"`
	// NetIB is the last "NET/IB : Using …" device list.
	NetIB []NetDevice `json:"net_ib,omitempty"`
	// OOB is the interface NET/IB or NET/Socket names for out-of-band traffic.
	OOB       string   `json:"oob,omitempty"`
	Bootstrap string   `json:"bootstrap,omitempty"`
	Networks  []string `json:"networks,omitempty"` // "Using network IB|Socket|AWS Libfabric"
	// Plugin: "absent" (internal implementation), "loaded <name>",
	// "failed <name>: <reason>", or "".
	Plugins  []string        `json:"plugins,omitempty"`
	GDR      map[string]bool `json:"gdr_hca,omitempty"` // HCA → GPU Direct RDMA Enabled
	DMABuf   bool            `json:"dmabuf,omitempty"`
	Channels []Channel       `json:"channels,omitempty"`
	// Warns are the WARN texts (a WARN wrapped onto a second line keeps
	// its continuation), each once.
	Warns []string `json:"warns,omitempty"`
	// Chains are NCCL's "file:line -> N" error returns logged after the
	// host's first WARN, rendered with the ncclResult name.
	Chains []string          `json:"error_chain,omitempty"`
	Env    map[string]string `json:"env,omitempty"` // "X set by environment to Y"
	// GIN holds the lines that show GPU-initiated networking on the GDAKI
	// backend (GPU-built DevX QPs): "devCommCreate: GIN backend type 3",
	// messages from gin_host_gdaki.cc, NCCL_GIN_TYPE=3 from the environment.
	GIN []string `json:"gin_gdaki,omitempty"`
	// InitComplete is set once a rank logged "Init COMPLETE".
	InitComplete bool `json:"init_complete,omitempty"`
	// Failures are lines where the test itself stopped ("Test NCCL failure").
	Failures []string `json:"failures,omitempty"`
}

// NetDevice is one entry of "NET/IB : Using [0]mlx5_0:1/RoCE".
type NetDevice struct {
	Index int    `json:"index"`
	Name  string `json:"name"`
	Port  int    `json:"port"`
	Layer string `json:"layer"` // IB or RoCE
}

// Channel is one "Channel 00/0 : 1[81000] -> 0[81000] [receive] via NET/IB/1/GDRDMA"
// (or the older "Ring 00 : …") connection.
type Channel struct {
	Line      string `json:"line"`
	Direction string `json:"direction,omitempty"` // send, receive
	// Transport is what follows "via": NET/IB/1/GDRDMA, NET/Socket/0,
	// P2P/IPC, SHM, "direct shared memory", …
	Transport string `json:"transport"`
}

// Net reports whether the channel crosses the network.
func (c Channel) Net() bool { return strings.HasPrefix(c.Transport, "NET/") }

// Socket reports whether the channel uses NCCL's socket transport.
func (c Channel) Socket() bool { return strings.HasPrefix(c.Transport, "NET/Socket") }

// GDR reports whether a network channel reads or writes GPU memory directly.
func (c Channel) GDR() bool { return strings.Contains(c.Transport, "/GDRDMA") }

var (
	// host:pid:tid [dev] rest, behind any launcher prefix: "[rank] "
	// (mpirun -tag-output styles), Ray/vLLM's "(RayWorkerWrapper pid=627,
	// ip=…) ", srun --label's "0: ", timestamps
	ncclLineRE = lazyre.New(`(?:^|[\s)\]>])([^\s:\[\]()]+(?:\[\d+\])?):(\d+):(\d+)\s+\[(\d+)\]\s+(.*)$`)
	// NCCL_X=V on a command line: mpirun -x NCCL_X=V, srun
	// --export=ALL,NCCL_X=V, export NCCL_X=V, NCCL_X=V before a command
	launchEnvRE = lazyre.New(`(?:^|[\s;,=])(NCCL_[A-Z0-9_]+)=("[^"]*"|'[^']*'|[^\s,;"']+)`)
	// Intel MPI's -genv NCCL_X V
	genvRE       = lazyre.New(`-genv\s+(NCCL_[A-Z0-9_]+)\s+(\S+)`)
	netIBRE      = lazyre.New(`NET/IB\s*:\s*Using\s+(.*?)\s*(?:\[RO\])?\s*;\s*OOB\s+([^:\s]+)`)
	netDevRE     = lazyre.New(`\[(\d+)\]([^:\s]+):(\d+)/(\w+)`)
	netSocketRE  = lazyre.New(`NET/Socket\s*:\s*Using\s+\[\d+\]([^:\s]+)`)
	usingNetRE   = lazyre.New(`Using network (.+?)\s*$`)
	bootstrapRE  = lazyre.New(`Bootstrap\s*:\s*Using\s+([^:\s]+)`)
	gdrHCARE     = lazyre.New(`GPU Direct RDMA (Enabled|Disabled) for HCA \d+ '([^']+)'`)
	channelRE    = lazyre.New(`(?:Channel|Ring) \d+(?:/\d+)?\s*:\s*.*?(?:\[(send|receive)\]\s+)?via\s+(.+?)\s*$`)
	commRankRE   = lazyre.New(`comm 0x[0-9a-f]+ rank (\d+) nranks \d+`)
	envSetRE     = lazyre.New(`(NCCL_[A-Z0-9_]+) set (?:by environment )?to (.+?)\.?\s*$`)
	pluginInitRE = lazyre.New(`Initialized NET plugin (.+?)\s*$`)
	p2pPluginRE  = lazyre.New(`P2P plugin (\S+)`)
	warnRE       = lazyre.New(`NCCL WARN (.*)$`)
	// NCCL ≥ 2.28's GIN: backend type 3 is GDAKI (NCCL_GIN_TYPE_GDAKI in
	// nccl_device/core.h); src/gin/gin_host.cc logs the type a device
	// communicator gets, and the GDAKI backend's own lines name its file.
	ginGDAKIRE = lazyre.New(`GIN backend type 3\b|gin_host_gdaki\.cc|GIN_IB_GDAKI|NCCL_GIN_TYPE set by environment to 3\b`)
	// "host: Test NCCL failure common.cu:958 '…'" (nccl-tests aborting)
	testFailureRE = lazyre.New(`^[^\s:]+: Test NCCL failure`)
)

// ParseDebug reads NCCL_DEBUG output, whatever else is mixed in (nccl-tests
// tables, launcher noise, mpirun rank prefixes).
func ParseDebug(b []byte) *DebugLog {
	d := &DebugLog{}
	byHost := map[string]*HostLog{}
	get := func(h string) *HostLog {
		if hl := byHost[h]; hl != nil {
			return hl
		}
		hl := &HostLog{Host: h}
		byHost[h] = hl
		d.Hosts = append(d.Hosts, hl)
		return hl
	}
	sc := bufio.NewScanner(bytes.NewReader(UntangleMPITags(b)))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	// the WARN the previous line ended, for a continuation on this one
	var lastWarn *HostLog
	for sc.Scan() {
		raw, _ := StripMPIPrefix(sc.Text())
		line := strings.TrimSpace(raw)
		if lastWarn != nil && continuation(raw, lastWarn.Warns[len(lastWarn.Warns)-1]) {
			lastWarn.Warns[len(lastWarn.Warns)-1] += " " + line
			lastWarn = nil
			continue
		}
		lastWarn = nil
		if testFailureRE().MatchString(line) {
			h, _, _ := strings.Cut(line, ":")
			hl := get(h)
			hl.Failures = append(hl.Failures, line)
			continue
		}
		m := ncclLineRE().FindStringSubmatch(line)
		if m == nil {
			d.launchEnv(line)
			continue
		}
		rest := m[5]
		if !strings.Contains(rest, "NCCL INFO") && !strings.Contains(rest, "NCCL WARN") {
			continue
		}
		d.Lines++
		hl := get(m[1])
		pid := m[2]
		addUnique := func(list *[]string, v string) {
			if !slices.Contains(*list, v) {
				*list = append(*list, v)
			}
		}
		if ginGDAKIRE().MatchString(rest) && len(hl.GIN) < 3 {
			_, l, _ := strings.Cut(rest, "NCCL ")
			addUnique(&hl.GIN, l)
		}
		switch {
		case warnRE().MatchString(rest):
			w := strings.TrimSpace(warnRE().FindStringSubmatch(rest)[1])
			hl.Warns = append(hl.Warns, w)
			lastWarn = hl
			if strings.Contains(w, "network") && strings.Contains(w, "not found") {
				addUnique(&hl.Plugins, "failed: "+w)
			}
		case len(hl.Warns) > 0 && chainRE().MatchString(rest):
			mm := chainRE().FindStringSubmatch(rest)
			if n, _ := strconv.Atoi(mm[2]); n != 0 && len(hl.Chains) < 8 {
				addUnique(&hl.Chains, ChainMeaning(mm[1], n))
			}
		case versionRE().MatchString(rest):
			addUnique(&hl.NCCLVersions, versionRE().FindStringSubmatch(rest)[1])
		case netIBRE().MatchString(rest):
			mm := netIBRE().FindStringSubmatch(rest)
			hl.NetIB = nil
			for _, dm := range netDevRE().FindAllStringSubmatch(mm[1], -1) {
				i, _ := strconv.Atoi(dm[1])
				p, _ := strconv.Atoi(dm[3])
				hl.NetIB = append(hl.NetIB, NetDevice{Index: i, Name: dm[2], Port: p, Layer: dm[4]})
			}
			hl.OOB = mm[2]
		case netSocketRE().MatchString(rest):
			hl.OOB = netSocketRE().FindStringSubmatch(rest)[1]
			addUnique(&hl.Networks, "Socket")
		case usingNetRE().MatchString(rest):
			addUnique(&hl.Networks, usingNetRE().FindStringSubmatch(rest)[1])
		case bootstrapRE().MatchString(rest):
			hl.Bootstrap = bootstrapRE().FindStringSubmatch(rest)[1]
		case gdrHCARE().MatchString(rest):
			mm := gdrHCARE().FindStringSubmatch(rest)
			if hl.GDR == nil {
				hl.GDR = map[string]bool{}
			}
			hl.GDR[mm[2]] = mm[1] == "Enabled"
		case strings.Contains(rest, "Init COMPLETE"):
			hl.InitComplete = true
			if mm := commRankRE().FindStringSubmatch(rest); mm != nil {
				r, _ := strconv.Atoi(mm[1])
				if hl.Ranks == nil {
					hl.Ranks = map[string]int{}
				}
				hl.Ranks[pid] = r
			}
		case strings.Contains(rest, "DMA-BUF is available"):
			hl.DMABuf = true
		case channelRE().MatchString(rest):
			mm := channelRE().FindStringSubmatch(rest)
			hl.Channels = append(hl.Channels, Channel{Line: rest[strings.Index(rest, "NCCL INFO")+len("NCCL INFO "):], Direction: mm[1], Transport: mm[2]})
		case commRankRE().MatchString(rest):
			r, _ := strconv.Atoi(commRankRE().FindStringSubmatch(rest)[1])
			if hl.Ranks == nil {
				hl.Ranks = map[string]int{}
			}
			hl.Ranks[pid] = r
		case strings.Contains(rest, "No plugin found") || strings.Contains(rest, "Could not find:"):
			addUnique(&hl.Plugins, "absent")
		case pluginInitRE().MatchString(rest):
			addUnique(&hl.Plugins, "loaded "+pluginInitRE().FindStringSubmatch(rest)[1])
		case p2pPluginRE().MatchString(rest):
			addUnique(&hl.Plugins, "loaded "+p2pPluginRE().FindStringSubmatch(rest)[1])
			addUnique(&hl.Networks, p2pPluginRE().FindStringSubmatch(rest)[1])
		case strings.Contains(rest, "plugin/net.cc") && strings.Contains(rest, "->"),
			strings.Contains(rest, "NET/OFI Invalid"):
			addUnique(&hl.Plugins, "failed: "+rest[strings.Index(rest, "NCCL INFO")+len("NCCL INFO "):])
		case envSetRE().MatchString(rest):
			mm := envSetRE().FindStringSubmatch(rest)
			if hl.Env == nil {
				hl.Env = map[string]string{}
			}
			hl.Env[mm[1]] = mm[2]
		}
	}
	for _, h := range d.Hosts {
		h.Warns = uniq(h.Warns)
	}
	return d
}

func uniq(list []string) []string {
	var out []string
	for _, v := range list {
		if !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	return out
}

// continuation reports whether the line after a WARN is that WARN wrapped
// onto a second line: not an NCCL line, not nccl-tests' own, not empty.
func continuation(raw, warn string) bool {
	t := strings.TrimSpace(raw)
	indented := t != "" && (raw[0] == ' ' || raw[0] == '\t')
	r := rune(0)
	if t != "" {
		r = []rune(t)[0]
	}
	cut := !strings.HasSuffix(warn, ".") && (unicode.IsLetter(r) || unicode.IsDigit(r) || r == '(' || r == ':')
	if !indented && !cut {
		return false
	}
	if t == "" || strings.HasPrefix(t, "#") || strings.HasPrefix(t, "$") || ncclLineRE().MatchString(t) || testFailureRE().MatchString(t) {
		return false
	}
	f := strings.Fields(t)
	if len(f) >= 11 {
		if _, err := strconv.ParseInt(f[0], 10, 64); err == nil {
			return false // a result row
		}
	}
	return !launchEnvRE().MatchString(t) && !perfNameRE().MatchString(t)
}

// launchEnv takes NCCL variables a command line in the log sets, however
// the launcher spells it.
func (d *DebugLog) launchEnv(line string) {
	set := func(k, v string) {
		if d.LaunchEnv == nil {
			d.LaunchEnv, d.LaunchLines = map[string]string{}, map[string]string{}
		}
		d.LaunchEnv[k] = strings.Trim(v, `"'`)
		d.LaunchLines[k] = line
	}
	for _, m := range launchEnvRE().FindAllStringSubmatch(line, -1) {
		set(m[1], m[2])
	}
	for _, m := range genvRE().FindAllStringSubmatch(line, -1) {
		set(m[1], m[2])
	}
}

// Host returns the log of host h, or nil.
func (d *DebugLog) Host(h string) *HostLog {
	for _, hl := range d.Hosts {
		if hl.Host == h {
			return hl
		}
	}
	return nil
}
