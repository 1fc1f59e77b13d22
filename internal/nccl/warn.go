package nccl

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/rdmalab/rdmalab/internal/lazyre"
)

// WarnClass is what an NCCL WARN means for the run, by NCCL's and the
// verbs layer's own semantics (never by how alarming it sounds).
type WarnClass string

const (
	// WarnFatal: the run cannot have worked as meant (a verbs call or a
	// work completion failed, a proxy or transport error, a timeout, an
	// abort). Its numbers, if any, are not a healthy result.
	WarnFatal WarnClass = "fatal"
	// WarnHarmless: NCCL says it, and carries on exactly as meant.
	WarnHarmless WarnClass = "harmless"
	// WarnOther: neither is known; kept as a warning.
	WarnOther WarnClass = "other"
)

// ibvWCStatus names enum ibv_wc_status of libibverbs' verbs.h, in its
// order: a failed work completion's "error N" is one of these.
var ibvWCStatus = []string{
	"IBV_WC_SUCCESS", "IBV_WC_LOC_LEN_ERR", "IBV_WC_LOC_QP_OP_ERR", "IBV_WC_LOC_EEC_OP_ERR",
	"IBV_WC_LOC_PROT_ERR", "IBV_WC_WR_FLUSH_ERR", "IBV_WC_MW_BIND_ERR", "IBV_WC_BAD_RESP_ERR",
	"IBV_WC_LOC_ACCESS_ERR", "IBV_WC_REM_INV_REQ_ERR", "IBV_WC_REM_ACCESS_ERR", "IBV_WC_REM_OP_ERR",
	"IBV_WC_RETRY_EXC_ERR", "IBV_WC_RNR_RETRY_EXC_ERR", "IBV_WC_LOC_RDD_VIOL_ERR", "IBV_WC_REM_INV_RD_REQ_ERR",
	"IBV_WC_REM_ABORT_ERR", "IBV_WC_INV_EECN_ERR", "IBV_WC_INV_EEC_STATE_ERR", "IBV_WC_FATAL_ERR",
	"IBV_WC_RESP_TIMEOUT_ERR", "IBV_WC_GENERAL_ERR",
}

// ibvWCMeaning is what the statuses NCCL users meet say about the fabric.
var ibvWCMeaning = map[int]string{
	1:  "a receive buffer too small for what arrived: the two sides disagree on sizes (mismatched NCCL versions or settings)",
	2:  "the local QP rejected the work request: a QP in a bad state or beyond its limits",
	4:  "a local memory protection error: the registered buffer (GPU memory through nvidia-peermem or DMA-BUF) was not accessible to the NIC",
	5:  "the work request was flushed because its QP had already failed: the consequence of an earlier error on the same connection, look for the first one",
	8:  "a local access error on a registered buffer (GPU memory registration)",
	9:  "the peer rejected the request as invalid",
	10: "the peer refused access to its memory (its registration or key): the peer's side of GPUDirect RDMA failed",
	11: "the peer could not complete the operation",
	12: "the peer stopped answering on the fabric: the transport retry counter was exceeded (a link or cable down or flapping, a switch port dropping, a RoCE drop storm without PFC, or the peer process gone)",
	13: "the peer stopped posting receives: the receiver-not-ready retry counter was exceeded (the peer process stalled or died)",
	19: "the NIC reported a fatal error",
	20: "the peer's response timed out",
	21: "a general transport error",
}

// IBVWCStatus returns the name of ibv_wc_status n and what it means, ""
// for a number outside the enum.
func IBVWCStatus(n int) (name, meaning string) {
	if n < 0 || n >= len(ibvWCStatus) {
		return "", ""
	}
	return ibvWCStatus[n], ibvWCMeaning[n]
}

// ncclResult names ncclResult_t (nccl.h): what the "-> N" of NCCL's error
// chains returns.
var ncclResult = []string{"ncclSuccess", "ncclUnhandledCudaError", "ncclSystemError", "ncclInternalError",
	"ncclInvalidArgument", "ncclInvalidUsage", "ncclRemoteError", "ncclInProgress"}

// NCCLResult names ncclResult_t n ("" outside the enum).
func NCCLResult(n int) string {
	if n < 0 || n >= len(ncclResult) {
		return ""
	}
	return ncclResult[n]
}

