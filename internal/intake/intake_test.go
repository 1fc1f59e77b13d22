package intake

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rdmalab/rdmalab/examples"
	"github.com/rdmalab/rdmalab/internal/bench"
	"github.com/rdmalab/rdmalab/internal/envelope"
	"github.com/rdmalab/rdmalab/internal/fabric"
	"github.com/rdmalab/rdmalab/internal/host"
	"github.com/rdmalab/rdmalab/internal/hostcheck"
	"github.com/rdmalab/rdmalab/internal/testhost"
	"github.com/rdmalab/rdmalab/internal/userfile"
)

func TestMain(m *testing.M) { os.Exit(testhost.Main(m)) }

// What intake says each real input is: the shared captures and tool
// outputs, the examples, and rdmalab's own outputs.
func TestOpenSaysWhatItIs(t *testing.T) {
	shared := testhost.SharedTestdata(t)
	caps := testhost.Captures(t)
	dir := t.TempDir()
	doc := func(name string, kind envelope.Kind, payload any) string {
		var b bytes.Buffer
		if err := envelope.Write(&b, kind, nil, payload); err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, name)
		os.WriteFile(p, b.Bytes(), 0o644)
		return p
	}
	bare := func(name string, enc func(*bytes.Buffer) error) string {
		var b bytes.Buffer
		if err := enc(&b); err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, name)
		os.WriteFile(p, b.Bytes(), 0o644)
		return p
	}
	h, _ := examples.Load("seed000-epyc")
	fab, _ := examples.LoadFabric("qdr-lab")
	doctor := filepath.Join(dir, "doctor.json")
	{
		var b bytes.Buffer
		envelope.Write(&b, envelope.Doctor, hostcheck.Run(h, hostcheck.Options{}), nil)
		os.WriteFile(doctor, b.Bytes(), 0o644)
	}
	s := func(p string) string { return filepath.Join(shared, p) }
	for _, c := range []struct {
		name, want string
		host       string // the hostname read, for host inputs
	}{
		// Host sources, read by inventory.
		{caps["32em64t-2n8c+dax+nvme+mic+dimms"].Root, "host source", ""},
		{s("sysfs/hwloc/32em64t-2n8c+dax+nvme+mic+dimms.tar.bz2"), "host source", ""},
		{s("sysfs/gpud/sys-class-infiniband-h100.0.tar.gz"), "host source", ""},
		{s("sysfs/ghw/linux-amd64-accel-nvidia.tar.gz"), "host source", ""},
		// Examples.
		{"example:seed000-epyc", "host snapshot", "epyc-lab"},
		{"example:qdr-lab", "fabric snapshot", ""},
		// rdmalab's own outputs, in envelopes and bare.
		{doc("host.json", envelope.HostSnapshot, h), "host snapshot", "epyc-lab"},
		{bare("bare-host.json", func(b *bytes.Buffer) error { return h.Encode(b) }), "host snapshot", "epyc-lab"},
		{doc("fabric.json", envelope.FabricSnapshot, fab), "fabric snapshot", ""},
		{bare("bare-fabric.json", func(b *bytes.Buffer) error { return fab.Encode(b) }), "fabric snapshot", ""},
		{doctor, "rdmalab document (doctor)", ""},
		{"../report/testdata/bench-tcp-loopback/bw.json", "rdmalab document (bench)", ""},
		{"../report/testdata/bench-tcp-loopback/bw.jsonl", "bench results log", ""},
		{"../compare/testdata/seed000-optimised.jsonl", "bench results log", ""},
		// Saved tool outputs, by judge's registry.
		{s("ibtools/azure-hbv3/ibstat.txt"), "saved tool output (ibstat)", ""},
		{s("ibtools/h20-cx7-ndr200/ibstatus_2X-NDR_redacted.txt"), "saved tool output (ibstatus)", ""},
		{s("ibtools/azure-hbv3/ibv_devinfo.txt"), "saved tool output (ibv_devinfo)", ""},
		{s("ibtools/iblinkinfo/xcat-edr-2node_SB7700_iblinkinfo.txt"), "saved tool output (iblinkinfo)", ""},
		{s("ibtools/infiniband_exporter/ibnetdiscover/test.out"), "saved tool output (ibnetdiscover -p)", ""},
		{s("ibnetdiscover/ibsim-net-examples/net"), "saved tool output (ibnetdiscover)", ""},
		{s("ibtools/ibqueryerrors/ompi-users-2009_ibcheckerrors_legacy_InfiniscaleIII.txt"), "saved tool output (ibcheckerrors)", ""},
		{s("perftest/azure-hbv3_ib_send_bw_all_server.txt"), "saved tool output (perftest)", ""},
		{s("nccl-tests/superbench/nccl_allreduce.log"), "nccl results (nccl-tests / NCCL_DEBUG)", ""},
		{s("nccl-debug/nccl-issue-1232_socket-ifname_mpi-prefixed_excerpt.log"), "nccl results (nccl-tests / NCCL_DEBUG)", ""},
		{s("mlnx_qos/sn2410-roce-blog-2019_eth4_trust-dscp_dscp2prio-map-only_excerpt.txt"), "saved tool output (mlnx_qos)", ""},
		{s("dcb/dpaa2-eth-netdev-2020_lldptool-t-V-PFC_eth1_willing_pfc-enabled-1-3-7.txt"), "saved tool output (dcb / lldptool)", ""},
		{s("show_gids/rdma-bench-c-header-comment_star-prefixed_3dev-roce-v1-v2_tabs.txt"), "saved tool output (show_gids)", ""},
		{s("ethtool-S/bpf-list-2024-xdp-regression_mlx5_kernel-5.15_nonzero-only_rx_discards_phy-58G_tx_global_pause_prio0.txt"), "saved tool output (ethtool -S)", ""},
		{s("roce-sysfs/roce-notes-zh_cma_roce_mode-two-commands-one-output-line.txt"), "saved tool output (cma_roce_mode)", ""},
		{s("nvidia-smi-topo/club-3090-issue-1229_2xRTX5090-workstation_PHB_no-nic.txt"), "saved tool output (nvidia-smi topo -m)", ""},
		// Nothing rdmalab reads, with why.
		{s("sysfs/hwloc/nvidiaDGX2.xml"), "unknown: not JSON, and not a bench results log (no header line)", ""},
		{s("ibtools/infiniband_exporter/perfquery-rcv-error/0x506b4b03005c2740-1.out"), "unknown: not JSON, and not a bench results log (no header line)", ""},
	} {
		t.Run(filepath.Base(c.name), func(t *testing.T) {
			in, err := Open(c.name)
			if err != nil {
				t.Fatal(err)
			}
			if got := in.String(); got != c.want {
				t.Errorf("%s, want %s", got, c.want)
			}
			switch in.What {
			case HostSource, HostSnapshot:
				if in.Host == nil || c.host != "" && in.Host.Hostname != c.host {
					t.Errorf("host %+v, want %q", in.Host, c.host)
				}
			case FabricSnapshot:
				if in.Fabric == nil || len(in.Fabric.Ports) == 0 {
					t.Error("no fabric read")
				}
			case Document:
				if len(in.Findings) == 0 {
					t.Error("a document without its findings")
				}
				if in.Kind == envelope.Bench && (in.Bench == nil || in.Bench.Engine == "") {
					t.Error("a bench document without its report")
				}
			}
		})
	}
}

