package bench

import "github.com/rdmalab/rdmalab/internal/resultslog"

// Results is bench's results log (resultslog owns the file's rules): a
// header bound to the cluster, then one Record per measured direction.
var Results = resultslog.Kind[Record]{Format: "rdmalab-bench-results", Version: 2, Tool: "bench", Valid: Record.valid}
