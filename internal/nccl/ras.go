package nccl

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/rdmalab/rdmalab/internal/lazyre"
)

// RASReport is one report of NCCL's RAS service (ncclras, NCCL ≥ 2.24),
// read from its text or its JSON (-f json, NCCL ≥ 2.28.7) form. RAS
// compares launch counts and reachability only: a collective every rank
// launched and none finished still reads RUNNING OK.
type RASReport struct {
	Format      string `json:"format"` // text or json
	NCCLVersion string `json:"nccl_version,omitempty"`
	Timestamp   string `json:"timestamp,omitempty"`
	// Repairs names every fix made to the bytes before they parsed (the
	// NCCL 2.28.x writer's missing comma), with where.
	Repairs []string  `json:"repairs,omitempty"`
	Job     *RASJob   `json:"job,omitempty"`
	Comms   []RASComm `json:"communicators"`
	// NoCommData is "No communicator data collected!".
	NoCommData bool `json:"no_communicator_data,omitempty"`
	// MissingProcesses and DeadProcesses are the Errors section's job-level
	// INCOMPLETE and DEAD entries (text only; JSON lists missing ranks per
	// communicator).
	MissingProcesses []RASProcess `json:"missing_processes,omitempty"`
	MissingCount     int          `json:"missing_process_count,omitempty"`
	DeadProcesses    []RASProcess `json:"dead_processes,omitempty"`
	DeadCount        int          `json:"dead_process_count,omitempty"`
	// Timeouts is how many RAS communication timeouts the collection met.
	Timeouts int `json:"timeouts,omitempty"`
}

// RASJob is the text report's uniform job summary.
type RASJob struct {
	Nodes            int `json:"nodes"`
	ProcessesPerNode int `json:"processes_per_node"`
	GPUsPerProcess   int `json:"gpus_per_process"`
	Processes        int `json:"processes"`
	GPUs             int `json:"gpus"`
}

// RASProcess is "Process <pid> on node <host> managing GPU <g>".
type RASProcess struct {
	PID  int    `json:"pid"`
	Host string `json:"host"`
	GPU  string `json:"gpu"`
}

// RASComm is one communicator (JSON), or one group row of the text table
// with the per-communicator entries of the Errors and Warnings sections.
type RASComm struct {
	// ID is the text report's "#group-comm" ("#0-0"); JSON has none.
	ID   string `json:"id,omitempty"`
	Hash string `json:"hash,omitempty"`
	// Size is the ranks per communicator.
	Size int `json:"size"`
	// CommsInGroup, NodesPerComm, RanksPerNode (a range like "3-4") and
	// RanksInGroup are the text table's columns.
	CommsInGroup int    `json:"comms_in_group,omitempty"`
	NodesPerComm int    `json:"nodes_per_comm,omitempty"`
	RanksPerNode string `json:"ranks_per_node,omitempty"`
	RanksInGroup int    `json:"ranks_in_group,omitempty"`
	// Status is NOCOMM, INIT, RUNNING, FINALIZE or ABORT (text); Errors is
	// OK or some of INCOMPLETE, ERROR, MISMATCH.
	Status string   `json:"status,omitempty"`
	Errors []string `json:"errors,omitempty"`
	// Ranks are the ranks that reported (all of them in JSON; in text only
	// those an entry names); Missing the ones that did not.
	Ranks   []RASRank `json:"ranks,omitempty"`
	Missing []RASRank `json:"missing_ranks,omitempty"`
	// Mismatches are per collective: which ranks launched up to which
	// operation.
	Mismatches []RASMismatch `json:"mismatches,omitempty"`
	// RankErrors are a text "#g-c ERROR" entry's lines.
	RankErrors []string `json:"rank_errors,omitempty"`
}

// RASRank is one rank as RAS names it.
type RASRank struct {
	Rank int    `json:"rank"`
	Host string `json:"host,omitempty"`
	PID  int    `json:"pid,omitempty"`
	// GPU is the text form ("3", or a list); CUDADev and NVMLDev the JSON
	// fields (nvml_dev is unique on a node; cuda_dev repeats under
	// CUDA_VISIBLE_DEVICES).
	GPU     string `json:"gpu,omitempty"`
	CUDADev *int   `json:"cuda_dev,omitempty"`
	NVMLDev *int   `json:"nvml_dev,omitempty"`
	// InitState 0 is initialised, 7 in progress, anything else an error;
	// AsyncError is what ncclCommGetAsyncError returns.
	InitState    int              `json:"init_state,omitempty"`
	AsyncError   int              `json:"async_error,omitempty"`
	Finalize     bool             `json:"finalize_called,omitempty"`
	Destroy      bool             `json:"destroy_flag,omitempty"`
	Abort        bool             `json:"abort_flag,omitempty"`
	Counts       map[string]int64 `json:"collective_counts,omitempty"`
	Unresponsive bool             `json:"unresponsive,omitempty"`
	Dead         bool             `json:"considered_dead,omitempty"`
}

