package units

import "testing"

func TestParseBytes(t *testing.T) {
	for in, want := range map[string]int64{
		"32G": 32 << 30, "2M": 2 << 20, "1GiB": 1 << 30, "280GB": 280e9, "1.5TB": 1.5e12, "1t": 1 << 40, "4096B": 4096, " 200G ": 200 << 30, "0.5G": 1 << 29,
	} {
		if got, err := ParseBytes(in); err != nil || got != want {
			t.Errorf("ParseBytes(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"200", "", "0G", "-5G", "G", "1.5B", "12 furlongs", "1e3G", "99999999999P", "NaNG"} {
		if got, err := ParseBytes(bad); err == nil {
			t.Errorf("ParseBytes(%q) = %d, want an error", bad, got)
		}
	}
}

func FuzzParseBytes(f *testing.F) {
	for _, s := range []string{"32G", "280GB", "1.5TB", "200", "0.5M"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		b, err := ParseBytes(s)
		if err != nil {
			return
		}
		if b <= 0 {
			t.Fatalf("ParseBytes(%q) accepted %d", s, b)
		}
		// Whatever is accepted prints in a form that reads back the same.
		if back, err := ParseBytes(FormatBytes(b)); err != nil || back != b {
			t.Fatalf("%q → %d → %q → %d, %v", s, b, FormatBytes(b), back, err)
		}
	})
}
