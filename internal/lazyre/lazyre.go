// Package lazyre holds regular expressions compiled on first use. The
// parsers keep some hundred patterns at package level; compiled at start
// they cost every run of rdmalab (inventory, --version) a third of its
// start-up, although one run uses a few.
package lazyre

import (
	"regexp"
	"sync"
)

// New returns a func that compiles pattern the first time it is called
// and returns the same *regexp.Regexp ever after. A pattern that does not
// compile panics at that first call, as regexp.MustCompile would at start.
func New(pattern string) func() *regexp.Regexp {
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(pattern) })
}