// Where is "rank 7 (GPU 3, PID 1650386 on node1)".
func (r RASRank) Where() string {
	var parts []string
	if g := r.GPUName(); g != "" {
		parts = append(parts, "GPU "+g)
	}
	if r.PID != 0 {
		parts = append(parts, fmt.Sprintf("PID %d", r.PID))
	}
	s := fmt.Sprintf("rank %d", r.Rank)
	if len(parts) > 0 || r.Host != "" {
		in := strings.Join(parts, ", ")
		if r.Host != "" {
			in = strings.TrimPrefix(in+" on "+r.Host, " ")
		}
		s += " (" + in + ")"
	}
	return s
}

// GPUName is the GPU as RAS printed it, else the CUDA device (and the
// NVML one where they differ).
func (r RASRank) GPUName() string {
	switch {
	case r.GPU != "":
		return r.GPU
	case r.CUDADev != nil && r.NVMLDev != nil && *r.CUDADev != *r.NVMLDev:
		return fmt.Sprintf("%d (NVML %d)", *r.CUDADev, *r.NVMLDev)
	case r.CUDADev != nil:
		return strconv.Itoa(*r.CUDADev)
	}
	return ""
}

// RASMismatch is one collective whose launch counts differ between the
// ranks of a communicator.
type RASMismatch struct {
	Op     string          `json:"op"`
	Groups []RASCountGroup `json:"groups"`
}

// RASCountGroup is "N ranks have launched up to operation M" (M −1: none
// launched), with the ranks RAS named (all of them from JSON; from text
// only the outlier group's).
type RASCountGroup struct {
	Count   int64     `json:"count"`
	NRanks  int       `json:"ranks"`
	Members []RASRank `json:"members,omitempty"`
}

// Max is the highest count any group reached.
func (m RASMismatch) Max() int64 {
	var hi int64 = -1
	for _, g := range m.Groups {
		hi = max(hi, g.Count)
	}
	return hi
}

var (
	rasProcessRE = lazyre.New(`^Process (\d+) on node (\S+) managing GPUs? (.+)$`)
	rasRankRE    = lazyre.New(`^Rank (\d+)(?: (?:has launched up to operation (\d+)|(has not launched any operations)|has status (\S+)|reported (.+?)))? -- (?:GPUs? (\S+) managed by process (\d+) on node (\S+)|\[process information not found\])$`)
	rasEntryRE   = lazyre.New(`^#(\d+)-(\d+) \(([0-9a-fA-F]+)\) ([A-Z,]+)$`)
	rasGroupRE   = lazyre.New(`^(\d+) ranks? (?:have|has) launched up to operation (\d+)$|^(\d+) ranks? (?:have|has) not launched any operations$`)
	rasOpRE      = lazyre.New(`^Communicator ranks have different (\S+) operation counts$`)
	rasBannerRE  = lazyre.New(`^NCCL version (\S+)`)
	rasCountRE   = lazyre.New(`^(?:Missing communicator data from|Encountered) (\d+) `)
	rasDeadRE    = lazyre.New(`^(\d+) job process(?:es)? (?:is|are) considered dead`)
	// the 2.28.x writer: a missing rank's "nvml_dev": N with no comma
	// before its "status" object
	rasCommaRE = lazyre.New(`("nvml_dev"\s*:\s*-?\d+)(\s*\n\s*"status")`)
)

// SniffRAS reports whether b is an ncclras report: its communicator table
// or entries (text), or its JSON keys.
func SniffRAS(b []byte) bool {
	if bytes.Contains(b, []byte(`"communicators_count"`)) || (bytes.Contains(b, []byte(`"missing_ranks"`)) && bytes.Contains(b, []byte(`"collective_counts"`))) {
		return true
	}
	for _, line := range strings.Split(string(b), "\n") {
		t := strings.TrimSpace(line)
		if strings.HasPrefix(t, "Group") && strings.Contains(t, "Comms") && strings.HasSuffix(t, "Errors") ||
			strings.HasPrefix(t, "Communicators...") || rasEntryRE().MatchString(t) {
			return true
		}
	}
	return false
}

