// Package portstate is the one vocabulary of InfiniBand port states: the
// logical state (IBTA PortInfo.PortState, 1..5) and the physical state
// (PortInfo.PortPhysicalState, 1..7), parsed from every spelling the
// kernel and the tools print, compared by value, displayed and exported
// by number. The host model and the fabric model both hold these types.
package portstate

import (
	"strconv"
	"strings"
	"unicode"
)

// State is a port's logical state. The zero value is unknown: the source
// did not say, or said it in a spelling no tool prints.
type State uint8

// The logical states by their IBTA number.
const (
	Down State = 1 + iota
	Init
	Armed
	Active
	ActiveDefer
)

// Phys is a port's physical state; the zero value is unknown.
type Phys uint8

// The physical states by their IBTA number.
const (
	Sleep Phys = 1 + iota
	Polling
	Disabled
	Training // PortConfigurationTraining
	LinkUp
	LinkErrorRecovery
	PhyTest
)

// Each state is spelt two ways: as infiniband-diags prints it (iblinkinfo,
// ibstat, ibportstate, smpquery: "Active", "Initialize"), which is its
// String and its text form in a fabric snapshot; and as the kernel's sysfs
// prints it ("4: ACTIVE", ibstatus the same), which is how a host
// snapshot and doctor's messages spell it. The physical states are spelt
// alike by both.
var (
	stateNames = [...]string{Down: "Down", Init: "Initialize", Armed: "Armed", Active: "Active", ActiveDefer: "ActiveDefer"}
	stateSysfs = [...]string{Down: "DOWN", Init: "INIT", Armed: "ARMED", Active: "ACTIVE", ActiveDefer: "ACTIVE_DEFER"}
	physNames  = [...]string{Sleep: "Sleep", Polling: "Polling", Disabled: "Disabled", Training: "PortConfigurationTraining", LinkUp: "LinkUp", LinkErrorRecovery: "LinkErrorRecovery", PhyTest: "PhyTest"}
)

// stateWords and physWords hold every word a tool prints for a state,
// folded by fold; ibv_devinfo's "PORT_" prefix is cut before the lookup.
var (
	stateWords = map[string]State{
		"DOWN": Down, "INIT": Init, "INITIALIZE": Init, "INITIALIZING": Init, "INITIALIZED": Init,
		"ARMED": Armed, "ACTIVE": Active, "ACTIVEDEFER": ActiveDefer, "ACTDEFER": ActiveDefer,
	}
	physWords = map[string]Phys{
		"SLEEP": Sleep, "POLLING": Polling, "DISABLED": Disabled, "PORTCONFIGURATIONTRAINING": Training,
		"LINKUP": LinkUp, "LINKERRORRECOVERY": LinkErrorRecovery, "PHYTEST": PhyTest,
	}
)

// ParseState reads a logical state as any tool prints it: sysfs and
// ibstatus "4: ACTIVE", ibstat and iblinkinfo "Active", ibv_devinfo
// "PORT_ACTIVE (4)", "Init", "Initialize", "INIT". Where the spelling
// carries a number, the word (if any) must agree with it; anything else
// is unknown, never a guess.
func ParseState(s string) State {
	n, word := split(s)
	w := stateWords[strings.TrimPrefix(word, "PORT")]
	if n < 0 {
		return w
	}
	if n > 0 && n < len(stateNames) && (word == "" || w == State(n)) {
		return State(n)
	}
	return 0
}

// ParsePhys reads a physical state as any tool prints it: "LinkUp",
// "5: LinkUp", "LINK_UP (5)", "Polling", "Disabled".
func ParsePhys(s string) Phys {
	n, word := split(s)
	w := physWords[word]
	if n < 0 {
		return w
	}
	if n > 0 && n < len(physNames) && (word == "" || w == Phys(n)) {
		return Phys(n)
	}
	return 0
}

// split returns the number a spelling carries ("4: ACTIVE", "PORT_ACTIVE
// (4)"), -1 when it carries none, and its word folded: upper case without
// underscores, spaces or hyphens ("PORT_ACTIVE_DEFER" → "PORTACTIVEDEFER").
func split(s string) (int, string) {
	s = strings.TrimSpace(s)
	num := ""
	if i := strings.IndexByte(s, ':'); i > 0 {
		num, s = s[:i], s[i+1:]
	} else if strings.HasSuffix(s, ")") {
		if i := strings.LastIndexByte(s, '('); i >= 0 {
			num, s = s[i+1:len(s)-1], s[:i]
		}
	}
	n := -1
	if num != "" {
		v, err := strconv.Atoi(strings.TrimSpace(num))
		if err != nil || v < 0 {
			return 0, "" // a number that is not one: unknown
		}
		n = v
	}
	return n, fold(s)
}

func fold(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '_' || r == '-' || unicode.IsSpace(r):
		case r >= 'a' && r <= 'z':
			b.WriteRune(r - 'a' + 'A')
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// Known reports whether the state is one of the five.
func (s State) Known() bool { return s > 0 && int(s) < len(stateNames) }

// ID is the IBTA number (0 when unknown), what the exporter exports.
func (s State) ID() int {
	if !s.Known() {
		return 0
	}
	return int(s)
}

// String spells the state as infiniband-diags does ("Active"); unknown is
// empty, as a source that did not say has always been shown.
func (s State) String() string {
	if !s.Known() {
		return ""
	}
	return stateNames[s]
}

// Sysfs spells the state as the kernel's sysfs does ("ACTIVE").
func (s State) Sysfs() string {
	if !s.Known() {
		return ""
	}
	return stateSysfs[s]
}

// MarshalText writes String: unknown is "".
func (s State) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText accepts any spelling ParseState does; one it does not know
// is unknown, not an error, so a snapshot that kept an odd spelling loads.
func (s *State) UnmarshalText(b []byte) error {
	*s = ParseState(string(b))
	return nil
}

// Known reports whether the state is one of the seven.
func (p Phys) Known() bool { return p > 0 && int(p) < len(physNames) }

// ID is the IBTA number (0 when unknown).
func (p Phys) ID() int {
	if !p.Known() {
		return 0
	}
	return int(p)
}

// String spells the physical state as both sysfs and infiniband-diags do
// ("LinkUp"); unknown is empty.
func (p Phys) String() string {
	if !p.Known() {
		return ""
	}
	return physNames[p]
}

// MarshalText writes String: unknown is "".
func (p Phys) MarshalText() ([]byte, error) { return []byte(p.String()), nil }

// UnmarshalText accepts any spelling ParsePhys does; unknown is no error.
func (p *Phys) UnmarshalText(b []byte) error {
	*p = ParsePhys(string(b))
	return nil
}
