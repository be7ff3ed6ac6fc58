package view

import "testing"

func TestBytes(t *testing.T) {
	for n, want := range map[int64]string{0: "0 B", 1023: "1023 B", 1024: "1.0 KiB", 16 << 20: "16.0 MiB", 3 << 30: "3.0 GiB"} {
		if got := Bytes(n); got != want {
			t.Errorf("Bytes(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestWrap(t *testing.T) {
	tests := []struct{ text, indent, want string }{
		{"", "  ", ""},
		{"one two three", "  ", "  one two\n  three\n"},
		{"aaaa bbbb cccc", "", "aaaa bbbb\ncccc\n"},
		{"aaaaaaaaaaaa b", "", "aaaaaaaaaaaa\nb\n"},
	}
	for _, tt := range tests {
		if got := wrap(tt.text, tt.indent, 10); got != tt.want {
			t.Errorf("wrap(%q) = %q, want %q", tt.text, got, tt.want)
		}
	}
}
