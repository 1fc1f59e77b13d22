package portstate

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
)

// Every spelling the kernel and the tools print (the shared captures hold
// most of them: ibstat "Active", ibstatus "4: ACTIVE", ibv_devinfo
// "PORT_ACTIVE (4)", iblinkinfo "Down/ Polling").
func TestParseState(t *testing.T) {
	for in, want := range map[string]State{
		"4: ACTIVE": Active, "Active": Active, "ACTIVE": Active, "PORT_ACTIVE (4)": Active, "  Active  ": Active,
		"1: DOWN": Down, "Down": Down, "PORT_DOWN (1)  ": Down,
		"2: INIT": Init, "Init": Init, "INIT": Init, "Initialize": Init, "Initializing": Init, "PORT_INIT (2)": Init,
		"3: ARMED": Armed, "Armed": Armed, "PORT_ARMED (3)": Armed,
		"5: ACTIVE_DEFER": ActiveDefer, "ActDefer": ActiveDefer, "PORT_ACTIVE_DEFER (5)": ActiveDefer,
		"": 0, "0: NOP": 0, "NOP": 0, "6: ACTIVE": 0, "Inactive": 0, "Sleeping beauty": 0, "x: ACTIVE": 0,
		"ACTIVE (x)": 0, "4: DOWN": 0, "(4)": Active, "-4: ACTIVE": 0, "LinkUp": 0, "PORT_": 0,
	} {
		if got := ParseState(in); got != want {
			t.Errorf("ParseState(%q) = %d, want %d", in, got, want)
		}
	}
}

func TestParsePhys(t *testing.T) {
	for in, want := range map[string]Phys{
		"LinkUp": LinkUp, "5: LinkUp": LinkUp, "LINK_UP (5)": LinkUp, "LinkUp        ": LinkUp,
		"Polling": Polling, "2: Polling": Polling, "POLLING (2)": Polling,
		"Disabled": Disabled, "3: Disabled": Disabled, "DISABLED (3)": Disabled,
		"Sleep": Sleep, "PortConfigurationTraining": Training, "PORT_CONFIGURATION_TRAINING (4)": Training,
		"LinkErrorRecovery": LinkErrorRecovery, "7: Phy Test": PhyTest, "PHY_TEST": PhyTest,
		"": 0, "0: <unknown>": 0, "8: LinkUp": 0, "Active": 0, "Link": 0,
	} {
		if got := ParsePhys(in); got != want {
			t.Errorf("ParsePhys(%q) = %d, want %d", in, got, want)
		}
	}
}

func TestSpellings(t *testing.T) {
	if Init.String() != "Initialize" || Init.Sysfs() != "INIT" || Active.ID() != 4 || LinkUp.ID() != 5 || LinkUp.String() != "LinkUp" {
		t.Errorf("Init %q/%q, Active %d, LinkUp %d %q", Init, Init.Sysfs(), Active.ID(), LinkUp.ID(), LinkUp)
	}
	if State(0).String() != "" || State(9).ID() != 0 || Phys(0).String() != "" || Phys(8).Known() {
		t.Error("unknown states must be empty and number 0")
	}
}

// A fabric snapshot spells states as infiniband-diags does and leaves an
// unknown state out (omitempty); every old spelling loads.
func TestJSON(t *testing.T) {
	type port struct {
		State State `json:"state,omitempty"`
		Phys  Phys  `json:"phys_state"`
	}
	b, err := json.Marshal([]port{{Active, LinkUp}, {}})
	if err != nil || string(b) != `[{"state":"Active","phys_state":"LinkUp"},{"phys_state":""}]` {
		t.Fatalf("%s %v", b, err)
	}
	var got []port
	if err := json.Unmarshal([]byte(`[{"state":"ACTIVE","phys_state":"5: LinkUp"},{"state":"Initialize"},{"state":"who knows","phys_state":""}]`), &got); err != nil {
		t.Fatal(err)
	}
	if got[0] != (port{Active, LinkUp}) || got[1] != (port{Init, 0}) || got[2] != (port{}) {
		t.Errorf("%+v", got)
	}
}

// Properties: every state parses back from each of its spellings (diags,
// sysfs "N: NAME", ibv_devinfo "PORT_NAME (N)"); nothing panics or leaves
// the range; a spelling is Active (LinkUp) only if its word says so or it
// is the bare number.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"4: ACTIVE", "Active", "PORT_ACTIVE (4)", "Initialize", "LINK_UP (5)", "5: LinkUp", "Phy Test", "(", ":", "PORT_", "4: DOWN", "9999999999999999999: x", "(4)"} {
		f.Add(s, uint8(4))
	}
	f.Fuzz(func(t *testing.T, s string, n uint8) {
		st, ph := ParseState(s), ParsePhys(s)
		if st.Known() != (st != 0) || ph.Known() != (ph != 0) {
			t.Fatalf("%q: parsed to an out-of-range value %d/%d", s, st, ph)
		}
		bare := strings.Trim(fold(s), "0123456789:()+") == ""
		if st == Active && !strings.Contains(fold(s), "ACTIVE") && !bare {
			t.Fatalf("%q read as Active", s)
		}
		if ph == LinkUp && !strings.Contains(fold(s), "LINKUP") && !bare {
			t.Fatalf("%q read as LinkUp", s)
		}
		x := State(n % uint8(len(stateNames)))
		for _, sp := range []string{x.String(), x.Sysfs(), strings.ToUpper(x.String()), strings.ToLower(x.Sysfs())} {
			if got := ParseState(sp); got != x {
				t.Fatalf("ParseState(%q) = %d, want %d", sp, got, x)
			}
		}
		if x.Known() {
			id := strconv.Itoa(x.ID())
			for _, sp := range []string{id + ": " + x.Sysfs(), "PORT_" + x.Sysfs() + " (" + id + ")", id + ":"} {
				if got := ParseState(sp); got != x {
					t.Fatalf("ParseState(%q) = %d, want %d", sp, got, x)
				}
			}
		}
		y := Phys(n % uint8(len(physNames)))
		if got := ParsePhys(y.String()); got != y {
			t.Fatalf("ParsePhys(%q) = %d, want %d", y.String(), got, y)
		}
		if y.Known() {
			if got := ParsePhys(strconv.Itoa(y.ID()) + ": " + y.String()); got != y {
				t.Fatalf("sysfs form of %d read as %d", y, got)
			}
		}
	})
}
