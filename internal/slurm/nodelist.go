package slurm

import (
	"fmt"
	"strconv"
	"strings"
)

// maxNodes bounds what one node list may expand to.
const maxNodes = 1 << 20

// ExpandNodeList expands Slurm's host list syntax as in
// SLURM_JOB_NODELIST: "node[1-4],gpu[01-03,07],login" → node1 … login.
// Zero padding is kept (gpu01); several bracket groups multiply
// (rack[1-2]-n[1-2]).
func ExpandNodeList(s string) ([]string, error) {
	var out []string
	for _, item := range splitTop(strings.TrimSpace(s)) {
		if item == "" {
			return nil, fmt.Errorf("node list %q: empty name", s)
		}
		names, err := expandOne(item)
		if err != nil {
			return nil, fmt.Errorf("node list %q: %w", s, err)
		}
		out = append(out, names...)
		if len(out) > maxNodes {
			return nil, fmt.Errorf("node list %q: more than %d nodes", s, maxNodes)
		}
	}
	return out, nil
}

// splitTop splits on commas outside brackets.
func splitTop(s string) []string {
	var parts []string
	depth, start := 0, 0
	for i, c := range s {
		switch c {
		case '[':
			depth++
		case ']':
			depth--
		case ',':
			if depth == 0 {
				parts = append(parts, s[start:i])
				start = i + 1
			}
		}
	}
	return append(parts, s[start:])
}

func expandOne(item string) ([]string, error) {
	open := strings.IndexByte(item, '[')
	if open < 0 {
		if strings.ContainsAny(item, "]") {
			return nil, fmt.Errorf("%q: unbalanced ]", item)
		}
		return []string{item}, nil
	}
	end := strings.IndexByte(item[open:], ']')
	if end < 0 {
		return nil, fmt.Errorf("%q: unbalanced [", item)
	}
	end += open
	prefix, ranges, rest := item[:open], item[open+1:end], item[end+1:]
	tails, err := expandOne(rest)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, r := range strings.Split(ranges, ",") {
		lo, hi, isRange := strings.Cut(r, "-")
		if !isRange {
			hi = lo
		}
		a, err1 := strconv.Atoi(lo)
		b, err2 := strconv.Atoi(hi)
		if err1 != nil || err2 != nil || a < 0 || b < a || lo == "" {
			return nil, fmt.Errorf("%q: bad range %q", item, r)
		}
		if (b-a+1)*len(tails) > maxNodes {
			return nil, fmt.Errorf("%q: more than %d nodes", item, maxNodes)
		}
		width := 0
		if len(lo) > 1 && lo[0] == '0' {
			width = len(lo)
		}
		for i := a; i <= b; i++ {
			for _, t := range tails {
				out = append(out, fmt.Sprintf("%s%0*d%s", prefix, width, i, t))
			}
		}
	}
	return out, nil
}