var (
	wcErrorRE  = lazyre.New(`Got completion from peer (\S+) with (?:status=\S+\(|error\s*)(\d+)`)
	ibvCallRE  = lazyre.New(`\b(ibv_\w+)\b[^:]*?\bfailed|[Cc]all to (ibv_\w+) failed|\b(ibv_\w+) (?:error|returned)`)
	chainRE    = lazyre.New(`(\S+\.(?:cc|cu|h|c|cpp):\d+) -> (\d+)\s*$`)
	fatalWords = lazyre.New(`(?i)\b(?:proxy|transport|socket|connection (?:closed|refused|reset)|net/ib|net/socket|net :)\b.*\b(?:fail\w*|error|closed|refused|reset)\b|\btime(?:d)?\s?out\b|\btimeout\b|\babort\w*\b|\bwatchdog\b|\bcuda failure\b|\bnccl(?:System|Internal|Remote|UnhandledCuda)Error\b|\bunrecoverable\b|\bfatal\b`)
	harmlessRE = lazyre.New(`Attribute \w+ of node \w+ not found|\bis deprecated\b|NUMA node .* not found`)
)

// ClassifyWarn says what one WARN (its text after "NCCL WARN", with its
// continuation) means and the belief that rests on.
func ClassifyWarn(w string) (WarnClass, string) {
	if m := wcErrorRE().FindStringSubmatch(w); m != nil {
		m[1], _, _ = strings.Cut(m[1], "<") // "10.0.0.2<58012>": the address, not NCCL's port
		n, _ := strconv.Atoi(m[2])
		name, meaning := IBVWCStatus(n)
		if name == "" {
			return WarnFatal, fmt.Sprintf("a work completion from peer %s failed with status %d: the connection to that peer is broken", m[1], n)
		}
		return WarnFatal, fmt.Sprintf("error %d is %s: %s (peer %s)", n, name, cmpOr(meaning, "the connection to that peer is broken"), m[1])
	}
	if m := ibvCallRE().FindStringSubmatch(w); m != nil {
		fn := cmpOr(m[1], cmpOr(m[2], m[3]))
		return WarnFatal, fmt.Sprintf("NCCL's call to %s failed: %s", fn, ibvCallMeaning(fn))
	}
	if harmlessRE().MatchString(w) {
		return WarnHarmless, "harmless: NCCL notes it and carries on as meant (a topology attribute a VM or container does not expose, a deprecated setting)"
	}
	if m := fatalWords().FindString(w); m != "" {
		return WarnFatal, fmt.Sprintf("%q is a fatal class of NCCL error (a proxy or transport error, a timeout, an abort): the collective did not complete as meant", strings.TrimSpace(m))
	}
	return WarnOther, ""
}

func ibvCallMeaning(fn string) string {
	switch fn {
	case "ibv_create_qp":
		return "the NIC refused a queue pair (locked memory limit too low (ulimit -l), the device's QP or memory limits reached, or a device in error): this connection was never made"
	case "ibv_reg_mr", "ibv_reg_mr_iova2", "ibv_reg_dmabuf_mr":
		return "memory registration failed (the locked memory limit, or GPU memory without nvidia-peermem / DMA-BUF): GPUDirect RDMA cannot work"
	case "ibv_modify_qp":
		return "the queue pair could not be connected (a wrong GID index or an unroutable RoCE GID, an MTU or path the peer cannot take)"
	case "ibv_open_device", "ibv_get_device_list", "ibv_query_device", "ibv_query_port":
		return "the verbs device could not be opened or queried (driver, permissions on /dev/infiniband, a device in error)"
	case "ibv_poll_cq":
		return "polling the completion queue failed: the device or its queue is in error"
	}
	return "a verbs call failed: the RDMA device refused it"
}

// ChainMeaning renders an NCCL error chain line "net_ib.cc:1295 -> 6" as
// "net_ib.cc:1295 -> 6 (ncclRemoteError)".
func ChainMeaning(loc string, n int) string {
	if name := NCCLResult(n); name != "" {
		return fmt.Sprintf("%s -> %d (%s)", loc, n, name)
	}
	return fmt.Sprintf("%s -> %d", loc, n)
}
