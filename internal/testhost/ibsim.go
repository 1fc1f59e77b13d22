package testhost

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// UMADShim is Debian libumad2sim0's LD_PRELOAD library: it carries
// libibumad's MADs to ibsim instead of /dev/infiniband.
const UMADShim = "/usr/lib/x86_64-linux-gnu/umad2sim/libumad2sim.so"

// IBSim is a running ibsim fabric, with the OpenSM instances a test started.
// Each has its own socket name, so tests in different packages run at once.
type IBSim struct {
	Dir  string
	t    testing.TB
	sock string
	ctl  *os.File
	sim  *exec.Cmd
	sms  []*exec.Cmd
}

var simSeq atomic.Int64

// StartIBSim starts ibsim on netlist (the text of an ibnetdiscover-style
// file) in a scratch directory and stops it when the test ends.
func StartIBSim(t testing.TB, netlist string, extraArgs ...string) *IBSim {
	t.Helper()
	RequireTool(t, "ibsim")
	RequireTool(t, "opensm")
	RequireTool(t, "ibnetdiscover")
	if _, err := os.Stat(UMADShim); err != nil {
		if os.Getenv("RDMALAB_REQUIRE_TOOLS") != "" {
			t.Fatalf("%s missing (Debian libumad2sim0)", UMADShim)
		}
		t.Skip("libumad2sim0 not installed")
	}
	s := &IBSim{Dir: TempDir(t), t: t, sock: fmt.Sprintf("rdl%d-%d", os.Getpid(), simSeq.Add(1))}
	net := filepath.Join(s.Dir, "net")
	if err := os.WriteFile(net, []byte(netlist), 0o644); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(s.Dir, "ctl")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	// O_RDWR keeps the fifo open on both sides: ibsim never sees EOF.
	ctl, err := os.OpenFile(fifo, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	s.ctl = ctl
	out, _ := os.Create(filepath.Join(s.Dir, "ibsim.out"))
	args := append([]string{"-s"}, extraArgs...)
	s.sim = exec.Command("ibsim", append(args, net)...)
	s.sim.Dir, s.sim.Stdin, s.sim.Stdout, s.sim.Stderr = s.Dir, ctl, out, out
	s.sim.Env = append(os.Environ(), "IBSIM_SOCKNAME="+s.sock)
	if err := s.sim.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.stop)
	// ready when it says so; bounded
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(s.read("ibsim.out"), "simulator ready") {
		if time.Now().After(deadline) {
			t.Fatalf("ibsim did not start within 30 s:\n%s", s.read("ibsim.out"))
		}
		time.Sleep(50 * time.Millisecond)
	}
	return s
}

func (s *IBSim) read(name string) string {
	b, _ := os.ReadFile(filepath.Join(s.Dir, name))
	return string(b)
}

// Env is what a diagnostic tool needs to talk to this simulator.
func (s *IBSim) Env() []string {
	return []string{"LD_PRELOAD=" + UMADShim, "IBSIM_SOCKNAME=" + s.sock}
}

