package report

import "io"

// TerminalWidth is the width of the terminal w writes to, when it is one
// (help text wraps to it as tables do).
func TerminalWidth(w io.Writer) (int, bool) { return terminalWidth(w) }
