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
// through judge: which format claims it (or none: exit 2 naming it), the
// checks that passed, and every other finding by outcome, check id and
// subject. A reviewed table: a change in any verdict shows here.
func TestJudgeEveryRealOutput(t *testing.T) {
	root := testhost.SharedTestdata(t)
	const nccl = "nccl-tests / NCCL_DEBUG"
	const ras = "ncclras (NCCL RAS)"
	const topo = "nvidia-smi topo -m"
	cases := []struct {
		file   string
		format string // "" = not recognised
		// pass is the checks that passed; bad every other finding,
		// "outcome check: subject", sorted.
		pass string
		bad  []string
	}{
		{"grace-blackwell/dra-driver-issue-626_gb200_nvidia-smi-q-grep-C3-Fabric_Completed-Success-clique2_health-Unhealthy_first-gpu-only.txt", "nvidia-smi -q (Fabric)", "", []string{"fail gpu.fabric: fabric block 1"}},
		{"grace-blackwell/gb200-4gpu-8nic_nvidia-smi-topo-m_all-NIC-SYS_gpu-numa-ids_leading-space-prompt.txt", topo, "topo.gpus topo.rail", nil},
		{"grace-blackwell/k8s-test-infra-issue-371_gb200_nvidia-smi-nvlink-s-18x53.125_and-nvlink-info-fw_author-elided_excerpt.txt", "", "", nil},
		{"ibtools/azure-hbv3/ibdev2netdev_ibv_devices.txt", "", "", nil},
		{"ibtools/azure-hbv3/ibstat.txt", "ibstat", "ib.sm port.state", nil},
		{"ibtools/azure-hbv3/ibv_devinfo.txt", "ibv_devinfo", "ib.sm port.state", nil},
		{"ibtools/cx7-ndr-b2b/mlxlink_show_mo_NDR_osfp_dac.txt", "mlxlink / mstlink", "phy.fec.mode phy.link.speed phy.link.state phy.module.flags phy.troubleshooting", nil},
		{"ibtools/gpud-ibstat/ibstat.39.0.a100.failed.ibpanic.exit-255.0.txt", "ibstat", "ib.sm port.rate.below-expected port.state", []string{"unknown port.state: rdma devices"}},
		{"ibtools/gpud-ibstat/ibstat.47.0.a100.all.active.0.txt", "ibstat", "ib.sm port.rate.below-expected port.state", nil},
		{"ibtools/gpud-ibstat/ibstat.47.0.h100.all.active.0.txt", "ibstat", "port.rate.below-expected port.state", nil},
		{"ibtools/gpud-ibstat/ibstat.47.0.h100.all.active.1.txt", "ibstat", "port.rate.below-expected port.state", nil},
		{"ibtools/gpud-ibstat/ibstat.47.0.h100.all.active.2.txt", "ibstat", "ib.sm port.rate.below-expected port.state", nil},
		{"ibtools/gpud-ibstat/ibstat.47.0.h100.some.down.0.txt", "ibstat", "ib.sm port.rate.below-expected port.state", nil},
		{"ibtools/gpud-ibstat/ibstat.47.0.h100.some.down.1.txt", "ibstat", "port.rate.below-expected port.state", []string{"warn port.state: mlx5_11 port 1", "warn port.state: mlx5_5 port 1"}},
		{"ibtools/gpud-ibstat/ibstatus.39.0.a100.all.active.0.txt", "ibstatus", "ib.sm port.rate.below-expected port.state", nil},
		{"ibtools/h20-cx7-ndr200/ibstatus_2X-NDR_redacted.txt", "ibstatus", "ib.sm port.state", nil},
		{"ibtools/ibdev2netdev/imbue-cluster-health-issue-4_H100_CX7-IB_CX6-eth_column-t_annotated.txt", "", "", nil},
		{"ibtools/iblinkinfo/centos-qdr-infiniscale-iv_ibhosts_ibswitches_ibnodes.txt", "", "", nil},
		{"ibtools/iblinkinfo/nccl-tests-issue-71_HDR-MQM8700_SHARP-aggnode_iblinkinfo_excerpt.txt", "iblinkinfo", "fabric.lid.unassigned fabric.link.width fabric.port.state", []string{"unknown fabric.link.width: links"}},
		{"ibtools/iblinkinfo/xcat-edr-2node_SB7700_iblinkinfo.txt", "iblinkinfo", "fabric.lid.unassigned fabric.port.state", []string{"unknown fabric.link.width: links"}},
		{"ibtools/ibqueryerrors/ompi-users-2009_ibcheckerrors_legacy_InfiniscaleIII.txt", "ibcheckerrors", "", []string{"fail fabric.port.errors: lid 2 (MT47396 Infiniscale-III Mellanox Technologies) port 7 RcvSwRelayErrors", "fail fabric.port.errors: lid 2 (MT47396 Infiniscale-III Mellanox Technologies) port all RcvSwRelayErrors"}},
		{"ibtools/ibstat/deepep-issue-303_H20_CX7-NDR-IB_excerpt.txt", "ibstat", "ib.sm port.state", nil},
		{"ibtools/ibstat/l2fwd-nv-issue-6_CX6Dx-RoCE-100_complete.txt", "ibstat", "port.state", nil},
		{"ibtools/ibstat/mooncake-issue-1999_CX7-RoCE-200_CX6Dx-down_excerpt.txt", "ibstat", "port.state", nil},
		{"ibtools/ibstat/nccl-tests-issue-128_CX6-HDR_one-port-Down-Disabled-lid65535_CX4Lx_excerpt.txt", "ibstat", "ib.sm port.state", []string{"warn port.state: mlx5_1 port 1"}},
		{"ibtools/ibstat/nccl-tests-issue-350_n013_CX4Lx-eth_CX6-HDR-IB_complete.txt", "ibstat", "ib.sm port.state", nil},
		{"ibtools/ibstat/sglang-issue-6823_H20-3e_CX6Dx-eth-down_CX7_excerpt.txt", "ibstat", "port.state", []string{"unknown port.state: mlx5_10 port 1"}},
		{"ibtools/ibv_devinfo/deepep-issue-38_H100_CX7-RoCE_multi-hca_excerpt.txt", "ibv_devinfo", "port.state", []string{"unknown port.state: mlx5_3", "unknown roce.mtu.path: mlx5_2 port 1"}},
		{"ibtools/ibv_devinfo/deepep-issue-55_BlueField3-4126_IB_multi-hca_excerpt.txt", "ibv_devinfo", "ib.sm port.state", []string{"unknown port.state: mlx5_4"}},
		{"ibtools/ibv_devinfo_v/infinity-issue-5_mlx4_ConnectX-3_ibv_devinfo-v_excerpt.txt", "ibv_devinfo", "", []string{"unknown port.state: mlx4_2"}},
		{"ibtools/ibv_devinfo_v/libfabric-issue-8256_mlx5_2_CX5-4121_ibv_devinfo-v_excerpt.txt", "ibv_devinfo", "", []string{"unknown port.state: mlx5_2"}},
		{"ibtools/ibv_devinfo_v/ompi-pr-6184_mlx5_ConnectX-5_MOFED-exp_ibv_devinfo-v_excerpt.txt", "ibv_devinfo", "", []string{"unknown port.state: mlx5_1"}},
		{"ibtools/ibv_devinfo_v/ucx-issue-5148_qedr0_QLogic-FastLinQ_ibv_devinfo-v_excerpt.txt", "ibv_devinfo", "", []string{"unknown port.state: qedr0"}},
		{"ibtools/infiniband_exporter/ibnetdiscover/test.out", "ibnetdiscover -p", "fabric.link.width", []string{"unknown fabric.link.width: links"}},
		{"ibtools/infiniband_exporter/ibnetdiscover/test2.out", "ibnetdiscover -p", "", []string{"unknown fabric.link.width: links"}},
		{"ibtools/infiniband_exporter/ibnetdiscover/test3.out", "ibnetdiscover -p", "", []string{"unknown fabric.link.width: links"}},
		{"ibtools/infiniband_exporter/ibswinfo/test-err1.out", "", "", nil},
		{"ibtools/infiniband_exporter/ibswinfo/test-err2.out", "", "", nil},
		{"ibtools/infiniband_exporter/ibswinfo/test-err3.out", "", "", nil},
		{"ibtools/infiniband_exporter/ibswinfo/test1-missing.out", "", "", nil},
		{"ibtools/infiniband_exporter/ibswinfo/test1.out", "", "", nil},
		{"ibtools/infiniband_exporter/ibswinfo/test2.out", "", "", nil},
		{"ibtools/infiniband_exporter/ibswinfo/test3.out", "", "", nil},
		{"ibtools/infiniband_exporter/perfquery/0x506b4b03005c2740.out", "", "", nil},
		{"ibtools/infiniband_exporter/perfquery/0x506b4b0300cc02a6.out", "", "", nil},
		{"ibtools/infiniband_exporter/perfquery/0x7cfe9003003b4b96.out", "", "", nil},
		{"ibtools/infiniband_exporter/perfquery/0x7cfe9003003b4bde.out", "", "", nil},
		{"ibtools/infiniband_exporter/perfquery/0x7cfe9003009ce5b0.out", "", "", nil},
		{"ibtools/infiniband_exporter/perfquery-rcv-error/0x506b4b03005c2740-1.out", "", "", nil},
		{"ibtools/infiniband_exporter/perfquery-rcv-error/0x7cfe9003003b4b96-1.out", "", "", nil},
		{"ibtools/infiniband_exporter/perfquery-rcv-error/0x7cfe9003003b4bde-1.out", "", "", nil},
		{"ibtools/infiniband_exporter/perfquery-rcv-error/0x7cfe9003009ce5b0-1.out", "", "", nil},
		{"ibtools/infiniband_exporter/perfquery-rcv-error/0x7cfe9003009ce5b0-2.out", "", "", nil},
		{"ibtools/roce-cx5-sriov-vf-k8s/ibstat_vf_port_down.txt", "ibstat", "", []string{"fail port.state: mlx5_1 port 1"}},
		{"ibtools/roce-cx5-sriov-vf-k8s/ibv_devices_in_pod_truncated.txt", "", "", nil},
		{"ibtools/roce-cx5-sriov-vf-k8s/ibv_devinfo_vf_port_down.txt", "ibv_devinfo", "", []string{"fail port.state: mlx5_1 port 1"}},
		{"ibtools/stmatengss-mlx4/ibstat_4129f2daa9bf.txt", "ibstat", "ib.sm port.state", nil},
		{"ibtools/stmatengss-mlx4/ibv_devinfo_4129f2daa9bf.txt", "ibv_devinfo", "ib.sm port.state", nil},
		{"ibtools/superbench/ib_traffic_topo_aware_hostfile", "", "", nil},
		{"ibtools/superbench/ib_traffic_topo_aware_ibstat.txt", "", "", nil},
		{"ibnetdiscover/ibsim-net-examples/examples.README", "", "", nil},
		{"ibnetdiscover/ibsim-net-examples/ibsim-README", "", "", nil},
		{"ibnetdiscover/ibsim-net-examples/net", "ibnetdiscover", "", []string{"unknown fabric.link.width: links"}},
		{"ibnetdiscover/ibsim-net-examples/net.1", "ibnetdiscover", "", []string{"unknown fabric.link.width: links"}},
		{"ibnetdiscover/ibsim-net-examples/net.2sw2path", "ibnetdiscover", "", []string{"unknown fabric.link.width: links"}},
		{"ibnetdiscover/ibsim-net-examples/net.2sw2path4hca", "ibnetdiscover", "", []string{"unknown fabric.link.width: links"}},
		{"ibnetdiscover/ibsim-net-examples/net.2sw2path4hca2port", "ibnetdiscover", "", []string{"unknown fabric.link.width: links"}},
		{"ibnetdiscover/ndr-qm9700-129port-split-2xNDR_REDACTED_TRUNCATED.txt", "ibnetdiscover", "fabric.link.width", nil},
		{"ibnetdiscover/superbench_topo_aware_ibnetdiscover_FAKED.txt", "ibnetdiscover", "fabric.link.width", nil},
		// perftest, nccl-tests and NCCL_DEBUG logs. A file holding several
		// runs is judged run by run (internal/bench asserts each finding).
		{"perftest/azure-hbv3_ib_send_bw_all_client.txt", "perftest", "bench.perftest.mtu bench.perftest.warning", []string{"unknown bench.perftest.bandwidth: perftest/azure-hbv3_ib_send_bw_all_client.txt"}},
		{"perftest/azure-hbv3_ib_send_bw_all_server.txt", "perftest", "bench.perftest.mtu bench.perftest.warning", []string{"unknown bench.perftest.bandwidth: perftest/azure-hbv3_ib_send_bw_all_server.txt"}},
		{"perftest/azure-hbv3_ib_send_lat_all_server.txt", "perftest", "bench.perftest.mtu", []string{"warn bench.perftest.latency: perftest/azure-hbv3_ib_send_lat_all_server.txt"}},
		{"perftest/azure-hbv3_ib_write_bw_loopback_interleaved.txt", "perftest", "bench.perftest.mtu", []string{"unknown bench.perftest.bandwidth: perftest/azure-hbv3_ib_write_bw_loopback_interleaved.txt", "warn bench.perftest.warning: perftest/azure-hbv3_ib_write_bw_loopback_interleaved.txt"}},
		{"perftest/cx7-ndr-b2b-perftest25/_session_transcript.txt", "perftest", "bench.perftest.latency bench.perftest.mtu", []string{"unknown bench.perftest.bandwidth: perftest/cx7-ndr-b2b-perftest25/_session_transcript.txt run 1 of 4 (Send BW Test)", "unknown bench.perftest.bandwidth: perftest/cx7-ndr-b2b-perftest25/_session_transcript.txt run 3 of 4 (RDMA_Read BW Test)", "unknown bench.perftest.bandwidth: perftest/cx7-ndr-b2b-perftest25/_session_transcript.txt run 4 of 4 (RDMA_Write BW Test)", "warn bench.perftest.warning: perftest/cx7-ndr-b2b-perftest25/_session_transcript.txt run 1 of 4 (Send BW Test)", "warn bench.perftest.warning: perftest/cx7-ndr-b2b-perftest25/_session_transcript.txt run 2 of 4 (Send Latency Test)", "warn bench.perftest.warning: perftest/cx7-ndr-b2b-perftest25/_session_transcript.txt run 3 of 4 (RDMA_Read BW Test)", "warn bench.perftest.warning: perftest/cx7-ndr-b2b-perftest25/_session_transcript.txt run 4 of 4 (RDMA_Write BW Test)"}},
		{"perftest/cx7-ndr-b2b-perftest25/ib_read_bw.txt", "perftest", "bench.perftest.mtu", []string{"unknown bench.perftest.bandwidth: perftest/cx7-ndr-b2b-perftest25/ib_read_bw.txt", "warn bench.perftest.warning: perftest/cx7-ndr-b2b-perftest25/ib_read_bw.txt"}},
		{"perftest/cx7-ndr-b2b-perftest25/ib_send_bw.txt", "perftest", "bench.perftest.mtu", []string{"unknown bench.perftest.bandwidth: perftest/cx7-ndr-b2b-perftest25/ib_send_bw.txt", "warn bench.perftest.warning: perftest/cx7-ndr-b2b-perftest25/ib_send_bw.txt"}},
		{"perftest/cx7-ndr-b2b-perftest25/ib_send_lat.txt", "perftest", "bench.perftest.latency bench.perftest.mtu", []string{"warn bench.perftest.warning: perftest/cx7-ndr-b2b-perftest25/ib_send_lat.txt"}},
		{"perftest/cx7-ndr-b2b-perftest25/ib_write_bw.txt", "perftest", "bench.perftest.mtu", []string{"unknown bench.perftest.bandwidth: perftest/cx7-ndr-b2b-perftest25/ib_write_bw.txt", "warn bench.perftest.warning: perftest/cx7-ndr-b2b-perftest25/ib_write_bw.txt"}},
		{"perftest/json/perftest-issue-216_rxe0_ib_write_lat_out_json_INVALID-JSON.txt", "", "", nil},
		{"perftest/roce-cx5-k8s-cu05-cu07/ib_atomic_bw_roce_client.txt", "perftest", "", []string{"unknown bench.perftest.bandwidth: perftest/roce-cx5-k8s-cu05-cu07/ib_atomic_bw_roce_client.txt", "warn bench.perftest.mtu: perftest/roce-cx5-k8s-cu05-cu07/ib_atomic_bw_roce_client.txt", "warn bench.perftest.warning: perftest/roce-cx5-k8s-cu05-cu07/ib_atomic_bw_roce_client.txt"}},
		{"perftest/roce-cx5-k8s-cu05-cu07/ib_read_bw_roce_client.txt", "perftest", "", []string{"unknown bench.perftest.bandwidth: perftest/roce-cx5-k8s-cu05-cu07/ib_read_bw_roce_client.txt", "warn bench.perftest.mtu: perftest/roce-cx5-k8s-cu05-cu07/ib_read_bw_roce_client.txt", "warn bench.perftest.warning: perftest/roce-cx5-k8s-cu05-cu07/ib_read_bw_roce_client.txt"}},
		{"perftest/roce-cx5-k8s-cu05-cu07/ib_send_bw_roce_client.txt", "perftest", "", []string{"unknown bench.perftest.bandwidth: perftest/roce-cx5-k8s-cu05-cu07/ib_send_bw_roce_client.txt", "warn bench.perftest.mtu: perftest/roce-cx5-k8s-cu05-cu07/ib_send_bw_roce_client.txt", "warn bench.perftest.warning: perftest/roce-cx5-k8s-cu05-cu07/ib_send_bw_roce_client.txt"}},
		{"perftest/stmatengss-mlx4-qdr/_full_transcript_excerpt.txt", "perftest", "bench.perftest.latency", []string{"unknown bench.perftest.bandwidth: perftest/stmatengss-mlx4-qdr/_full_transcript_excerpt.txt run 1 of 9 (RDMA_Write BW Test)", "unknown bench.perftest.bandwidth: perftest/stmatengss-mlx4-qdr/_full_transcript_excerpt.txt run 3 of 9 (RDMA_Read BW Test)", "unknown bench.perftest.bandwidth: perftest/stmatengss-mlx4-qdr/_full_transcript_excerpt.txt run 4 of 9 (RDMA_Read BW Test)", "unknown bench.perftest.bandwidth: perftest/stmatengss-mlx4-qdr/_full_transcript_excerpt.txt run 6 of 9 (Atomic FETCH_AND_ADD BW Test)", "unknown bench.perftest.bandwidth: perftest/stmatengss-mlx4-qdr/_full_transcript_excerpt.txt run 8 of 9 (Send BW Test)", "warn bench.perftest.mtu: perftest/stmatengss-mlx4-qdr/_full_transcript_excerpt.txt run 1 of 9 (RDMA_Write BW Test)", "warn bench.perftest.mtu: perftest/stmatengss-mlx4-qdr/_full_transcript_excerpt.txt run 2 of 9 (RDMA_Write Latency Test)", "warn bench.perftest.mtu: perftest/stmatengss-mlx4-qdr/_full_transcript_excerpt.txt run 3 of 9 (RDMA_Read BW Test)", "warn bench.perftest.mtu: perftest/stmatengss-mlx4-qdr/_full_transcript_excerpt.txt run 4 of 9 (RDMA_Read BW Test)", "warn bench.perftest.mtu: perftest/stmatengss-mlx4-qdr/_full_transcript_excerpt.txt run 5 of 9 (RDMA_Read Latency Test)", "warn bench.perftest.mtu: perftest/stmatengss-mlx4-qdr/_full_transcript_excerpt.txt run 6 of 9 (Atomic FETCH_AND_ADD BW Test)", "warn bench.perftest.mtu: perftest/stmatengss-mlx4-qdr/_full_transcript_excerpt.txt run 7 of 9 (Atomic FETCH_AND_ADD Latency Test)", "warn bench.perftest.mtu: perftest/stmatengss-mlx4-qdr/_full_transcript_excerpt.txt run 8 of 9 (Send BW Test)", "warn bench.perftest.mtu: perftest/stmatengss-mlx4-qdr/_full_transcript_excerpt.txt run 9 of 9 (Send Latency Test)", "warn bench.perftest.warning: perftest/stmatengss-mlx4-qdr/_full_transcript_excerpt.txt run 4 of 9 (RDMA_Read BW Test)", "warn bench.perftest.warning: perftest/stmatengss-mlx4-qdr/_full_transcript_excerpt.txt run 6 of 9 (Atomic FETCH_AND_ADD BW Test)", "warn bench.perftest.warning: perftest/stmatengss-mlx4-qdr/_full_transcript_excerpt.txt run 7 of 9 (Atomic FETCH_AND_ADD Latency Test)"}},
		{"perftest/stmatengss-mlx4-qdr/ib_atomic_bw_4bfed8618b1d.txt", "perftest", "", []string{"unknown bench.perftest.bandwidth: perftest/stmatengss-mlx4-qdr/ib_atomic_bw_4bfed8618b1d.txt", "warn bench.perftest.mtu: perftest/stmatengss-mlx4-qdr/ib_atomic_bw_4bfed8618b1d.txt", "warn bench.perftest.warning: perftest/stmatengss-mlx4-qdr/ib_atomic_bw_4bfed8618b1d.txt"}},
		{"perftest/stmatengss-mlx4-qdr/ib_atomic_lat_4bfed8618b1d.txt", "perftest", "bench.perftest.latency", []string{"warn bench.perftest.mtu: perftest/stmatengss-mlx4-qdr/ib_atomic_lat_4bfed8618b1d.txt", "warn bench.perftest.warning: perftest/stmatengss-mlx4-qdr/ib_atomic_lat_4bfed8618b1d.txt"}},
		{"perftest/stmatengss-mlx4-qdr/ib_read_bw_4bfed8618b1d.txt", "perftest", "", []string{"unknown bench.perftest.bandwidth: perftest/stmatengss-mlx4-qdr/ib_read_bw_4bfed8618b1d.txt", "warn bench.perftest.mtu: perftest/stmatengss-mlx4-qdr/ib_read_bw_4bfed8618b1d.txt", "warn bench.perftest.warning: perftest/stmatengss-mlx4-qdr/ib_read_bw_4bfed8618b1d.txt"}},
		{"perftest/stmatengss-mlx4-qdr/ib_read_bw_teaker-11.txt", "perftest", "", []string{"unknown bench.perftest.bandwidth: perftest/stmatengss-mlx4-qdr/ib_read_bw_teaker-11.txt", "warn bench.perftest.mtu: perftest/stmatengss-mlx4-qdr/ib_read_bw_teaker-11.txt"}},
		{"perftest/stmatengss-mlx4-qdr/ib_read_lat_4bfed8618b1d.txt", "perftest", "bench.perftest.latency", []string{"warn bench.perftest.mtu: perftest/stmatengss-mlx4-qdr/ib_read_lat_4bfed8618b1d.txt"}},
		{"perftest/stmatengss-mlx4-qdr/ib_send_bw_4bfed8618b1d.txt", "perftest", "", []string{"unknown bench.perftest.bandwidth: perftest/stmatengss-mlx4-qdr/ib_send_bw_4bfed8618b1d.txt", "warn bench.perftest.mtu: perftest/stmatengss-mlx4-qdr/ib_send_bw_4bfed8618b1d.txt"}},
		{"perftest/stmatengss-mlx4-qdr/ib_send_lat_4bfed8618b1d.txt", "perftest", "bench.perftest.latency", []string{"warn bench.perftest.mtu: perftest/stmatengss-mlx4-qdr/ib_send_lat_4bfed8618b1d.txt"}},
		{"perftest/stmatengss-mlx4-qdr/ib_write_bw_4bfed8618b1d.txt", "perftest", "", []string{"unknown bench.perftest.bandwidth: perftest/stmatengss-mlx4-qdr/ib_write_bw_4bfed8618b1d.txt", "warn bench.perftest.mtu: perftest/stmatengss-mlx4-qdr/ib_write_bw_4bfed8618b1d.txt"}},
		{"perftest/stmatengss-mlx4-qdr/ib_write_lat_4bfed8618b1d.txt", "perftest", "bench.perftest.latency", []string{"warn bench.perftest.mtu: perftest/stmatengss-mlx4-qdr/ib_write_lat_4bfed8618b1d.txt"}},
		{"perftest/superbench/ib_loopback_8M_size.log", "perftest", "bench.perftest.mtu", []string{"unknown bench.perftest.bandwidth: perftest/superbench/ib_loopback_8M_size.log"}},
		{"perftest/superbench/ib_loopback_all_sizes.log", "perftest", "bench.perftest.mtu", []string{"unknown bench.perftest.bandwidth: perftest/superbench/ib_loopback_all_sizes.log"}},
		{"perftest-latency/k8s-61-62-softroce-capture-notes_rxe0_ib_write_lat_n5_s64_server-then-client_p99-equals-max.txt", "perftest", "", []string{"warn bench.perftest.latency: perftest-latency/k8s-61-62-softroce-capture-notes_rxe0_ib_write_lat_n5_s64_server-then-client_p99-equals-max.txt run 1 of 2 (RDMA_Write Latency Test)", "warn bench.perftest.latency: perftest-latency/k8s-61-62-softroce-capture-notes_rxe0_ib_write_lat_n5_s64_server-then-client_p99-equals-max.txt run 2 of 2 (RDMA_Write Latency Test)", "warn bench.perftest.mtu: perftest-latency/k8s-61-62-softroce-capture-notes_rxe0_ib_write_lat_n5_s64_server-then-client_p99-equals-max.txt run 1 of 2 (RDMA_Write Latency Test)", "warn bench.perftest.mtu: perftest-latency/k8s-61-62-softroce-capture-notes_rxe0_ib_write_lat_n5_s64_server-then-client_p99-equals-max.txt run 2 of 2 (RDMA_Write Latency Test)"}},
		{"perftest-latency/mlx4-ib-notes-zh_mlx4_0_ib_read_lat-and-ib_write_lat_cpu-freq-warnings-inside-table_tab-padded-rows.txt", "perftest", "", []string{"warn bench.perftest.latency: perftest-latency/mlx4-ib-notes-zh_mlx4_0_ib_read_lat-and-ib_write_lat_cpu-freq-warnings-inside-table_tab-padded-rows.txt run 1 of 2 (RDMA_Read Latency Test)", "warn bench.perftest.latency: perftest-latency/mlx4-ib-notes-zh_mlx4_0_ib_read_lat-and-ib_write_lat_cpu-freq-warnings-inside-table_tab-padded-rows.txt run 2 of 2 (RDMA_Write Latency Test)", "warn bench.perftest.mtu: perftest-latency/mlx4-ib-notes-zh_mlx4_0_ib_read_lat-and-ib_write_lat_cpu-freq-warnings-inside-table_tab-padded-rows.txt run 1 of 2 (RDMA_Read Latency Test)", "warn bench.perftest.mtu: perftest-latency/mlx4-ib-notes-zh_mlx4_0_ib_read_lat-and-ib_write_lat_cpu-freq-warnings-inside-table_tab-padded-rows.txt run 2 of 2 (RDMA_Write Latency Test)", "warn bench.perftest.warning: perftest-latency/mlx4-ib-notes-zh_mlx4_0_ib_read_lat-and-ib_write_lat_cpu-freq-warnings-inside-table_tab-padded-rows.txt run 1 of 2 (RDMA_Read Latency Test)", "warn bench.perftest.warning: perftest-latency/mlx4-ib-notes-zh_mlx4_0_ib_read_lat-and-ib_write_lat_cpu-freq-warnings-inside-table_tab-padded-rows.txt run 2 of 2 (RDMA_Write Latency Test)"}},
		{"perftest-warnings/ocp-sriov-gpudirect-doc-A_mlx5_4_ib_write_bw_use_cuda_T4_RoCE-vf_RO-not-compliant-warning_client.txt", "perftest", "", []string{"unknown bench.perftest.bandwidth: perftest-warnings/ocp-sriov-gpudirect-doc-A_mlx5_4_ib_write_bw_use_cuda_T4_RoCE-vf_RO-not-compliant-warning_client.txt", "warn bench.perftest.mtu: perftest-warnings/ocp-sriov-gpudirect-doc-A_mlx5_4_ib_write_bw_use_cuda_T4_RoCE-vf_RO-not-compliant-warning_client.txt", "warn bench.perftest.warning: perftest-warnings/ocp-sriov-gpudirect-doc-A_mlx5_4_ib_write_bw_use_cuda_T4_RoCE-vf_RO-not-compliant-warning_client.txt"}},
		{"perftest-warnings/ocp-sriov-gpudirect-doc-A_mlx5_5_ib_write_bw_use_cuda_T4_RoCE-vf_RO-not-compliant-warning_server.txt", "perftest", "", []string{"unknown bench.perftest.bandwidth: perftest-warnings/ocp-sriov-gpudirect-doc-A_mlx5_5_ib_write_bw_use_cuda_T4_RoCE-vf_RO-not-compliant-warning_server.txt", "warn bench.perftest.mtu: perftest-warnings/ocp-sriov-gpudirect-doc-A_mlx5_5_ib_write_bw_use_cuda_T4_RoCE-vf_RO-not-compliant-warning_server.txt", "warn bench.perftest.warning: perftest-warnings/ocp-sriov-gpudirect-doc-A_mlx5_5_ib_write_bw_use_cuda_T4_RoCE-vf_RO-not-compliant-warning_server.txt"}},
		{"nccl-tests/alps-gh200-slingshot/2node-8gh200_all_reduce_perf_nccl-tests-2.17.1_libfabric-cxi.txt", nccl, "nccl.tests.complete nccl.tests.correctness", []string{"unknown nccl.tests.busbw: 2node-8gh200_all_reduce_perf_nccl-tests-2.17.1_libfabric-cxi.txt", "warn nccl.tests.plateau: 2node-8gh200_all_reduce_perf_nccl-tests-2.17.1_libfabric-cxi.txt"}},
		{"nccl-tests/json/nccl-tests-pr-318_alltoall_json_TRUNCATED.txt", nccl, "nccl.tests.correctness", []string{"fail nccl.tests.complete: nccl-tests-pr-318_alltoall_json_TRUNCATED.txt", "unknown nccl.tests.busbw: nccl-tests-pr-318_alltoall_json_TRUNCATED.txt"}},
		{"nccl-tests/rtx3090-inc/1gpu-1nic_INC_rdma-mtu256.txt", nccl, "nccl.tests.complete nccl.tests.correctness", []string{"unknown nccl.tests.busbw: 1gpu-1nic_INC_rdma-mtu256.txt"}},
		{"nccl-tests/rtx3090-inc/1gpu-1nic_NO-INC.txt", nccl, "nccl.tests.complete nccl.tests.correctness", []string{"unknown nccl.tests.busbw: 1gpu-1nic_NO-INC.txt", "warn nccl.tests.implausible: 1gpu-1nic_NO-INC.txt"}},
		{"nccl-tests/rtx3090-inc/2node-2gpu-2nic_INC_rdma-mtu256_WRONG-108-FAILED.txt", nccl, "nccl.tests.complete", []string{"fail nccl.tests.correctness: 2node-2gpu-2nic_INC_rdma-mtu256_WRONG-108-FAILED.txt", "unknown nccl.tests.busbw: 2node-2gpu-2nic_INC_rdma-mtu256_WRONG-108-FAILED.txt"}},
		{"nccl-tests/rtx3090-inc/2node-2gpu-2nic_NO-INC_rdma-mtu1024.txt", nccl, "nccl.tests.complete nccl.tests.correctness", []string{"unknown nccl.tests.busbw: 2node-2gpu-2nic_NO-INC_rdma-mtu1024.txt"}},
		{"nccl-tests/rtx3090-inc/2node-2gpu-2nic_NO-INC_rdma-mtu256.txt", nccl, "nccl.tests.complete nccl.tests.correctness", []string{"unknown nccl.tests.busbw: 2node-2gpu-2nic_NO-INC_rdma-mtu256.txt"}},
		{"nccl-tests/rtx3090-inc/3node-3gpu-3nic_NO-INC_rdma-mtu256_ucx-warnings.txt", nccl, "nccl.tests.complete nccl.tests.correctness", []string{"unknown nccl.tests.busbw: 3node-3gpu-3nic_NO-INC_rdma-mtu256_ucx-warnings.txt"}},
		{"nccl-tests/superbench/nccl_allgather.log", nccl, "nccl.tests.complete", []string{"unknown nccl.tests.busbw: nccl_allgather.log", "unknown nccl.tests.correctness: nccl_allgather.log"}},
		{"nccl-tests/superbench/nccl_allreduce.log", nccl, "nccl.tests.complete", []string{"unknown nccl.tests.busbw: nccl_allreduce.log", "unknown nccl.tests.correctness: nccl_allreduce.log"}},
		{"nccl-tests/superbench/nccl_alltoall.log", nccl, "nccl.tests.complete", []string{"unknown nccl.tests.busbw: nccl_alltoall.log", "unknown nccl.tests.correctness: nccl_alltoall.log"}},
		{"nccl-tests/superbench/nccl_broadcast.log", nccl, "nccl.tests.complete", []string{"unknown nccl.tests.busbw: nccl_broadcast.log", "unknown nccl.tests.correctness: nccl_broadcast.log"}},
		{"nccl-tests/superbench/nccl_reduce.log", nccl, "nccl.tests.complete", []string{"unknown nccl.tests.busbw: nccl_reduce.log", "unknown nccl.tests.correctness: nccl_reduce.log"}},
		{"nccl-tests/superbench/nccl_reducescatter.log", nccl, "nccl.tests.complete", []string{"unknown nccl.tests.busbw: nccl_reducescatter.log", "unknown nccl.tests.correctness: nccl_reducescatter.log"}},
		{"nccl-debug/alps-gh200_aws-ofi-plugin-not-found_WARN.log", nccl, "nccl.log.network", []string{"fail nccl.log.failure: nccl-tests", "fail nccl.log.plugin: net plugin", "fail nccl.log.plugin: net plugin", "unknown nccl.log.network: network"}},
		{"nccl-debug/azure-nd96isr-h100-v5_mixed-IB-RoCE-devices_excerpt.log", nccl, "nccl.log.gdr nccl.log.network nccl.log.warn", []string{"warn nccl.log.mixed-layers: NET/IB devices"}},
		{"nccl-debug/nccl-issue-1232_socket-ifname_mpi-prefixed_excerpt.log", nccl, "nccl.log.plugin", []string{"unknown nccl.log.network: network", "unknown nccl.log.network: network"}},
		{"nccl-debug/nccl-issue-1537_RoCE_GDR-disabled_excerpt.log", nccl, "nccl.log.network", []string{"fail nccl.log.gdr: GPUDirect RDMA"}},
		{"nccl-debug/nccl-issue-1866_H100-2vm_nccl-2.27.6_init_excerpt.log", nccl, "nccl.log.plugin nccl.log.version", []string{"unknown nccl.log.network: network", "unknown nccl.log.network: network"}},
		{"nccl-debug/nccl-issue-367_old-ring-format_NET-Socket_shm_excerpt.log", nccl, "", []string{"fail nccl.log.socket: inter-node channels"}},
		{"nccl-debug/nccl-issue-398_aws-2node_P2P-IPC_NET-Socket_excerpt.log", nccl, "", []string{"fail nccl.log.socket: inter-node channels", "fail nccl.log.socket: inter-node channels"}},
		{"nccl-debug/nccl-issue-952_hpcx-IBext-plugin_NET-IB-no-device_excerpt.log", nccl, "nccl.log.network", nil},
		{"nccl-debug/nccl-tests-issue-188_no-plugin-internal-impl_excerpt.log", nccl, "nccl.log.plugin", []string{"unknown nccl.log.network: network"}},
		{"nccl-debug/nccl-tests-issue-350_A100-2node_mixed-RoCE-IB_NCCL-TRACE_gather_perf_NO-AVG-LINE.log", nccl, "nccl.log.gdr nccl.log.network nccl.log.plugin nccl.tests.correctness", []string{"fail nccl.tests.complete: nccl-tests-issue-350_A100-2node_mixed-RoCE-IB_NCCL-TRACE_gather_perf_NO-AVG-LINE.log", "unknown nccl.log.silent: NCCL_DEBUG", "unknown nccl.tests.busbw: nccl-tests-issue-350_A100-2node_mixed-RoCE-IB_NCCL-TRACE_gather_perf_NO-AVG-LINE.log", "warn nccl.log.gdr-level: NCCL_NET_GDR_LEVEL", "warn nccl.log.mixed-layers: NET/IB devices", "warn nccl.tests.plateau: nccl-tests-issue-350_A100-2node_mixed-RoCE-IB_NCCL-TRACE_gather_perf_NO-AVG-LINE.log"}},
		{"nccl-debug/nv_peer_memory-issue-56_2node_NET-IB-mlx5_0-IB_nccl-2.5.6_excerpt.log", nccl, "nccl.log.network nccl.log.plugin", []string{"unknown nccl.log.network: network"}},
		{"nccl-debug/sglang-2node-roce-ofi-fallback-to-ib_excerpt-A.log", nccl, "nccl.log.network", []string{"warn nccl.log.plugin: net plugin"}},
		// check IDs, hosts and ranks of these: nccl.TestRASEveryCapture
		{"ncclras/nccl-docs-example-08_ras_exit-fault_rank7_INCOMPLETE_communicators-section-only_masked.txt", ras, "nccl.ras.progress nccl.ras.status", []string{"fail nccl.ras.ranks: rank 7"}},
		{"ncclras/nccl-docs-example-08_ras_ncclras-v_2.30.7_2node-8rank_healthy-RUNNING-OK_masked.txt", ras, "nccl.ras.progress nccl.ras.ranks nccl.ras.status", nil},
		{"ncclras/nccl-docs-example-08_ras_sleep-fault_rank7-straggler_MISMATCH-AllReduce-64-vs-60_table-onward_masked.txt", ras, "nccl.ras.ranks nccl.ras.status", []string{"unknown nccl.ras.progress: #0-0 (78db921d1c117b4a) AllReduce"}},
		{"ncclras/nccl-docs-ras-rst_ncclras-f-json_2.29.1_1-of-2-ranks-missing-unresponsive_rst-indented-2-spaces.json", ras, "nccl.ras.progress nccl.ras.status", []string{"fail nccl.ras.ranks: rank 1"}},
		{"ncclras/nccl-issue-1911_2.26.2_4node-32rank_MISMATCH-AllGather-640-vs-641_two-ranks-ahead.txt", ras, "nccl.ras.ranks nccl.ras.status", []string{"unknown nccl.ras.progress: #0-0 (fa93daea854b060b) AllGather"}},
		{"ncclras/ray-test-nv-hang-detector_HEALTHY_RAS_JSON_2.28.9_1node-2rank_empty-missing-ranks-array.json", ras, "nccl.ras.progress nccl.ras.ranks nccl.ras.status", nil},
		// check IDs and subjects of these: newformats_test.go
		{rdmaLinkCapture, "rdma link", "port.state", nil},
		{rdmaStatCapture, "rdma statistic", "port.errors", nil},
		{rdmaQPCapture, "rdma statistic", "port.errors", nil},
		{rdmaResourceShow, "", "", nil},
		{lspciHDACapture, "lspci -vvv", "", nil},
		{lspciACSCapture, "lspci -vvv", "", nil},
		{lspciDellCapture, "lspci -vvv", "pcie.link.degraded", nil},
		// check IDs and subjects of these: gpudirect.TestJudgeTopoReal
		{"nvidia-smi-topo/club-3090-issue-1229_2xRTX5090-workstation_PHB_no-nic.txt", topo, "", []string{"warn topo.nics: RDMA NICs"}},
		{"nvidia-smi-topo/deepseek-local-notes-zh_5900X_2xRTX3090-NV4-bridge_nvlink-s-then-topo_uuid-redacted_prompts.txt", topo, "", []string{"warn gpudirect.gpu-class: GPU0 GeForce RTX 3090", "warn gpudirect.gpu-class: GPU1 GeForce RTX 3090", "warn topo.nics: RDMA NICs"}},
		{"nvidia-smi-topo/gpu-comm-blog-zh_h200-8gpu-NV18_9nic-PIX-rails_mlx5_bond_0_author-reformatted-spaces-ruler-translated-legend.txt", topo, "topo.gpus topo.rail", nil},
		{"nvidia-smi-topo/mpi-gpu-compress-readme_8xA100-NV12_10nic-PXB-pairs_2-storage-nic-SYS_4numa-epyc.txt", topo, "topo.gpus topo.rail", []string{"warn topo.nic-far: mlx5_8", "warn topo.nic-far: mlx5_9"}},
		{"nvidia-smi-topo/nvlink-notes_3xRTX-A6000_gpu0-gpu1-NV4-bridge_gpu2-NODE_no-nic_prompt-gt.txt", topo, "", []string{"warn topo.nics: RDMA NICs"}},
		{"nvidia-smi-topo/polaris-alcf-doc_4xA100-NV4_2nic-old-mlx5-columns_header-missing-leading-tab_4numa.txt", topo, "", []string{"warn topo.rail: GPU0", "warn topo.rail: GPU1", "warn topo.rail: GPU2", "warn topo.rail: GPU3"}},
		{"nvidia-smi-topo/rhel-ai-kvm-guest_8xH100-NV18-in-vm_single-numa-0-63_no-nic_plus-nvlink-status-author-snipped.txt", topo, "topo.gpus", []string{"warn topo.nics: RDMA NICs"}},
		{"topology-misc/nccl-issue-1737_nvidia-smi-topo-m_H100-6nic_partial.txt", topo, "topo.rail", []string{"unknown topo.rail: GPU3", "unknown topo.rail: GPU4", "unknown topo.rail: GPU5", "unknown topo.rail: GPU6", "unknown topo.rail: GPU7", "warn topo.rail: GPU1"}},
		{"topology-misc/nccl-tests-issue-350_n013_nvidia-smi-topo-m_A100-PCIe_4nic.txt", topo, "", []string{"warn topo.nic-far: mlx5_0", "warn topo.nic-far: mlx5_1", "warn topo.rail: GPU0"}},
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
			var bad, pass []string
			for _, f := range r.Findings {
				if f.Outcome == check.Pass {
					if !slices.Contains(pass, f.Check) {
						pass = append(pass, f.Check)
					}
					continue
				}
				bad = append(bad, fmt.Sprintf("%s %s: %s", f.Outcome, f.Check, f.Subject))
			}
			slices.Sort(pass)
			slices.Sort(bad)
			if r.Format != c.format || strings.Join(pass, " ") != c.pass || !slices.Equal(bad, c.bad) {
				t.Errorf("%s passed %q and found %q, want %s %q %q", r.Format, strings.Join(pass, " "), bad, c.format, c.pass, c.bad)
				for _, f := range r.Findings {
					t.Logf("  %s %s %s: %s", f.Outcome, f.Check, f.Subject, f.Message)
				}
			}
		})
	}
	for _, dir := range []string{"grace-blackwell", "ibtools", "ibnetdiscover", "perftest", "perftest-latency", "perftest-warnings", "nccl-tests", "nccl-debug", "ncclras", "nvidia-smi-topo", "lspci", "rdma-tool"} {
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