// example:NAME is read in one place, with one line for a wrong one.
func TestExamples(t *testing.T) {
	if _, err := Host("example:qdr-lab"); err == nil || !strings.Contains(err.Error(), "is a fabric example; this reads a host") {
		t.Errorf("fabric example as a host: %v", err)
	}
	if _, err := Fabric("example:hgx-h200"); err == nil || !strings.Contains(err.Error(), "is a host example; this reads a fabric") {
		t.Errorf("host example as a fabric: %v", err)
	}
	if _, err := Host("example:nope"); err == nil || !strings.Contains(err.Error(), `no example host "nope" (have `) {
		t.Errorf("unknown host example: %v", err)
	}
	if _, err := Fabric("example:nope"); err == nil || !strings.Contains(err.Error(), `no example fabric "nope"`) {
		t.Errorf("unknown fabric example: %v", err)
	}
	if _, err := Open("example:nope"); err == nil || !strings.Contains(err.Error(), "hosts: ") || !strings.Contains(err.Error(), "fabrics: qdr-lab") {
		t.Errorf("unknown example: %v", err)
	}
	for _, n := range examples.Names() {
		if s, err := Host("example:" + n); err != nil || s.Hostname == "" {
			t.Errorf("%s: %v", n, err)
		}
	}
}

// Standard input is read as a named file is, and refused files keep
// userfile's one line.
func TestRead(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(testhost.SharedTestdata(t), "ibtools/azure-hbv3/ibstat.txt"))
	if err != nil {
		t.Fatal(err)
	}
	crlf := bytes.ReplaceAll(b, []byte("\n"), []byte("\r\n"))
	in, err := Read(bytes.NewReader(crlf), "-", userfile.ToolOutput)
	if err != nil || in.Name != "(stdin)" || in.Format == nil || in.Format.Name != "ibstat" || bytes.Contains(in.Data, []byte("\r")) {
		t.Fatalf("%v %v", in, err)
	}
	_, err = Read(nil, t.TempDir(), userfile.ToolOutput)
	var ue *userfile.Error
	if !errors.As(err, &ue) || !errors.Is(err, userfile.ErrIsDir) {
		t.Errorf("a directory: %v", err)
	}
	// A snapshot that claims to be one and is not is an error naming the file.
	p := filepath.Join(t.TempDir(), "broken.json")
	os.WriteFile(p, []byte(`{"kind":"host-snapshot","schema_version":1,"payload":{"hostname":"x","schema_version":99}}`), 0o644)
	if _, err := Open(p); err == nil || !strings.Contains(err.Error(), "broken.json: schema_version 99 is newer") {
		t.Errorf("newer snapshot: %v", err)
	}
}

