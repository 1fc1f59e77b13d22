// Package design holds rdmalab's cluster design calculators, as seed 001
// does them by hand: the uplink sized to the dataset ingest rate (not to the
// internal fabric), transfer times of checkpoints and weight files, the
// leaf/spine (or InfiniBand fat-tree) sizing with its cabling plan and
// allreduce ceiling, and the FRR configurations of a BGP-unnumbered routed
// Clos (RFC 7938). Every number it returns is a Figure carrying its formula
// and the inputs it was worked from, so a reader can redo the arithmetic.
//
// The calculators take the flags' text (sizes, rates) and parse it here,
// so the command line stays a thin layer; a bad input is an *InputError
// naming the flag.
package design

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Figure is one computed number with how it was computed.
type Figure struct {
	Name  string  `json:"name"`
	Value float64 `json:"value"`
	Unit  string  `json:"unit"`
	// Formula is symbolic ("size × 8 / rate"); Working is the same with
	// the inputs filled in and the result ("280 GB × 8 / 25 Gb/s = 89.6 s").
	Formula string `json:"formula"`
	Working string `json:"working"`
}

// InputError is a bad flag value: the command could not run.
type InputError struct {
	Flag string // "--size"
	Err  error
}

func (e *InputError) Error() string { return e.Flag + ": " + e.Err.Error() }
func (e *InputError) Unwrap() error { return e.Err }

func inputErr(flag, format string, a ...any) error {
	return &InputError{Flag: flag, Err: fmt.Errorf(format, a...)}
}

// num prints a number the way a person writes it: integers plainly,
// others with up to three significant decimals ("89.6", "0.99", "22.4").
// Num formats a figure as the calculators print it: whole numbers whole,
// others to as many decimals as their size needs.
func Num(v float64) string { return num(v) }

func num(v float64) string {
	if v == math.Trunc(v) && math.Abs(v) < 1e15 {
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	prec := 1
	switch a := math.Abs(v); {
	case a < 1:
		prec = 3
	case a < 10:
		prec = 2
	}
	s := strconv.FormatFloat(v, 'f', prec, 64)
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s
}

func figure(name string, value float64, unit, formula, working string) Figure {
	result := num(value) + unitSep(unit)
	if working == num(value) {
		return Figure{Name: name, Value: value, Unit: unit, Formula: formula, Working: result}
	}
	return Figure{Name: name, Value: value, Unit: unit, Formula: formula, Working: working + " = " + result}
}

func unitSep(unit string) string {
	if unit == "" {
		return ""
	}
	return " " + unit
}