// ParseRAS reads an ncclras report, text or JSON, whatever its
// indentation (ras.rst indents its samples) or a prompt line before it.
func ParseRAS(b []byte) (*RASReport, error) {
	b = bytes.ReplaceAll(b, []byte("\r\n"), []byte("\n"))
	if i := bytes.IndexByte(b, '{'); i >= 0 && bytes.Contains(b, []byte(`"communicators`)) {
		return parseRASJSON(b[i:])
	}
	r := parseRASText(b)
	if len(r.Comms) == 0 && !r.NoCommData && r.MissingCount == 0 && r.DeadCount == 0 {
		return nil, fmt.Errorf("an ncclras report without a communicator table or entry")
	}
	return r, nil
}

type rasJSONRank struct {
	Rank    int    `json:"rank"`
	Host    string `json:"host"`
	PID     int    `json:"pid"`
	CUDADev *int   `json:"cuda_dev"`
	NVMLDev *int   `json:"nvml_dev"`
	Status  struct {
		InitState    int  `json:"init_state"`
		AsyncError   int  `json:"async_error"`
		Finalize     bool `json:"finalize_called"`
		Destroy      bool `json:"destroy_flag"`
		Abort        bool `json:"abort_flag"`
		Unresponsive bool `json:"unresponsive"`
		Dead         bool `json:"considered_dead"`
	} `json:"status"`
	Counts map[string]int64 `json:"collective_counts"`
}

func (j rasJSONRank) rank() RASRank {
	return RASRank{Rank: j.Rank, Host: j.Host, PID: j.PID, CUDADev: j.CUDADev, NVMLDev: j.NVMLDev,
		InitState: j.Status.InitState, AsyncError: j.Status.AsyncError, Finalize: j.Status.Finalize, Destroy: j.Status.Destroy,
		Abort: j.Status.Abort, Counts: j.Counts, Unresponsive: j.Status.Unresponsive, Dead: j.Status.Dead}
}

func parseRASJSON(b []byte) (*RASReport, error) {
	var doc struct {
		Version   string `json:"nccl_version"`
		Timestamp string `json:"timestamp"`
		Count     int    `json:"communicators_count"`
		Comms     []struct {
			Hash      string        `json:"hash"`
			Secondary string        `json:"secondary_hash"`
			Size      int           `json:"size"`
			Ranks     []rasJSONRank `json:"ranks"`
			Missing   []rasJSONRank `json:"missing_ranks"`
		} `json:"communicators"`
		RAS struct {
			Timeouts int `json:"timeouts_count"`
		} `json:"ras"`
	}
	r := &RASReport{Format: "json"}
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&doc); err != nil {
		// NCCL 2.28.x wrote a missing rank without the comma between its
		// nvml_dev and status: insert it, name the repair, try again
		fixed, lines := repairRASComma(b)
		if len(lines) == 0 {
			return nil, fmt.Errorf("ncclras JSON: %w", err)
		}
		doc.Comms = nil
		if err2 := json.NewDecoder(bytes.NewReader(fixed)).Decode(&doc); err2 != nil {
			return nil, fmt.Errorf("ncclras JSON: %w", err)
		}
		r.Repairs = append(r.Repairs, fmt.Sprintf("NCCL 2.28.x missing-comma repair: the comma between a missing rank's \"nvml_dev\" and \"status\" was absent (invalid JSON) and was inserted at line(s) %s", strings.Join(lines, ", ")))
	}
	r.NCCLVersion, r.Timestamp, r.Timeouts = doc.Version, doc.Timestamp, doc.RAS.Timeouts
	for _, c := range doc.Comms {
		comm := RASComm{Hash: c.Hash, Size: c.Size}
		for _, k := range c.Ranks {
			comm.Ranks = append(comm.Ranks, k.rank())
		}
		for _, k := range c.Missing {
			comm.Missing = append(comm.Missing, k.rank())
		}
		comm.Mismatches = jsonMismatches(comm.Ranks)
		comm.Errors = jsonErrors(comm)
		r.Comms = append(r.Comms, comm)
	}
	return r, nil
}