// Classify never panics, and calls bytes a snapshot, a document or a
// results log only when that kind's own reader reads them.
func FuzzClassify(f *testing.F) {
	// A small host (one RDMA device, no PCI tree): large seeds make each
	// run slow and the search shallow.
	h, _ := examples.Load("r730-qdr")
	h.PCIDevices, h.RDMADevices = nil, h.RDMADevices[:1]
	var hb, fb, db bytes.Buffer
	h.Encode(&hb)
	fab, _ := examples.LoadFabric("qdr-lab")
	fab.Encode(&fb)
	envelope.Write(&db, envelope.HostSnapshot, nil, h)
	for _, b := range [][]byte{hb.Bytes(), fb.Bytes(), db.Bytes(), []byte(`{"hostname":"x"}`), []byte(`[{"check":"a","outcome":"fail"}]`),
		[]byte(`{"format":"rdmalab-bench-results"}` + "\n"), []byte("CA 'mlx5_0'\n\tPort 1:\n\t\tState: Active\n"), []byte(`{"a":1,"b":2}`)} {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		in, err := Classify("fuzz", b)
		if err != nil {
			return
		}
		switch in.What {
		case HostSnapshot:
			if _, err := host.DecodeBytes(b); err != nil {
				t.Fatalf("called a host snapshot, host's reader says %v", err)
			}
			if in.Host == nil || in.Host.SchemaVersion != host.SchemaVersion {
				t.Fatalf("host snapshot %+v", in.Host)
			}
		case FabricSnapshot:
			if in.Fabric == nil {
				t.Fatal("a fabric snapshot without the fabric")
			}
			if _, err := fabric.Decode(bytes.NewReader(b)); err != nil {
				t.Fatalf("called a fabric snapshot, fabric's reader says %v", err)
			}
		case ResultsLog:
			if _, _, _, err := bench.Results.Parse(b); err != nil {
				t.Fatalf("called a results log, bench's reader says %v", err)
			}
		case Document:
			if _, err := envelope.Peek(b); err != nil {
				t.Fatalf("called a document, envelope says %v", err)
			}
		case Unknown:
			if in.Why == "" {
				t.Fatal("unknown without why")
			}
		}
	})
}

// A host is read from a snapshot file, bare or in its envelope, as from
// the tree it was made of; anything else is refused naming the file and
// what it is.
func TestHostRefuses(t *testing.T) {
	dir := t.TempDir()
	put := func(name string, b []byte) string { return write(t, dir, name, b) }
	root := testhost.WriteTree(t, testhost.R730())
	tree, err := Host(root)
	if err != nil {
		t.Fatal(err)
	}
	var bareSnap, docSnap, fabricDoc bytes.Buffer
	tree.Encode(&bareSnap)
	envelope.Write(&docSnap, envelope.HostSnapshot, nil, tree)
	envelope.Write(&fabricDoc, envelope.FabricSnapshot, nil, map[string]any{"schema_version": 1, "nodes": []any{}})
	for _, p := range []string{put("bare.json", bareSnap.Bytes()), put("doc.json", docSnap.Bytes())} {
		s, err := Host(p)
		if err != nil || s.Hostname != tree.Hostname || s.RDMADevices[0].NodeGUID != tree.RDMADevices[0].NodeGUID {
			t.Errorf("%s: %v", p, err)
		}
	}
	for _, c := range []struct{ file, want string }{
		{put("fabric.json", fabricDoc.Bytes()), "fabric.json is a fabric-snapshot document, not a host snapshot"},
		{put("old-fabric.json", []byte(`{"schema_version": 1, "collected_at": "2026-01-01T00:00:00Z", "nodes": [], "ports": [], "subnet_managers": []}`)), "old-fabric.json is a fabric-snapshot document, not a host snapshot"},
		{put("doctor.json", []byte(`{"kind":"doctor","schema_version":1,"findings":[]}`)), "doctor.json is a doctor document, not a host snapshot"},
		{put("notes.txt", []byte("hello\n")), "notes.txt: not a directory, a capture"},
		{put("empty.json", nil), "empty.json: not a directory, a capture"},
		{put("hello.json", []byte(`{"hello": "world"}`)), "hello.json: not a snapshot: no schema_version"},
		{put("no-host.json", []byte(`{"schema_version": 2}`)), "no-host.json: not a directory, a capture"},
		{put("newer.json", []byte(`{"hostname": "x", "schema_version": 99}`)), "newer.json: schema_version 99 is newer"},
	} {
		_, err := Host(c.file)
		if err == nil || !strings.HasPrefix(err.Error(), filepath.Join(dir, c.want)) {
			t.Errorf("%v, want %q", err, c.want)
		}
	}
}

