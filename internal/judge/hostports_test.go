package judge

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rdmalab/rdmalab/internal/check"
	"github.com/rdmalab/rdmalab/internal/host"
	"github.com/rdmalab/rdmalab/internal/hostcheck"
	"github.com/rdmalab/rdmalab/internal/linkrate"
	"github.com/rdmalab/rdmalab/internal/testhost"
)

// Every real ibstat, ibstatus and ibv_devinfo capture: judge's verdict
// equals doctor's on the snapshot the capture parses into, after that
// snapshot went through its JSON form (what `doctor --snapshot` reads),
// with and without expectations; and the findings that are not passes
// are exactly the reviewed ones (check, subject). A healthy capture
// reports nothing but passes.
func TestJudgeHostPortsEqualDoctor(t *testing.T) {
	root := testhost.SharedTestdata(t)
	issues := map[string][]string{
		"ibtools/azure-hbv3/ibstat.txt":                                                                 {},
		"ibtools/azure-hbv3/ibv_devinfo.txt":                                                            {},
		"ibtools/gpud-ibstat/ibstat.39.0.a100.failed.ibpanic.exit-255.0.txt":                            {"unknown port.state rdma devices"},
		"ibtools/gpud-ibstat/ibstat.47.0.a100.all.active.0.txt":                                         {},
		"ibtools/gpud-ibstat/ibstat.47.0.h100.all.active.0.txt":                                         {},
		"ibtools/gpud-ibstat/ibstat.47.0.h100.all.active.1.txt":                                         {},
		"ibtools/gpud-ibstat/ibstat.47.0.h100.all.active.2.txt":                                         {},
		"ibtools/gpud-ibstat/ibstat.47.0.h100.some.down.0.txt":                                          {},
		"ibtools/gpud-ibstat/ibstat.47.0.h100.some.down.1.txt":                                          {"warn port.state mlx5_11 port 1", "warn port.state mlx5_5 port 1"},
		"ibtools/gpud-ibstat/ibstatus.39.0.a100.all.active.0.txt":                                       {},
		"ibtools/h20-cx7-ndr200/ibstatus_2X-NDR_redacted.txt":                                           {},
		"ibtools/ibstat/deepep-issue-303_H20_CX7-NDR-IB_excerpt.txt":                                    {},
		"ibtools/ibstat/l2fwd-nv-issue-6_CX6Dx-RoCE-100_complete.txt":                                   {},
		"ibtools/ibstat/mooncake-issue-1999_CX7-RoCE-200_CX6Dx-down_excerpt.txt":                        {},
		"ibtools/ibstat/nccl-tests-issue-128_CX6-HDR_one-port-Down-Disabled-lid65535_CX4Lx_excerpt.txt": {"warn port.state mlx5_1 port 1"},
		"ibtools/ibstat/nccl-tests-issue-350_n013_CX4Lx-eth_CX6-HDR-IB_complete.txt":                    {},
		"ibtools/ibstat/sglang-issue-6823_H20-3e_CX6Dx-eth-down_CX7_excerpt.txt":                        {"unknown port.state mlx5_10 port 1"},
		"ibtools/ibv_devinfo/deepep-issue-38_H100_CX7-RoCE_multi-hca_excerpt.txt":                       {"unknown port.state mlx5_3", "unknown roce.mtu.path mlx5_2 port 1"},
		"ibtools/ibv_devinfo/deepep-issue-55_BlueField3-4126_IB_multi-hca_excerpt.txt":                  {"unknown port.state mlx5_4"},
		"ibtools/ibv_devinfo_v/infinity-issue-5_mlx4_ConnectX-3_ibv_devinfo-v_excerpt.txt":              {"unknown port.state mlx4_2"},
		"ibtools/ibv_devinfo_v/libfabric-issue-8256_mlx5_2_CX5-4121_ibv_devinfo-v_excerpt.txt":          {"unknown port.state mlx5_2"},
		"ibtools/ibv_devinfo_v/ompi-pr-6184_mlx5_ConnectX-5_MOFED-exp_ibv_devinfo-v_excerpt.txt":        {"unknown port.state mlx5_1"},
		"ibtools/ibv_devinfo_v/ucx-issue-5148_qedr0_QLogic-FastLinQ_ibv_devinfo-v_excerpt.txt":          {"unknown port.state qedr0"},
		"ibtools/roce-cx5-sriov-vf-k8s/ibstat_vf_port_down.txt":                                         {"fail port.state mlx5_1 port 1"},
		"ibtools/roce-cx5-sriov-vf-k8s/ibv_devinfo_vf_port_down.txt":                                    {"fail port.state mlx5_1 port 1"},
		"ibtools/stmatengss-mlx4/ibstat_4129f2daa9bf.txt":                                               {},
		"ibtools/stmatengss-mlx4/ibv_devinfo_4129f2daa9bf.txt":                                          {},
	}
	parsers := map[string]func([]byte) *host.Snapshot{"ibstat": host.ParseIBStat, "ibstatus": host.ParseIBStatus, "ibv_devinfo": host.ParseDevinfo}
	hdr, _ := linkrate.ParseRate("4X HDR")
	opts := []Options{{}, {Expect: linkrate.Expect{Rate: hdr, Source: "--expect-rate"}}, {Expect: linkrate.Expect{Layer: linkrate.InfiniBand, Source: "--expect-link-layer"}}, {Expect: linkrate.Expect{Rate: hdr, Layer: linkrate.RoCE, Source: "--expect-rate"}}}
	seen := 0
	err := filepath.Walk(filepath.Join(root, "ibtools"), func(p string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		r, err := One(rel, b, Options{})
		if err != nil || parsers[r.Format] == nil {
			return nil
		}
		seen++
		want, ok := issues[rel]
		if !ok {
			t.Errorf("%s (%s): a real capture with no reviewed verdict", rel, r.Format)
		}
		if got := notPassing(r.Findings); !slices.Equal(got, want) {
			t.Errorf("%s: not passing\n got %q\nwant %q", rel, got, want)
		}
		for _, o := range opts {
			r, err := One(rel, b, o)
			if err != nil {
				t.Fatal(err)
			}
			// The snapshot as doctor --snapshot reads it back.
			var buf bytes.Buffer
			if err := r.Payload.(*host.Snapshot).Encode(&buf); err != nil {
				t.Fatal(err)
			}
			s, err := host.DecodeBytes(buf.Bytes())
			if err != nil {
				t.Fatalf("%s: its snapshot does not load back: %v", rel, err)
			}
			doc := hostcheck.Doctor([]*host.Snapshot{s}, hostcheck.Options{Expect: o.Expect, Only: hostcheck.PortRules})
			if g, w := verdicts(r.Findings), verdicts(doc); !slices.Equal(g, w) {
				t.Errorf("%s %+v: judge\n%s\ndoctor on its snapshot\n%s", rel, o, strings.Join(g, "\n"), strings.Join(w, "\n"))
			}
			for _, f := range r.Findings {
				for _, e := range f.Evidence {
					if strings.HasPrefix(e.Source, "/sys") {
						t.Errorf("%s: %s quotes %s, a path a saved %s output never read", rel, f.Check, e.Source, r.Format)
					}
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if seen != len(issues) {
		t.Errorf("%d host-port captures judged, %d reviewed", seen, len(issues))
	}
}

// The majority of a host's own ports of one model sets the expected rate
// when no flag does: the real 8-rail capture with one port edited down
// to half rate fails that port alone, naming the majority.
func TestJudgeHostPortsHalfRatePort(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(testhost.SharedTestdata(t), "ibtools/gpud-ibstat/ibstatus.39.0.a100.all.active.0.txt"))
	if err != nil {
		t.Fatal(err)
	}
	i := bytes.Index(b, []byte("Infiniband device 'mlx5_3'"))
	j := i + bytes.Index(b[i:], []byte("200 Gb/sec (4X HDR)"))
	edited := slices.Concat(b[:j], []byte("100 Gb/sec (2X HDR)"), b[j+len("200 Gb/sec (4X HDR)"):])
	r, err := One("a100.txt", edited, Options{})
	if err != nil {
		t.Fatal(err)
	}
	got := notPassing(r.Findings)
	if !slices.Equal(got, []string{"fail port.rate.below-expected mlx5_3 port 1"}) {
		t.Fatalf("got %q", got)
	}
	for _, f := range r.Findings {
		if f.Outcome == check.Fail && !strings.Contains(f.Message, "host majority: 7 of 8") {
			t.Errorf("the failure does not say whose majority: %s", f.Message)
		}
	}
}

func notPassing(fs []check.Finding) []string {
	out := []string{}
	for _, f := range fs {
		if f.Outcome != check.Pass {
			out = append(out, string(f.Outcome)+" "+f.Check+" "+f.Subject)
		}
	}
	return out
}

func verdicts(fs []check.Finding) []string {
	var out []string
	for _, f := range fs {
		out = append(out, strings.Join([]string{string(f.Outcome), f.Check, f.Host, f.Subject, f.Message}, " | "))
	}
	return out
}
