package testhost

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Slurm is a real single-machine Slurm cluster a test started: its own
// munged (own socket), slurmctld and one slurmd per node (slurmd -N), on
// loopback ports chosen free. Stopped by PID when the test ends.
type Slurm struct {
	t     testing.TB
	Dir   string
	Conf  string
	Nodes []string
	pids  []string // pid files of what we started
}

// SlurmOptions configures the cluster.
type SlurmOptions struct {
	// HealthCheckProgram and HealthCheckInterval (seconds) go into slurm.conf.
	HealthCheckProgram  string
	HealthCheckInterval int
	// ConfDir, when set, is where slurm.conf is written (default: the
	// cluster's own directory).
	ConfDir string
}

// freePorts finds n consecutive free TCP ports on loopback.
func freePorts(t testing.TB, n int) int {
	for base := 20000 + os.Getpid()%20000; base < 60000; base += n + 7 {
		ok := true
		for p := base; p < base+n && ok; p++ {
			l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
			if err != nil {
				ok = false
				break
			}
			l.Close()
		}
		if ok {
			return base
		}
	}
	t.Fatal("no free ports on loopback")
	return 0
}

// StartSlurm starts munged, slurmctld and a slurmd per node, and waits
// (bounded) until every node is idle.
func StartSlurm(t testing.TB, nodes int, opt SlurmOptions) *Slurm {
	t.Helper()
	for _, tool := range []string{"munged", "slurmctld", "slurmd", "scontrol", "sinfo", "srun"} {
		RequireTool(t, tool)
	}
	if os.Geteuid() != 0 {
		if os.Getenv("RDMALAB_REQUIRE_TOOLS") != "" {
			t.Fatal("a Slurm cluster needs root")
		}
		t.Skip("a Slurm cluster needs root")
	}
	dir, err := os.MkdirTemp("", "rdmalab-slurm-")
	if err != nil {
		t.Fatal(err)
	}
	confDir := dir
	if opt.ConfDir != "" {
		confDir = opt.ConfDir
		os.MkdirAll(confDir, 0o755)
	}
	s := &Slurm{t: t, Dir: dir, Conf: filepath.Join(confDir, "slurm.conf")}
	t.Cleanup(s.stop)
	for _, d := range []string{"munge", "state", "spool", "log"} {
		os.MkdirAll(filepath.Join(dir, d), 0o755)
	}
	os.Chmod(dir, 0o755)
	if err := exec.Command("chown", "munge:munge", filepath.Join(dir, "munge")).Run(); err != nil {
		t.Fatalf("chown munge: %v", err)
	}
	m := filepath.Join(dir, "munge")
	s.pids = append(s.pids, filepath.Join(m, "pid"))
	if out, err := exec.Command("runuser", "-u", "munge", "--", "munged", "--socket="+filepath.Join(m, "sock"),
		"--pid-file="+filepath.Join(m, "pid"), "--log-file="+filepath.Join(m, "log"), "--seed-file="+filepath.Join(m, "seed"),
		"--key-file=/etc/munge/munge.key").CombinedOutput(); err != nil {
		t.Fatalf("munged: %v %s", err, out)
	}
	base := freePorts(t, nodes+2)
	for i := 1; i <= nodes; i++ {
		s.Nodes = append(s.Nodes, fmt.Sprintf("node%d", i))
	}
	var hc string
	if opt.HealthCheckProgram != "" {
		hc = fmt.Sprintf("HealthCheckProgram=%s\nHealthCheckInterval=%d\nHealthCheckNodeState=ANY\n", opt.HealthCheckProgram, opt.HealthCheckInterval)
	}
	conf := fmt.Sprintf(`ClusterName=lab
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort=%d
SlurmdPort=%d
AuthType=auth/munge
AuthInfo=socket=%[3]s/munge/sock
CredType=cred/munge
SlurmUser=root
SlurmdUser=root
StateSaveLocation=%[3]s/state
SlurmdSpoolDir=%[3]s/spool/%%n
SlurmctldPidFile=%[3]s/slurmctld.pid
SlurmdPidFile=%[3]s/slurmd-%%n.pid
SlurmctldLogFile=%[3]s/log/slurmctld.log
SlurmdLogFile=%[3]s/log/slurmd-%%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
ReturnToService=2
MpiDefault=none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
%sNodeName=node[1-%d] NodeHostname=localhost NodeAddr=127.0.0.1 Port=[%d-%d] CPUs=1 RealMemory=500 State=UNKNOWN
PartitionName=lab Nodes=node[1-%[5]d] Default=YES MaxTime=INFINITE State=UP
`, base, base+1, dir, hc, nodes, base+2, base+1+nodes)
	if err := os.WriteFile(s.Conf, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	s.pids = append(s.pids, filepath.Join(dir, "slurmctld.pid"))
	if out, err := exec.Command("slurmctld", "-f", s.Conf).CombinedOutput(); err != nil {
		t.Fatalf("slurmctld: %v %s", err, out)
	}
	for _, n := range s.Nodes {
		s.pids = append(s.pids, filepath.Join(dir, "slurmd-"+n+".pid"))
		if out, err := exec.Command("slurmd", "-f", s.Conf, "-N", n).CombinedOutput(); err != nil {
			t.Fatalf("slurmd -N %s: %v %s", n, err, out)
		}
	}
	// Every node registered: a health check may already have drained one.
	s.WaitFor(30*time.Second, "every node registered", func() bool {
		out, err := s.Command("sinfo", "-h", "-N", "-o", "%T").Output()
		states := strings.Fields(string(out))
		if err != nil || len(states) != nodes {
			return false
		}
		for _, st := range states {
			if strings.HasPrefix(st, "unk") || strings.HasPrefix(st, "down") || strings.HasSuffix(st, "*") {
				return false
			}
		}
		return true
	})
	return s
}

// Env is the environment Slurm's clients need to find this cluster.
func (s *Slurm) Env() []string { return []string{"SLURM_CONF=" + s.Conf} }

// Command makes a Slurm client command for this cluster.
func (s *Slurm) Command(name string, args ...string) *exec.Cmd {
	c := exec.Command(name, args...)
	c.Env = append(os.Environ(), s.Env()...)
	return c
}

// NodeLine is `scontrol --oneliner show node NAME`.
func (s *Slurm) NodeLine(name string) string {
	out, _ := s.Command("scontrol", "--oneliner", "show", "node", name).Output()
	return strings.TrimSpace(string(out))
}

// WaitFor polls cond every 250 ms until it holds, failing the test after d.
func (s *Slurm) WaitFor(d time.Duration, what string, cond func() bool) {
	s.t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			b, _ := os.ReadFile(filepath.Join(s.Dir, "log", "slurmctld.log"))
			d1, _ := os.ReadFile(filepath.Join(s.Dir, "log", "slurmd-"+s.Nodes[0]+".log"))
			sinfo, _ := s.Command("sinfo", "-R").CombinedOutput()
			s.t.Fatalf("waited %s for %s\nsinfo -R:\n%s\nslurmctld.log (tail):\n%s\nslurmd-%s.log (tail):\n%s", d, what, sinfo, tail(string(b), 1500), s.Nodes[0], tail(string(d1), 1500))
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// alive reports a process that exists and is not a zombie (daemons are
// reparented away from the test, so nobody here reaps them).
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	if i := strings.LastIndexByte(string(b), ')'); i > 0 && i+2 < len(b) {
		return b[i+2] != 'Z'
	}
	return true
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// stop kills, by the PIDs in their pid files, every daemon this cluster
// started, slurmd first, and waits (bounded) until they are gone.
func (s *Slurm) stop() {
	var pids []int
	for i := len(s.pids) - 1; i >= 0; i-- {
		b, err := os.ReadFile(s.pids[i])
		if err != nil {
			continue
		}
		if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && pid > 1 {
			syscall.Kill(pid, syscall.SIGTERM)
			pids = append(pids, pid)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for _, pid := range pids {
		for alive(pid) && time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond)
		}
		syscall.Kill(pid, syscall.SIGKILL)
	}
	os.RemoveAll(s.Dir)
}
