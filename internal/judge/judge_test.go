package judge

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/rdmalab/rdmalab/internal/check"
	"github.com/rdmalab/rdmalab/internal/fabric"
	"github.com/rdmalab/rdmalab/internal/formats"
	"github.com/rdmalab/rdmalab/internal/host"
	"github.com/rdmalab/rdmalab/internal/linkrate"
	"github.com/rdmalab/rdmalab/internal/testhost"
)

func TestMain(m *testing.M) { os.Exit(testhost.Main(m)) }

// Every real tool output in the shared test data (IB tools, topologies,
// perftest, nccl-tests, NCCL_DEBUG logs),
// through judge: which format claims it (or none: exit 2 naming it), and
// the outcome counts. A reviewed table: a change in any verdict shows here.
func TestJudgeEveryRealOutput(t *testing.T) {
	root := testhost.SharedTestdata(t)
	const nccl = "nccl-tests / NCCL_DEBUG"
	const ras = "ncclras (NCCL RAS)"
	const topo = "nvidia-smi topo -m"
	cases := []struct {
		file                      string
		format                    string // "" = not recognised
		fail, warn, unknown, pass int
	}{
		{"ibtools/azure-hbv3/ibdev2netdev_ibv_devices.txt", "", 0, 0, 0, 0},
		{"ibtools/azure-hbv3/ibstat.txt", "ibstat", 0, 0, 0, 2},
		{"ibtools/azure-hbv3/ibv_devinfo.txt", "ibv_devinfo", 0, 0, 0, 2},
		{"ibtools/cx7-ndr-b2b/mlxlink_show_mo_NDR_osfp_dac.txt", "mlxlink / mstlink", 0, 0, 0, 6},
		{"ibtools/gpud-ibstat/ibstat.39.0.a100.failed.ibpanic.exit-255.0.txt", "ibstat", 0, 0, 1, 24},
		{"ibtools/gpud-ibstat/ibstat.47.0.a100.all.active.0.txt", "ibstat", 0, 0, 0, 25},
		{"ibtools/gpud-ibstat/ibstat.47.0.h100.all.active.0.txt", "ibstat", 0, 0, 0, 24},
		{"ibtools/gpud-ibstat/ibstat.47.0.h100.all.active.1.txt", "ibstat", 0, 0, 0, 24},
		{"ibtools/gpud-ibstat/ibstat.47.0.h100.all.active.2.txt", "ibstat", 0, 0, 0, 25},
		{"ibtools/gpud-ibstat/ibstat.47.0.h100.some.down.0.txt", "ibstat", 0, 0, 0, 28},
		{"ibtools/gpud-ibstat/ibstat.47.0.h100.some.down.1.txt", "ibstat", 0, 2, 0, 20},
		{"ibtools/gpud-ibstat/ibstatus.39.0.a100.all.active.0.txt", "ibstatus", 0, 0, 0, 25},
		{"ibtools/h20-cx7-ndr200/ibstatus_2X-NDR_redacted.txt", "ibstatus", 0, 0, 0, 2},
		{"ibtools/ibdev2netdev/imbue-cluster-health-issue-4_H100_CX7-IB_CX6-eth_column-t_annotated.txt", "", 0, 0, 0, 0},
		{"ibtools/iblinkinfo/centos-qdr-infiniscale-iv_ibhosts_ibswitches_ibnodes.txt", "", 0, 0, 0, 0},
		{"ibtools/iblinkinfo/nccl-tests-issue-71_HDR-MQM8700_SHARP-aggnode_iblinkinfo_excerpt.txt", "iblinkinfo", 0, 0, 1, 3},
		{"ibtools/iblinkinfo/xcat-edr-2node_SB7700_iblinkinfo.txt", "iblinkinfo", 0, 0, 1, 2},
		{"ibtools/ibqueryerrors/ompi-users-2009_ibcheckerrors_legacy_InfiniscaleIII.txt", "ibcheckerrors", 2, 0, 0, 0},
		{"ibtools/ibstat/deepep-issue-303_H20_CX7-NDR-IB_excerpt.txt", "ibstat", 0, 0, 0, 5},
		{"ibtools/ibstat/l2fwd-nv-issue-6_CX6Dx-RoCE-100_complete.txt", "ibstat", 0, 0, 0, 2},
		{"ibtools/ibstat/mooncake-issue-1999_CX7-RoCE-200_CX6Dx-down_excerpt.txt", "ibstat", 0, 0, 0, 3},
		{"ibtools/ibstat/nccl-tests-issue-128_CX6-HDR_one-port-Down-Disabled-lid65535_CX4Lx_excerpt.txt", "ibstat", 0, 1, 0, 3},
		{"ibtools/ibstat/nccl-tests-issue-350_n013_CX4Lx-eth_CX6-HDR-IB_complete.txt", "ibstat", 0, 0, 0, 5},
		{"ibtools/ibstat/sglang-issue-6823_H20-3e_CX6Dx-eth-down_CX7_excerpt.txt", "ibstat", 0, 0, 1, 2},
		{"ibtools/ibv_devinfo/deepep-issue-38_H100_CX7-RoCE_multi-hca_excerpt.txt", "ibv_devinfo", 0, 0, 2, 1},
		{"ibtools/ibv_devinfo/deepep-issue-55_BlueField3-4126_IB_multi-hca_excerpt.txt", "ibv_devinfo", 0, 0, 1, 2},
		{"ibtools/ibv_devinfo_v/infinity-issue-5_mlx4_ConnectX-3_ibv_devinfo-v_excerpt.txt", "ibv_devinfo", 0, 0, 1, 0},
		{"ibtools/ibv_devinfo_v/libfabric-issue-8256_mlx5_2_CX5-4121_ibv_devinfo-v_excerpt.txt", "ibv_devinfo", 0, 0, 1, 0},
		{"ibtools/ibv_devinfo_v/ompi-pr-6184_mlx5_ConnectX-5_MOFED-exp_ibv_devinfo-v_excerpt.txt", "ibv_devinfo", 0, 0, 1, 0},
		{"ibtools/ibv_devinfo_v/ucx-issue-5148_qedr0_QLogic-FastLinQ_ibv_devinfo-v_excerpt.txt", "ibv_devinfo", 0, 0, 1, 0},
		{"ibtools/infiniband_exporter/ibnetdiscover/test.out", "ibnetdiscover -p", 0, 0, 1, 1},
		{"ibtools/infiniband_exporter/ibnetdiscover/test2.out", "ibnetdiscover -p", 0, 0, 1, 0},
		{"ibtools/infiniband_exporter/ibnetdiscover/test3.out", "ibnetdiscover -p", 0, 0, 1, 0},
		{"ibtools/infiniband_exporter/ibswinfo/test-err1.out", "", 0, 0, 0, 0},
		{"ibtools/infiniband_exporter/ibswinfo/test-err2.out", "", 0, 0, 0, 0},
		{"ibtools/infiniband_exporter/ibswinfo/test-err3.out", "", 0, 0, 0, 0},
		{"ibtools/infiniband_exporter/ibswinfo/test1-missing.out", "", 0, 0, 0, 0},
		{"ibtools/infiniband_exporter/ibswinfo/test1.out", "", 0, 0, 0, 0},
		{"ibtools/infiniband_exporter/ibswinfo/test2.out", "", 0, 0, 0, 0},
		{"ibtools/infiniband_exporter/ibswinfo/test3.out", "", 0, 0, 0, 0},
		{"ibtools/infiniband_exporter/perfquery/0x506b4b03005c2740.out", "", 0, 0, 0, 0},
		{"ibtools/infiniband_exporter/perfquery/0x506b4b0300cc02a6.out", "", 0, 0, 0, 0},
		{"ibtools/infiniband_exporter/perfquery/0x7cfe9003003b4b96.out", "", 0, 0, 0, 0},
		{"ibtools/infiniband_exporter/perfquery/0x7cfe9003003b4bde.out", "", 0, 0, 0, 0},
		{"ibtools/infiniband_exporter/perfquery/0x7cfe9003009ce5b0.out", "", 0, 0, 0, 0},
		{"ibtools/infiniband_exporter/perfquery-rcv-error/0x506b4b03005c2740-1.out", "", 0, 0, 0, 0},
		{"ibtools/infiniband_exporter/perfquery-rcv-error/0x7cfe9003003b4b96-1.out", "", 0, 0, 0, 0},
		{"ibtools/infiniband_exporter/perfquery-rcv-error/0x7cfe9003003b4bde-1.out", "", 0, 0, 0, 0},
		{"ibtools/infiniband_exporter/perfquery-rcv-error/0x7cfe9003009ce5b0-1.out", "", 0, 0, 0, 0},
		{"ibtools/infiniband_exporter/perfquery-rcv-error/0x7cfe9003009ce5b0-2.out", "", 0, 0, 0, 0},
		{"ibtools/roce-cx5-sriov-vf-k8s/ibstat_vf_port_down.txt", "ibstat", 1, 0, 0, 0},
		{"ibtools/roce-cx5-sriov-vf-k8s/ibv_devices_in_pod_truncated.txt", "", 0, 0, 0, 0},
		{"ibtools/roce-cx5-sriov-vf-k8s/ibv_devinfo_vf_port_down.txt", "ibv_devinfo", 1, 0, 0, 0},
		{"ibtools/stmatengss-mlx4/ibstat_4129f2daa9bf.txt", "ibstat", 0, 0, 0, 3},
		{"ibtools/stmatengss-mlx4/ibv_devinfo_4129f2daa9bf.txt", "ibv_devinfo", 0, 0, 0, 3},
		{"ibtools/superbench/ib_traffic_topo_aware_hostfile", "", 0, 0, 0, 0},
		{"ibtools/superbench/ib_traffic_topo_aware_ibstat.txt", "", 0, 0, 0, 0},
		{"ibnetdiscover/ibsim-net-examples/examples.README", "", 0, 0, 0, 0},
		{"ibnetdiscover/ibsim-net-examples/ibsim-README", "", 0, 0, 0, 0},
		{"ibnetdiscover/ibsim-net-examples/net", "ibnetdiscover", 0, 0, 1, 0},
		{"ibnetdiscover/ibsim-net-examples/net.1", "ibnetdiscover", 0, 0, 1, 0},
		{"ibnetdiscover/ibsim-net-examples/net.2sw2path", "ibnetdiscover", 0, 0, 1, 0},
		{"ibnetdiscover/ibsim-net-examples/net.2sw2path4hca", "ibnetdiscover", 0, 0, 1, 0},
		{"ibnetdiscover/ibsim-net-examples/net.2sw2path4hca2port", "ibnetdiscover", 0, 0, 1, 0},
		{"ibnetdiscover/ndr-qm9700-129port-split-2xNDR_REDACTED_TRUNCATED.txt", "ibnetdiscover", 0, 0, 0, 1},
		{"ibnetdiscover/superbench_topo_aware_ibnetdiscover_FAKED.txt", "ibnetdiscover", 0, 0, 0, 1},
		// perftest, nccl-tests and NCCL_DEBUG logs. A file holding several
		// runs is judged run by run (internal/bench asserts each finding).
		{"perftest/azure-hbv3_ib_send_bw_all_client.txt", "perftest", 0, 0, 1, 2},
		{"perftest/azure-hbv3_ib_send_bw_all_server.txt", "perftest", 0, 0, 1, 2},
		{"perftest/azure-hbv3_ib_send_lat_all_server.txt", "perftest", 0, 1, 0, 1},
		{"perftest/azure-hbv3_ib_write_bw_loopback_interleaved.txt", "perftest", 0, 1, 1, 1},
		{"perftest/cx7-ndr-b2b-perftest25/_session_transcript.txt", "perftest", 0, 4, 3, 5},
		{"perftest/cx7-ndr-b2b-perftest25/ib_read_bw.txt", "perftest", 0, 1, 1, 1},
		{"perftest/cx7-ndr-b2b-perftest25/ib_send_bw.txt", "perftest", 0, 1, 1, 1},
		{"perftest/cx7-ndr-b2b-perftest25/ib_send_lat.txt", "perftest", 0, 1, 0, 2},
		{"perftest/cx7-ndr-b2b-perftest25/ib_write_bw.txt", "perftest", 0, 1, 1, 1},
		{"perftest/json/perftest-issue-216_rxe0_ib_write_lat_out_json_INVALID-JSON.txt", "", 0, 0, 0, 0},
		{"perftest/roce-cx5-k8s-cu05-cu07/ib_atomic_bw_roce_client.txt", "perftest", 0, 2, 1, 0},
		{"perftest/roce-cx5-k8s-cu05-cu07/ib_read_bw_roce_client.txt", "perftest", 0, 2, 1, 0},
		{"perftest/roce-cx5-k8s-cu05-cu07/ib_send_bw_roce_client.txt", "perftest", 0, 2, 1, 0},
		{"perftest/stmatengss-mlx4-qdr/_full_transcript_excerpt.txt", "perftest", 0, 12, 5, 4},
		{"perftest/stmatengss-mlx4-qdr/ib_atomic_bw_4bfed8618b1d.txt", "perftest", 0, 2, 1, 0},
		{"perftest/stmatengss-mlx4-qdr/ib_atomic_lat_4bfed8618b1d.txt", "perftest", 0, 2, 0, 1},
		{"perftest/stmatengss-mlx4-qdr/ib_read_bw_4bfed8618b1d.txt", "perftest", 0, 2, 1, 0},
		{"perftest/stmatengss-mlx4-qdr/ib_read_bw_teaker-11.txt", "perftest", 0, 1, 1, 0},
		{"perftest/stmatengss-mlx4-qdr/ib_read_lat_4bfed8618b1d.txt", "perftest", 0, 1, 0, 1},
		{"perftest/stmatengss-mlx4-qdr/ib_send_bw_4bfed8618b1d.txt", "perftest", 0, 1, 1, 0},
		{"perftest/stmatengss-mlx4-qdr/ib_send_lat_4bfed8618b1d.txt", "perftest", 0, 1, 0, 1},
		{"perftest/stmatengss-mlx4-qdr/ib_write_bw_4bfed8618b1d.txt", "perftest", 0, 1, 1, 0},
		{"perftest/stmatengss-mlx4-qdr/ib_write_lat_4bfed8618b1d.txt", "perftest", 0, 1, 0, 1},
		{"perftest/superbench/ib_loopback_8M_size.log", "perftest", 0, 0, 1, 1},
		{"perftest/superbench/ib_loopback_all_sizes.log", "perftest", 0, 0, 1, 1},
		{"perftest-latency/k8s-61-62-softroce-capture-notes_rxe0_ib_write_lat_n5_s64_server-then-client_p99-equals-max.txt", "perftest", 0, 4, 0, 0},
		{"perftest-latency/mlx4-ib-notes-zh_mlx4_0_ib_read_lat-and-ib_write_lat_cpu-freq-warnings-inside-table_tab-padded-rows.txt", "perftest", 0, 6, 0, 0},
		{"perftest-warnings/ocp-sriov-gpudirect-doc-A_mlx5_4_ib_write_bw_use_cuda_T4_RoCE-vf_RO-not-compliant-warning_client.txt", "perftest", 0, 2, 1, 0},
		{"perftest-warnings/ocp-sriov-gpudirect-doc-A_mlx5_5_ib_write_bw_use_cuda_T4_RoCE-vf_RO-not-compliant-warning_server.txt", "perftest", 0, 2, 1, 0},
		{"nccl-tests/alps-gh200-slingshot/2node-8gh200_all_reduce_perf_nccl-tests-2.17.1_libfabric-cxi.txt", nccl, 0, 1, 1, 2},
		{"nccl-tests/json/nccl-tests-pr-318_alltoall_json_TRUNCATED.txt", nccl, 1, 0, 1, 1},
		{"nccl-tests/rtx3090-inc/1gpu-1nic_INC_rdma-mtu256.txt", nccl, 0, 0, 1, 2},
		{"nccl-tests/rtx3090-inc/1gpu-1nic_NO-INC.txt", nccl, 0, 1, 1, 2},
		{"nccl-tests/rtx3090-inc/2node-2gpu-2nic_INC_rdma-mtu256_WRONG-108-FAILED.txt", nccl, 1, 0, 1, 1},
		{"nccl-tests/rtx3090-inc/2node-2gpu-2nic_NO-INC_rdma-mtu1024.txt", nccl, 0, 0, 1, 2},
		{"nccl-tests/rtx3090-inc/2node-2gpu-2nic_NO-INC_rdma-mtu256.txt", nccl, 0, 0, 1, 2},
		{"nccl-tests/rtx3090-inc/3node-3gpu-3nic_NO-INC_rdma-mtu256_ucx-warnings.txt", nccl, 0, 0, 1, 2},
		{"nccl-tests/superbench/nccl_allgather.log", nccl, 0, 0, 2, 1},
		{"nccl-tests/superbench/nccl_allreduce.log", nccl, 0, 0, 2, 1},
		{"nccl-tests/superbench/nccl_alltoall.log", nccl, 0, 0, 2, 1},
		{"nccl-tests/superbench/nccl_broadcast.log", nccl, 0, 0, 2, 1},
		{"nccl-tests/superbench/nccl_reduce.log", nccl, 0, 0, 2, 1},
		{"nccl-tests/superbench/nccl_reducescatter.log", nccl, 0, 0, 2, 1},
		{"nccl-debug/alps-gh200_aws-ofi-plugin-not-found_WARN.log", nccl, 3, 0, 1, 1},
		{"nccl-debug/azure-nd96isr-h100-v5_mixed-IB-RoCE-devices_excerpt.log", nccl, 0, 1, 0, 3},
		{"nccl-debug/nccl-issue-1232_socket-ifname_mpi-prefixed_excerpt.log", nccl, 0, 0, 2, 2},
		{"nccl-debug/nccl-issue-1537_RoCE_GDR-disabled_excerpt.log", nccl, 0, 1, 0, 1},
		{"nccl-debug/nccl-issue-1866_H100-2vm_nccl-2.27.6_init_excerpt.log", nccl, 0, 0, 2, 2},
		{"nccl-debug/nccl-issue-367_old-ring-format_NET-Socket_shm_excerpt.log", nccl, 1, 0, 0, 0},
		{"nccl-debug/nccl-issue-398_aws-2node_P2P-IPC_NET-Socket_excerpt.log", nccl, 2, 0, 0, 0},
		{"nccl-debug/nccl-issue-952_hpcx-IBext-plugin_NET-IB-no-device_excerpt.log", nccl, 0, 0, 0, 1},
		{"nccl-debug/nccl-tests-issue-188_no-plugin-internal-impl_excerpt.log", nccl, 0, 0, 1, 1},
		{"nccl-debug/nccl-tests-issue-350_A100-2node_mixed-RoCE-IB_NCCL-TRACE_gather_perf_NO-AVG-LINE.log", nccl, 1, 3, 2, 4},
		{"nccl-debug/nv_peer_memory-issue-56_2node_NET-IB-mlx5_0-IB_nccl-2.5.6_excerpt.log", nccl, 0, 0, 1, 3},
		{"nccl-debug/sglang-2node-roce-ofi-fallback-to-ib_excerpt-A.log", nccl, 0, 1, 0, 1},
		// check IDs, hosts and ranks of these: nccl.TestRASEveryCapture
		{"ncclras/nccl-docs-example-08_ras_exit-fault_rank7_INCOMPLETE_communicators-section-only_masked.txt", ras, 1, 0, 0, 2},
		{"ncclras/nccl-docs-example-08_ras_ncclras-v_2.30.7_2node-8rank_healthy-RUNNING-OK_masked.txt", ras, 0, 0, 0, 3},
		{"ncclras/nccl-docs-example-08_ras_sleep-fault_rank7-straggler_MISMATCH-AllReduce-64-vs-60_table-onward_masked.txt", ras, 0, 1, 0, 2},
		{"ncclras/nccl-docs-ras-rst_ncclras-f-json_2.29.1_1-of-2-ranks-missing-unresponsive_rst-indented-2-spaces.json", ras, 1, 0, 0, 2},
		{"ncclras/nccl-issue-1911_2.26.2_4node-32rank_MISMATCH-AllGather-640-vs-641_two-ranks-ahead.txt", ras, 0, 1, 0, 2},
		{"ncclras/ray-test-nv-hang-detector_HEALTHY_RAS_JSON_2.28.9_1node-2rank_empty-missing-ranks-array.json", ras, 0, 0, 0, 3},
		// check IDs and subjects of these: newformats_test.go
		{rdmaLinkCapture, "rdma link", 0, 0, 0, 4},
		{rdmaStatCapture, "rdma statistic", 0, 0, 0, 1},
		{rdmaQPCapture, "rdma statistic", 0, 0, 0, 1},
		{rdmaResourceShow, "", 0, 0, 0, 0},
		{lspciHDACapture, "lspci -vvv", 0, 0, 0, 0},
		{lspciACSCapture, "lspci -vvv", 0, 0, 0, 0},
		{lspciDellCapture, "lspci -vvv", 0, 0, 0, 20},
		// check IDs and subjects of these: gpudirect.TestJudgeTopoReal
		{"nvidia-smi-topo/club-3090-issue-1229_2xRTX5090-workstation_PHB_no-nic.txt", topo, 0, 1, 0, 0},
		{"nvidia-smi-topo/deepseek-local-notes-zh_5900X_2xRTX3090-NV4-bridge_nvlink-s-then-topo_uuid-redacted_prompts.txt", topo, 0, 3, 0, 0},
		{"nvidia-smi-topo/gpu-comm-blog-zh_h200-8gpu-NV18_9nic-PIX-rails_mlx5_bond_0_author-reformatted-spaces-ruler-translated-legend.txt", topo, 0, 0, 0, 9},
		{"nvidia-smi-topo/mpi-gpu-compress-readme_8xA100-NV12_10nic-PXB-pairs_2-storage-nic-SYS_4numa-epyc.txt", topo, 0, 2, 0, 9},
		{"nvidia-smi-topo/nvlink-notes_3xRTX-A6000_gpu0-gpu1-NV4-bridge_gpu2-NODE_no-nic_prompt-gt.txt", topo, 0, 1, 0, 0},
		{"nvidia-smi-topo/polaris-alcf-doc_4xA100-NV4_2nic-old-mlx5-columns_header-missing-leading-tab_4numa.txt", topo, 0, 4, 0, 0},
		{"nvidia-smi-topo/rhel-ai-kvm-guest_8xH100-NV18-in-vm_single-numa-0-63_no-nic_plus-nvlink-status-author-snipped.txt", topo, 0, 1, 0, 1},
		{"topology-misc/nccl-issue-1737_nvidia-smi-topo-m_H100-6nic_partial.txt", topo, 0, 1, 5, 2},
		{"topology-misc/nccl-tests-issue-350_n013_nvidia-smi-topo-m_A100-PCIe_4nic.txt", topo, 0, 3, 0, 0},
	}
	seen := map[string]bool{}
	for _, c := range cases {
		seen[c.file] = true
		t.Run(c.file, func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join(root, c.file))
			if err != nil {
				t.Fatal(err)
			}
			r, err := One(c.file, b, Options{})
			if c.format == "refused" {
				if err == nil || !strings.Contains(err.Error(), c.file) || !strings.Contains(err.Error(), "line") {
					t.Errorf("want a refusal naming the file and line, got %v", err)
				}
				return
			}
			if c.format == "" {
				var ue *formats.UnrecognisedError
				if !errors.As(err, &ue) || !strings.Contains(err.Error(), c.file) {
					t.Errorf("want unrecognised naming the file, got %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			n := check.Count(r.Findings)
			if r.Format != c.format || n[check.Fail] != c.fail || n[check.Warn] != c.warn || n[check.Unknown] != c.unknown || n[check.Pass] != c.pass {
				t.Errorf("%s fail=%d warn=%d unknown=%d pass=%d, want %s %d %d %d %d", r.Format, n[check.Fail], n[check.Warn], n[check.Unknown], n[check.Pass],
					c.format, c.fail, c.warn, c.unknown, c.pass)
				for _, f := range r.Findings {
					t.Logf("  %s %s %s: %s", f.Outcome, f.Check, f.Subject, f.Message)
				}
			}
		})
	}
	for _, dir := range []string{"ibtools", "ibnetdiscover", "perftest", "perftest-latency", "perftest-warnings", "nccl-tests", "nccl-debug", "ncclras", "nvidia-smi-topo", "lspci", "rdma-tool"} {
		filepath.Walk(filepath.Join(root, dir), func(p string, info os.FileInfo, err error) error {
			if err == nil && !info.IsDir() {
				rel, _ := filepath.Rel(root, p)
				if !seen[rel] {
					t.Errorf("%s: a real output with no asserted outcome", rel)
				}
			}
			return nil
		})
	}
}

// What the verdicts say on a few files, beyond the counts.
func TestJudgeVerdicts(t *testing.T) {
	root := testhost.SharedTestdata(t)
	one := func(file string, opt Options) []check.Finding {
		b, err := os.ReadFile(filepath.Join(root, file))
		if err != nil {
			t.Fatal(err)
		}
		r, err := One(file, b, opt)
		if err != nil {
			t.Fatal(err)
		}
		return r.Findings
	}
	has := func(fs []check.Finding, out check.Outcome, id, text string) {
		t.Helper()
		for _, f := range fs {
			if f.Outcome == out && f.Check == id && strings.Contains(f.Subject+": "+f.Message, text) {
				return
			}
		}
		t.Errorf("no %s %s with %q in %+v", out, id, text, fs)
	}
	r200, _ := linkrate.ParseRate("200")
	r400, _ := linkrate.ParseRate("4X NDR")
	// ibpanic part way: unknown, not a pass for the devices not read.
	has(one("ibtools/gpud-ibstat/ibstat.39.0.a100.failed.ibpanic.exit-255.0.txt", Options{}), check.Unknown, "port.state", "rdma devices: the RDMA devices were not all read: ibstat failed part way")
	// --expect-rate applies: a 2X NDR (200) port against 4X NDR.
	has(one("ibtools/h20-cx7-ndr200/ibstatus_2X-NDR_redacted.txt", Options{Expect: linkrate.Expect{Rate: r400, Source: "--expect-rate"}}), check.Fail, "port.rate.below-expected", "mlx5_7 port 1: runs at 200 Gb/s (200 Gb/sec (2X NDR)), expected 4X NDR (400 Gb/s) (--expect-rate)")
	has(one("ibtools/h20-cx7-ndr200/ibstatus_2X-NDR_redacted.txt", Options{Expect: linkrate.Expect{Rate: r200, Source: "--expect-rate"}}), check.Pass, "port.rate.below-expected", "as expected (--expect-rate)")
	// --expect-link-layer: the RoCE ports of a mixed host.
	has(one("ibtools/ibstat/nccl-tests-issue-350_n013_CX4Lx-eth_CX6-HDR-IB_complete.txt", Options{Expect: linkrate.Expect{Layer: linkrate.InfiniBand, Source: "--expect-link-layer"}}), check.Fail, "port.link-layer", "mlx5_0 port 1: link layer is RoCE (Ethernet), expected InfiniBand")
	// perftest: the layer is the one it printed (RoCE here), so expecting
	// InfiniBand is a finding; one latency run gets a verdict of its own.
	roce := "perftest/roce-cx5-k8s-cu05-cu07/ib_send_bw_roce_client.txt"
	has(one(roce, Options{Expect: linkrate.Expect{Layer: linkrate.InfiniBand, Source: "--expect-link-layer"}}), check.Fail, "bench.perftest.link-layer", "over RoCE (Link type: Ethernet), not the expected InfiniBand")
	has(one(roce, Options{}), check.Warn, "bench.perftest.mtu", "RoCE MTU 1024, not 4096")
	has(one("perftest/stmatengss-mlx4-qdr/ib_send_lat_4bfed8618b1d.txt", Options{}), check.Pass, "bench.perftest.latency", "typical 1.07 µs")
	// A disabled second port beside an Active one on the same card is a
	// spare disabled on purpose: unused, said so.
	has(one("ibtools/stmatengss-mlx4/ibstat_4129f2daa9bf.txt", Options{}), check.Pass, "port.state", "mlx4_0 port 2: unused: DOWN / Disabled while mlx4_0 port 1 on the same card is Active")
	// Two of eight rail NICs set down: a warning naming the model.
	has(one("ibtools/gpud-ibstat/ibstat.47.0.h100.some.down.1.txt", Options{}), check.Warn, "port.state", "mlx5_5 port 1: port is DOWN / Disabled while 6 of 8 ports of this host's MT4129 NICs are up")
	// A storage NIC's ports down while the main NICs run: unused.
	has(one("ibtools/gpud-ibstat/ibstat.47.0.h100.some.down.0.txt", Options{}), check.Pass, "port.state", "mlx5_7 port 1: unused: DOWN / Disabled, most likely disabled on purpose (a MT4125 NIC, not this host's main RDMA NIC model MT4129)")
	// A host whose every port is down carries no RDMA at all.
	has(one("ibtools/roce-cx5-sriov-vf-k8s/ibstat_vf_port_down.txt", Options{}), check.Fail, "port.state", "mlx5_1 port 1: port is DOWN / Disabled and no RDMA port of this host is up")
	// Legacy ibcheckerrors: the port over its threshold.
	has(one("ibtools/ibqueryerrors/ompi-users-2009_ibcheckerrors_legacy_InfiniscaleIII.txt", Options{}), check.Fail, "fabric.port.errors", "port 7 RcvSwRelayErrors: 179")
}

// Issue 11's done-when through judge, on a dump in ibnetdiscover's real
// format: healthy gives zero link findings with and without --expect-rate,
// and zero topology findings against itself; one link at 4X DDR gives one
// finding naming both ends by GUID.
func TestJudgeDump(t *testing.T) {
	dump := testhost.EDRDump(2, 4, 34) // 6 switches, 136 HCAs, 144 links
	plan, err := fabric.ParseTopology(dump)
	if err != nil {
		t.Fatal(err)
	}
	edr, _ := linkrate.ParseRate("4X EDR")
	for _, o := range []Options{{}, {Expect: linkrate.Expect{Rate: edr, Source: "--expect-rate"}}, {Plan: plan}} {
		r, err := One("dump.txt", []byte(dump), o)
		if err != nil {
			t.Fatal(err)
		}
		if r.Format != "ibnetdiscover" {
			t.Fatalf("format %s", r.Format)
		}
		for _, f := range r.Findings {
			if f.Outcome != check.Pass && (strings.HasPrefix(f.Check, "fabric.link.") || strings.HasPrefix(f.Check, "fabric.topology.") || f.Check == "fabric.port.down") {
				t.Errorf("healthy dump %+v: %s %s: %s", o.Expect, f.Check, f.Subject, f.Message)
			}
		}
	}
	bad := testhost.Degrade(dump, 3, 2, "4xDDR")
	for _, o := range []Options{{}, {Expect: linkrate.Expect{Rate: edr, Source: "--expect-rate"}}} {
		r, err := One("dump.txt", []byte(bad), o)
		if err != nil {
			t.Fatal(err)
		}
		var link []check.Finding
		for _, f := range r.Findings {
			if f.Outcome != check.Pass && strings.HasPrefix(f.Check, "fabric.link.") {
				link = append(link, f)
			}
		}
		if len(link) != 1 {
			t.Fatalf("degraded dump: %d link findings, want 1: %+v", len(link), link)
		}
		text := link[0].Subject + link[0].Message
		for _, e := range link[0].Evidence {
			text += e.Value
		}
		wants := []string{"0x248a070300c70304", "0x7cfe900300b60030", "4X DDR", "lid"}
		if !o.Expect.HasRate() {
			wants = append(wants, "135 of 136 CA↔Switch links run at 4X EDR")
		}
		for _, want := range wants {
			if !strings.Contains(text, want) {
				t.Errorf("finding lacks %q: %s", want, text)
			}
		}
	}
}

// Garbage is refused naming the file; a truncated ibqueryerrors is unknown.
func TestJudgeRefusesAndUnknowns(t *testing.T) {
	if _, err := One("notes.txt", []byte("hello\n"), Options{}); err == nil || !strings.Contains(err.Error(), "notes.txt: not a saved output") {
		t.Errorf("%v", err)
	}
	r, err := One("qe.txt", []byte("Errors for \"HCA-1\"\n   GUID 0x248a0703008a1b31 port 1: [SymbolErrorCounter == 50]\n"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if n := check.Count(r.Findings); n[check.Unknown] != 1 || n[check.Pass] != 0 {
		t.Errorf("ibqueryerrors without its summary must be unknown: %+v", r.Findings)
	}
}

var caLine = regexp.MustCompile(`^CA '[^']+'`)

// Any bytes: judge either refuses them or returns well-formed findings;
// an ibstat it reads has as many ports as "Port N:" lines under a CA.
func FuzzJudge(f *testing.F) {
	f.Add([]byte("CA 'mlx5_0'\n\tCA type: MT4123\n\tPort 1:\n\t\tState: Active\n\t\tPhysical state: LinkUp\n\t\tRate: 200\n\t\tBase lid: 3\n\t\tSM lid: 1\n\t\tLink layer: InfiniBand\n"))
	f.Add([]byte("CA   134  1 0x7cfe9003003b4bde 4x EDR - SW  1719 10 0x7cfe9003009ce5b0 ( 'o0001 HCA-1' - 'ib-i1l1s01' )\n"))
	f.Add([]byte("hca_id:\tmlx5_0\n\tvendor_part_id:\t4123\n\t\tport:\t1\n\t\t\tstate:\t\t\tPORT_ACTIVE (4)\n"))
	f.Add([]byte(testhost.EDRDump(1, 1, 1)))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := One("f", b, Options{})
		if err != nil {
			return
		}
		for _, fd := range r.Findings {
			if fd.Check == "" || fd.Outcome.Rank() < 0 || fd.Host != "f" {
				t.Fatalf("malformed finding %+v", fd)
			}
		}
		if s, ok := r.Payload.(*host.Snapshot); ok && r.Format == "ibstat" {
			n, ports := 0, 0
			for _, d := range s.RDMADevices {
				ports += len(d.Ports)
			}
			inCA := false
			for _, l := range strings.Split(string(b), "\n") {
				l = strings.Trim(l, " \t│|")
				if caLine.MatchString(l) {
					inCA = true
				}
				var port int
				if _, err := fmt.Sscanf(l, "Port %d:", &port); err == nil && inCA && strings.HasSuffix(l, ":") && l == fmt.Sprintf("Port %d:", port) {
					n++
				}
			}
			if n != ports {
				t.Fatalf("%d port headers, %d ports", n, ports)
			}
		}
	})
}

// Prose that names every tool and quotes their output in passing (the
// shared testdata's PROVENANCE.md, the project's docs) is no saved output:
// it is either recognised as none or refused by the parser that took it,
// never judged into a verdict.
func TestProseIsNoFormat(t *testing.T) {
	files := []string{filepath.Join(testhost.SharedTestdata(t), "PROVENANCE.md")}
	docs, _ := filepath.Glob("../../docs/*.md")
	files = append(files, append(docs, "../../README.md")...)
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if r, err := One(p, b, Options{}); err == nil {
			t.Errorf("%s was judged as %s output: %d findings", p, formats.Recognise(b).Name, len(r.Findings))
		}
	}
	prov, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	if f := formats.Recognise(prov); f != nil {
		t.Errorf("PROVENANCE.md, which quotes every tool's command line, is taken for %s output", f.Name)
	}
}

// ibcheckerrors pasted from pdsh or clush (a "host: " before every line)
// is still recognised and judged.
func TestCheckErrorsBehindLauncherPrefix(t *testing.T) {
	b := []byte("node7: #warn: counter RcvSwRelayErrors = 408   (threshold 100)\n" +
		"node7: Error check on lid 2 (MT47396 Infiniscale-III Mellanox Technologies) port 1:  FAILED\n")
	r, err := One("pdsh.txt", b, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if f := formats.Recognise(b); f == nil || f.Name != "ibcheckerrors" {
		t.Fatalf("recognised as %v", f)
	}
	if !slices.ContainsFunc(r.Findings, func(f check.Finding) bool {
		return f.Check == "fabric.port.errors" && f.Outcome == check.Fail && strings.Contains(f.Subject, "lid 2") && strings.Contains(f.Subject, "RcvSwRelayErrors") && strings.Contains(f.Message, "threshold 100")
	}) {
		t.Errorf("no failing fabric.port.errors on lid 2 port 1: %+v", r.Findings)
	}
}
