package ncclrun

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/rdmalab/rdmalab/internal/nccl"
)

// NCCL's RAS client socket (src/ras/ras_internal.h): every NCCL process
// of a job listens on NCCL_RAS_ADDR, localhost:28028 unless set, and
// speaks a line protocol: "CLIENT PROTOCOL 2" is answered by "SERVER
// PROTOCOL 2"; "SET FORMAT json" by "OK" (NCCL ≥ 2.28.7; older ones say
// "ERROR: …" and stay with text); "[VERBOSE ]STATUS" by the report, the
// server closing the connection at its end.
const (
	DefaultRASPort = 28028
	rasProtocol    = 2
	// rasMaxReport bounds one report read from the socket.
	rasMaxReport = 64 << 20
)

// QueryRAS asks the RAS endpoint at addr for one report, JSON where the
// server speaks it (every rank's counts), else the verbose text report,
// all within timeout.
func QueryRAS(ctx context.Context, addr string, timeout time.Duration) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.Close() }) // a cancel ends a blocked read
	defer stop()
	if dl, ok := ctx.Deadline(); ok {
		conn.SetDeadline(dl)
	}
	r := bufio.NewReader(io.LimitReader(conn, rasMaxReport))
	say := func(cmd string) (string, error) {
		if _, err := io.WriteString(conn, cmd+"\n"); err != nil {
			return "", fmt.Errorf("sending %q: %w", cmd, err)
		}
		line, err := r.ReadString('\n')
		if err != nil {
			return "", fmt.Errorf("reply to %q: %w", cmd, err)
		}
		return strings.TrimSpace(line), nil
	}
	reply, err := say("CLIENT PROTOCOL " + strconv.Itoa(rasProtocol))
	if err != nil {
		return nil, timeoutWord(ctx, err)
	}
	v, ok := strings.CutPrefix(strings.ToUpper(reply), "SERVER PROTOCOL ")
	if !ok {
		return nil, fmt.Errorf("not an NCCL RAS endpoint: it answered %q to the client protocol line", clip(reply))
	}
	if n, _ := strconv.Atoi(strings.TrimSpace(v)); n != rasProtocol {
		return nil, fmt.Errorf("RAS protocol %s, this client speaks %d (NCCL's own ncclras of that version reads it)", strings.TrimSpace(v), rasProtocol)
	}
	reply, err = say("SET FORMAT json")
	if err != nil {
		return nil, timeoutWord(ctx, err)
	}
	cmd := "STATUS"
	if !strings.EqualFold(reply, "OK") {
		cmd = "VERBOSE STATUS" // text: verbose names more of the outlier ranks
	}
	if _, err := io.WriteString(conn, cmd+"\n"); err != nil {
		return nil, timeoutWord(ctx, err)
	}
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, timeoutWord(ctx, fmt.Errorf("reading the report: %w", err))
	}
	if len(b) == 0 {
		return nil, errors.New("the endpoint closed without a report")
	}
	return b, nil
}

func timeoutWord(ctx context.Context, err error) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded) {
		return fmt.Errorf("no answer within the poll's timeout (%w)", err)
	}
	return err
}

func clip(s string) string {
	if len(s) > 60 {
		return s[:60] + "…"
	}
	return s
}

// PollOptions is what nccl ras polls.
type PollOptions struct {
	Addr     string
	Interval time.Duration
	Polls    int
	// Timeout bounds each poll (connect, handshake, the report).
	Timeout time.Duration
	// Progress gets one line per poll; nil is silent.
	Progress io.Writer
}

// PollRAS polls the endpoint Polls times, Interval apart (from one poll's
// start to the next), each bounded by Timeout. A poll that fails is kept
// with its error; only a cancelled ctx stops it early (its error returned
// with the polls made).
func PollRAS(ctx context.Context, o PollOptions) ([]nccl.RASPoll, error) {
	var polls []nccl.RASPoll
	for i := range o.Polls {
		start := time.Now()
		p := nccl.RASPoll{At: start}
		b, err := QueryRAS(ctx, o.Addr, o.Timeout)
		if err == nil {
			p.Report, err = nccl.ParseRAS(b)
		}
		if ctx.Err() != nil {
			return polls, ctx.Err()
		}
		if err != nil {
			p.Err = err.Error()
		}
		polls = append(polls, p)
		if o.Progress != nil {
			fmt.Fprintf(o.Progress, "rdmalab: RAS poll %d/%d of %s: %s\n", i+1, o.Polls, o.Addr, pollLine(p))
		}
		if i == o.Polls-1 {
			break
		}
		select {
		case <-ctx.Done():
			return polls, ctx.Err()
		case <-time.After(time.Until(start.Add(o.Interval))):
		}
	}
	return polls, nil
}

func pollLine(p nccl.RASPoll) string {
	if p.Report == nil {
		return "failed: " + p.Err
	}
	ranks, lag := 0, 0
	for _, c := range p.Report.Comms {
		ranks += max(len(c.Ranks)+len(c.Missing), c.RanksInGroup)
		lag += len(c.Mismatches)
	}
	return fmt.Sprintf("%s report, %d communicator(s), %d rank(s), %d mismatch(es)", p.Report.Format, len(p.Report.Comms), ranks, lag)
}