// StartSM starts an OpenSM attached at node (empty: the netlist's first
// node) with a priority, and waits until it is master or standby.
func (s *IBSim) StartSM(node string, priority int) {
	s.t.Helper()
	n := len(s.sms)
	dir := filepath.Join(s.Dir, fmt.Sprintf("sm%d", n))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		s.t.Fatal(err)
	}
	log := filepath.Join(dir, "osm.out")
	out, _ := os.Create(log)
	cmd := exec.Command("opensm", "-p", fmt.Sprint(priority), "-s", "2", "-f", filepath.Join(dir, "osm.log"))
	cmd.Dir, cmd.Stdout, cmd.Stderr = dir, out, out
	cmd.Env = append(os.Environ(), append(s.Env(), "OSM_TMP_DIR="+dir, "OSM_CACHE_DIR="+dir)...)
	if node != "" {
		cmd.Env = append(cmd.Env, "SIM_HOST="+node)
	}
	if err := cmd.Start(); err != nil {
		s.t.Fatal(err)
	}
	s.sms = append(s.sms, cmd)
	deadline := time.Now().Add(60 * time.Second)
	for {
		b, _ := os.ReadFile(log)
		if bytes.Contains(b, []byte("Entering MASTER state")) || bytes.Contains(b, []byte("Entering STANDBY state")) {
			return
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("opensm did not reach MASTER or STANDBY within 60 s:\n%s", b)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Run runs a diagnostic tool against the simulator with a timeout.
func (s *IBSim) Run(timeout time.Duration, name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = s.Dir
	cmd.Env = append(os.Environ(), s.Env()...)
	out, err := cmd.Output()
	return string(out), err
}

// WaitUp waits, bounded, until the SM has configured every linked port:
// none left in Initialize or Armed, none with LID 0.
func (s *IBSim) WaitUp(timeout time.Duration) {
	s.t.Helper()
	deadline := time.Now().Add(timeout)
	last := ""
	for time.Now().Before(deadline) {
		out, err := s.Run(30*time.Second, "iblinkinfo", "--line")
		if err == nil && strings.Contains(out, "Active/") && !strings.Contains(out, "Initialize/") && !strings.Contains(out, "Armed/") {
			return
		}
		last = out
		time.Sleep(300 * time.Millisecond)
	}
	s.t.Fatalf("fabric not up within %s; last iblinkinfo:\n%s", timeout, last)
}

// Console sends one command to ibsim's console and gives it a moment.
func (s *IBSim) Console(cmd string) {
	s.t.Helper()
	before := len(s.read("ibsim.out"))
	if _, err := fmt.Fprintln(s.ctl, cmd); err != nil {
		s.t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for len(s.read("ibsim.out")) == before && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
}

// SMLog is what the i-th OpenSM this test started printed (its state
// changes), for a test's failure message.
func (s *IBSim) SMLog(i int) string {
	return s.read(filepath.Join(fmt.Sprintf("sm%d", i), "osm.out"))
}

// StopSM stops the i-th OpenSM this test started (by its PID).
func (s *IBSim) StopSM(i int) {
	if c := s.sms[i]; c.Process != nil && c.ProcessState == nil {
		_ = c.Process.Kill()
		_ = c.Wait()
	}
}

// StopSMs stops the OpenSM instances this test started.
func (s *IBSim) StopSMs() {
	for i := range s.sms {
		s.StopSM(i)
	}
	s.sms = nil
}

func (s *IBSim) stop() {
	s.StopSMs()
	if s.sim.Process != nil {
		_ = s.sim.Process.Kill()
		_ = s.sim.Wait()
	}
	s.ctl.Close()
}

// FullSpeed makes every following link of a netlist train at 12X QDR, the
// best ibsim's ports support: without it links come up 4X SDR and are
// (rightly) reported as below what both ends support.
const FullSpeed = "width=8\nspeed=4\n\n"

// FatTree writes a two-level fat tree netlist: spines and leaves,
// hostsPerLeaf HCAs per leaf, every leaf cabled once to every spine, at
// FullSpeed, two spare ports per leaf. Names: spine01, leaf01, node0001.
func FatTree(spines, leaves, hostsPerLeaf int) string {
	var b strings.Builder
	b.WriteString("# generated by rdmalab testhost.FatTree\n" + FullSpeed)
	ports := hostsPerLeaf + spines + 2 // two spare ports per leaf
	for s := 1; s <= spines; s++ {
		fmt.Fprintf(&b, "Switch\t%d \"spine%02d\"\n", max(leaves, 1), s)
		for l := 1; l <= leaves; l++ {
			fmt.Fprintf(&b, "[%d]\t\"leaf%02d\"[%d]\n", l, l, hostsPerLeaf+s)
		}
		b.WriteString("\n")
	}
	for l := 1; l <= leaves; l++ {
		fmt.Fprintf(&b, "Switch\t%d \"leaf%02d\"\n", ports, l)
		for h := 1; h <= hostsPerLeaf; h++ {
			fmt.Fprintf(&b, "[%d]\t\"%s\"[1]\n", h, hostName((l-1)*hostsPerLeaf+h))
		}
		for s := 1; s <= spines; s++ {
			fmt.Fprintf(&b, "[%d]\t\"spine%02d\"[%d]\n", hostsPerLeaf+s, s, l)
		}
		b.WriteString("\n")
	}
	for l := 1; l <= leaves; l++ {
		for h := 1; h <= hostsPerLeaf; h++ {
			fmt.Fprintf(&b, "Hca\t1 \"%s\"\n[1]\t\"leaf%02d\"[%d]\n\n", hostName((l-1)*hostsPerLeaf+h), l, h)
		}
	}
	return b.String()
}

func hostName(i int) string { return fmt.Sprintf("node%04d", i) }

// QDRLab is seeds 002/003's lab as an ibsim netlist: three hosts on one QDR
// switch (12X here, ibsim's best), the SM on lab01, with the faults people
// meet first: lab03's cable trained at DDR on both ends.
const QDRLab = FullSpeed + `Switch	8 "ib-sw01"
[1]	"lab01 HCA-1"[1]
[2]	"lab02 HCA-1"[1]
[3]	"lab03 HCA-1"[1] s=3

Hca	1 "lab01 HCA-1"
[1]	"ib-sw01"[1]

Hca	1 "lab02 HCA-1"
[1]	"ib-sw01"[2]

Hca	1 "lab03 HCA-1"
[1]	"ib-sw01"[3] s=3
`

// EDRDump writes a two-level EDR fat tree in ibnetdiscover's own output
// format, the way a real fabric's dump looks (ibsim loads it as its
// netlist): every switch a Switch-IB (devid 0xcb20) called "SwitchIB
// Mellanox Technologies", every HCA a ConnectX-4 (devid 0x1013) called
// "HCA-1", node and port GUIDs, LIDs in the comments, and 4xEDR on every
// link. Leaf l's port h goes to its h-th HCA, port hostsPerLeaf+s to
// spine s; spine s's port l to leaf l.
func EDRDump(spines, leaves, hostsPerLeaf int) string {
	const swDesc, caDesc = "SwitchIB Mellanox Technologies", "HCA-1"
	spine := func(s int) uint64 { return 0x7cfe900300a50000 + uint64(s)<<4 }
	leaf := func(l int) uint64 { return 0x7cfe900300b60000 + uint64(l)<<4 }
	hca := func(l, h int) uint64 { return 0x248a070300c70000 + uint64(l)<<8 + uint64(h)<<1 }
	spineLID := func(s int) int { return s }
	leafLID := func(l int) int { return spines + l }
	hcaLID := func(l, h int) int { return spines + leaves + (l-1)*hostsPerLeaf + h }
	var b strings.Builder
	b.WriteString("#\n# Topology file: generated on Tue Mar 14 10:00:00 2023\n#\n")
	fmt.Fprintf(&b, "# Initiated from node %016x port %016x\n\n", leaf(1), leaf(1))
	sw := func(g uint64, lid int) {
		fmt.Fprintf(&b, "vendid=0x2c9\ndevid=0xcb20\nsysimgguid=0x%x\nswitchguid=0x%x(%x)\n", g, g, g)
		fmt.Fprintf(&b, "Switch\t36 \"S-%016x\"\t\t# \"%s\" base port 0 lid %d lmc 0\n", g, swDesc, lid)
	}
	for s := 1; s <= spines; s++ {
		sw(spine(s), spineLID(s))
		for l := 1; l <= leaves; l++ {
			fmt.Fprintf(&b, "[%d]\t\"S-%016x\"[%d]\t\t# \"%s\" lid %d 4xEDR\n", l, leaf(l), hostsPerLeaf+s, swDesc, leafLID(l))
		}
		b.WriteString("\n")
	}
	for l := 1; l <= leaves; l++ {
		sw(leaf(l), leafLID(l))
		for h := 1; h <= hostsPerLeaf; h++ {
			fmt.Fprintf(&b, "[%d]\t\"H-%016x\"[1](%x) \t\t# \"%s\" lid %d 4xEDR\n", h, hca(l, h), hca(l, h)+1, caDesc, hcaLID(l, h))
		}
		for s := 1; s <= spines; s++ {
			fmt.Fprintf(&b, "[%d]\t\"S-%016x\"[%d]\t\t# \"%s\" lid %d 4xEDR\n", hostsPerLeaf+s, spine(s), l, swDesc, spineLID(s))
		}
		b.WriteString("\n")
	}
	for l := 1; l <= leaves; l++ {
		for h := 1; h <= hostsPerLeaf; h++ {
			g := hca(l, h)
			fmt.Fprintf(&b, "vendid=0x2c9\ndevid=0x1013\nsysimgguid=0x%x\ncaguid=0x%x\n", g, g)
			fmt.Fprintf(&b, "Ca\t1 \"H-%016x\"\t\t# \"%s\"\n", g, caDesc)
			fmt.Fprintf(&b, "[1](%x) \t\"S-%016x\"[%d]\t\t# lid %d lmc 0 \"%s\" lid %d 4xEDR\n\n", g+1, leaf(l), h, hcaLID(l, h), swDesc, leafLID(l))
		}
	}
	return b.String()
}

var rateTokenRE = regexp.MustCompile(`\b\d+x[A-Z]+[0-9]*\b`)

// Degrade rewrites one link of an EDRDump, on both ends' lines, to run at
// rate ("4xDDR", "1xEDR"): the dump of a fabric with one bad cable.
// Leaf l's HCA h is the link.
func Degrade(dump string, l, h int, rate string) string {
	leafGUID := fmt.Sprintf("S-%016x", 0x7cfe900300b60000+uint64(l)<<4)
	hcaGUID := fmt.Sprintf("H-%016x", 0x248a070300c70000+uint64(l)<<8+uint64(h)<<1)
	lines := strings.Split(dump, "\n")
	for i, line := range lines {
		if strings.Contains(line, "\""+hcaGUID+"\"[1]") && strings.HasPrefix(line, fmt.Sprintf("[%d]\t", h)) ||
			strings.Contains(line, "\""+leafGUID+"\"["+fmt.Sprint(h)+"]") && strings.HasPrefix(line, "[1](") {
			lines[i] = rateTokenRE.ReplaceAllString(line, rate)
		}
	}
	return strings.Join(lines, "\n")
}