// A fabric snapshot file is read, bare or in its envelope, and so is a
// saved fabric tool output (read by its format, as judge reads it);
// anything else is one line naming the file and what it is.
func TestFabricRefuses(t *testing.T) {
	dir := t.TempDir()
	put := func(name string, b []byte) string { return write(t, dir, name, b) }
	fab, _ := examples.LoadFabric("qdr-lab")
	var bareFab, docFab, hostDoc, checkDoc bytes.Buffer
	fab.Encode(&bareFab)
	envelope.Write(&docFab, envelope.FabricSnapshot, nil, fab)
	envelope.Write(&hostDoc, envelope.HostSnapshot, nil, map[string]any{"schema_version": 1, "hostname": "n1"})
	envelope.Write(&checkDoc, envelope.FabricCheck, nil, fab)
	for _, p := range []string{put("bare.json", bareFab.Bytes()), put("doc.json", docFab.Bytes())} {
		if s, err := Fabric(p); err != nil || len(s.Links()) != len(fab.Links()) {
			t.Errorf("%s: %v", p, err)
		}
	}
	links := filepath.Join(testhost.SharedTestdata(t), "ibtools/iblinkinfo/xcat-edr-2node_SB7700_iblinkinfo.txt")
	if s, err := Fabric(links); err != nil || len(s.Links()) != 3 {
		t.Errorf("saved iblinkinfo: %v", err)
	}
	for _, c := range []struct{ file, want string }{
		{put("host.json", hostDoc.Bytes()), "host.json: this is a host-snapshot document (rdmalab inventory), not a fabric snapshot"},
		{put("check.json", checkDoc.Bytes()), "check.json: this is a fabric-check document (rdmalab fabric check: findings, not the fabric), not a fabric snapshot"},
		{put("ibstat.txt", []byte("CA 'mlx5_0'\n\tPort 1:\n\t\tState: Active\n")), "ibstat.txt: a saved ibstat output, not a fabric: rdmalab judge reads it"},
		{put("notes.txt", []byte("hello\n")), "notes.txt: not a fabric snapshot"},
	} {
		_, err := Fabric(c.file)
		if err == nil || !strings.HasPrefix(err.Error(), filepath.Join(dir, c.want)) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%v, want %q", err, c.want)
		}
	}
}

func write(t *testing.T, dir, name string, b []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// Load reads and says what each input is; it judges nothing (the judge
// step does, once): a bare host brings no finding, a results log and a
// saved tool output wait for the judge.
func TestLoadReadsOnly(t *testing.T) {
	dir := t.TempDir()
	log, err := os.ReadFile("../report/testdata/bench-tcp-loopback/bw.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	in, err := Load([]string{"example:r730-qdr", write(t, dir, "bw.jsonl", log),
		write(t, dir, "ibstat.txt", []byte("CA 'mlx5_0'\n\tCA type: MT4123\n\tNumber of ports: 1\n\tPort 1:\n\t\tState: Active\n\t\tRate: 200\n"))})
	if err != nil {
		t.Fatal(err)
	}
	if len(in.Hosts) != 1 || len(in.Logs) != 1 || len(in.Saved) != 1 || in.Saved[0].Format.Name != "ibstat" {
		t.Errorf("%d hosts, %d logs, %d saved outputs", len(in.Hosts), len(in.Logs), len(in.Saved))
	}
	if len(in.Findings)+len(in.Derived)+len(in.Bench) != 0 {
		t.Errorf("Load judged: %d findings, derived %q, %d bench runs", len(in.Findings), in.Derived, len(in.Bench))
	}
}