// repairRASComma inserts the comma NCCL 2.28.x left out, returning the
// 1-based lines where it did.
func repairRASComma(b []byte) ([]byte, []string) {
	var lines []string
	for _, loc := range rasCommaRE().FindAllSubmatchIndex(b, -1) {
		lines = append(lines, strconv.Itoa(bytes.Count(b[:loc[3]], []byte("\n"))+1))
	}
	return rasCommaRE().ReplaceAll(b, []byte("$1,$2")), lines
}

// jsonMismatches derives what the text report calls MISMATCH: per
// collective, the ranks grouped by how many they launched.
func jsonMismatches(ranks []RASRank) []RASMismatch {
	ops := map[string]bool{}
	for _, k := range ranks {
		for op := range k.Counts {
			ops[op] = true
		}
	}
	var out []RASMismatch
	for _, op := range sortedKeys(ops) {
		by := map[int64][]RASRank{}
		for _, k := range ranks {
			by[k.Counts[op]] = append(by[k.Counts[op]], k)
		}
		if len(by) < 2 {
			continue
		}
		m := RASMismatch{Op: op}
		for c, ks := range by {
			m.Groups = append(m.Groups, RASCountGroup{Count: c, NRanks: len(ks), Members: ks})
		}
		sort.Slice(m.Groups, func(i, j int) bool { return m.Groups[i].NRanks > m.Groups[j].NRanks })
		out = append(out, m)
	}
	return out
}

func jsonErrors(c RASComm) []string {
	var e []string
	if len(c.Missing) > 0 {
		e = append(e, "INCOMPLETE")
	}
	if slices.ContainsFunc(c.Ranks, func(k RASRank) bool { return (k.InitState != 0 && k.InitState != 7) || k.AsyncError != 0 }) {
		e = append(e, "ERROR")
	}
	if len(c.Mismatches) > 0 {
		e = append(e, "MISMATCH")
	}
	if len(e) == 0 {
		e = []string{"OK"}
	}
	return e
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func rasRankOf(m []string) RASRank {
	k := RASRank{GPU: m[6], Host: m[8]}
	k.Rank, _ = strconv.Atoi(m[1])
	k.PID, _ = strconv.Atoi(m[7])
	return k
}

func parseRASText(b []byte) *RASReport {
	r := &RASReport{Format: "text"}
	section := ""
	var comm *RASComm   // the entry being read
	var mm *RASMismatch // its mismatch
	var process *[]RASProcess
	kind := "" // the entry's own word: INCOMPLETE, ERROR, MISMATCH
	inTable, inJob := false, false
	commByID := func(g, c int, hash string) *RASComm {
		id := fmt.Sprintf("#%d-%d", g, c)
		for i := range r.Comms {
			if r.Comms[i].ID == id {
				r.Comms[i].Hash = hash
				return &r.Comms[i]
			}
		}
		// an entry whose group row is not in the paste: keep it alone
		r.Comms = append(r.Comms, RASComm{ID: id, Hash: hash})
		return &r.Comms[len(r.Comms)-1]
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		t := strings.TrimSpace(sc.Text())
		f := strings.Fields(t)
		switch {
		case t == "" || strings.Trim(t, "=") == "":
			continue
		case rasBannerRE().MatchString(t):
			r.NCCLVersion = rasBannerRE().FindStringSubmatch(t)[1]
			continue
		case t == "Job summary":
			section, inJob = "job", true
			continue
		case strings.HasPrefix(t, "Communicators..."):
			section, inJob = "comms", false
			continue
		case t == "Errors" || t == "Warnings":
			section, inTable, comm, mm, process = t, false, nil, nil, nil
			continue
		case strings.HasPrefix(t, "Group") && strings.HasSuffix(t, "Errors"):
			section, inTable = "comms", true
			continue
		case t == "No communicator data collected!":
			r.NoCommData = true
			continue
		}
		if inJob && len(f) == 5 && r.Job == nil {
			if n, ok := ints(f); ok {
				r.Job = &RASJob{Nodes: n[0], ProcessesPerNode: n[1], GPUsPerProcess: n[2], Processes: n[3], GPUs: n[4]}
			}
			continue
		}
		if inTable && len(f) == 8 {
			if n, ok := ints([]string{f[0], f[1], f[2], f[4], f[5]}); ok {
				r.Comms = append(r.Comms, RASComm{ID: fmt.Sprintf("#%d-0", n[0]), CommsInGroup: n[1], NodesPerComm: n[2], RanksPerNode: f[3],
					Size: n[3], RanksInGroup: n[4], Status: f[6], Errors: strings.Split(f[7], ",")})
				continue
			}
		}
		if section != "Errors" && section != "Warnings" {
			continue
		}
		switch {
		case t == "INCOMPLETE" && section == "Errors":
			process, comm, mm = &r.MissingProcesses, nil, nil
		case t == "DEAD":
			process, comm, mm = &r.DeadProcesses, nil, nil
		case t == "TIMEOUT":
			process, comm, mm = nil, nil, nil
		case rasEntryRE().MatchString(t):
			m := rasEntryRE().FindStringSubmatch(t)
			g, _ := strconv.Atoi(m[1])
			c, _ := strconv.Atoi(m[2])
			comm, mm, process, kind = commByID(g, c, m[3]), nil, nil, m[4]
			for _, e := range strings.Split(m[4], ",") {
				if !slices.Contains(comm.Errors, e) {
					comm.Errors = append(slices.DeleteFunc(comm.Errors, func(s string) bool { return s == "OK" }), e)
				}
			}
		case rasCountRE().MatchString(t):
			n, _ := strconv.Atoi(rasCountRE().FindStringSubmatch(t)[1])
			switch {
			case strings.HasPrefix(t, "Encountered"):
				r.Timeouts = n
			case comm == nil:
				r.MissingCount = n
			}
		case rasDeadRE().MatchString(t):
			r.DeadCount, _ = strconv.Atoi(rasDeadRE().FindStringSubmatch(t)[1])
		case rasProcessRE().MatchString(t) && process != nil:
			m := rasProcessRE().FindStringSubmatch(t)
			pid, _ := strconv.Atoi(m[1])
			*process = append(*process, RASProcess{PID: pid, Host: m[2], GPU: m[3]})
		case comm != nil && rasOpRE().MatchString(t):
			comm.Mismatches = append(comm.Mismatches, RASMismatch{Op: rasOpRE().FindStringSubmatch(t)[1]})
			mm = &comm.Mismatches[len(comm.Mismatches)-1]
		case mm != nil && rasGroupRE().MatchString(t):
			m := rasGroupRE().FindStringSubmatch(t)
			g := RASCountGroup{Count: -1}
			if m[1] != "" {
				g.NRanks, _ = strconv.Atoi(m[1])
				g.Count, _ = strconv.ParseInt(m[2], 10, 64)
			} else {
				g.NRanks, _ = strconv.Atoi(m[3])
			}
			mm.Groups = append(mm.Groups, g)
		case comm != nil && rasRankRE().MatchString(t):
			m := rasRankRE().FindStringSubmatch(t)
			k := rasRankOf(m)
			switch {
			case mm != nil && (m[2] != "" || m[3] != ""):
				// "Rank 7 has launched up to operation 60 -- …": a group of its own
				c := int64(-1)
				if m[2] != "" {
					c, _ = strconv.ParseInt(m[2], 10, 64)
				}
				k.Counts = map[string]int64{mm.Op: c}
				mm.Groups = append(mm.Groups, RASCountGroup{Count: c, NRanks: 1, Members: []RASRank{k}})
			case mm != nil && len(mm.Groups) > 0:
				// "Rank 12 -- …" under "2 ranks have launched up to operation 641"
				g := &mm.Groups[len(mm.Groups)-1]
				k.Counts = map[string]int64{mm.Op: g.Count}
				g.Members = append(g.Members, k)
			case strings.Contains(kind, "INCOMPLETE") && mm == nil && m[5] == "":
				k.Unresponsive = true
				comm.Missing = append(comm.Missing, k)
			default:
				comm.RankErrors = append(comm.RankErrors, t)
				comm.Ranks = append(comm.Ranks, k)
			}
		case comm != nil && (strings.HasPrefix(t, "Initialization error") || strings.HasPrefix(t, "Asynchronous error") || strings.HasPrefix(t, "Communicator ranks have different status")):
			comm.RankErrors = append(comm.RankErrors, t)
		}
	}
	return r
}

func ints(f []string) ([]int, bool) {
	out := make([]int, len(f))
	for i, s := range f {
		n, err := strconv.Atoi(s)
		if err != nil {
			return nil, false
		}
		out[i] = n
	}
	return out, true
}
