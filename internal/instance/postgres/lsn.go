package postgres

import (
	"fmt"
	"strconv"
	"strings"
)

// LSN is a position in the write-ahead log (PostgreSQL's pg_lsn). It
// compares as an integer and prints as PostgreSQL does ("16/B374D848").
type LSN uint64

// ParseLSN parses the text form of a pg_lsn: two hexadecimal numbers of at
// most 8 digits separated by a slash.
func ParseLSN(s string) (LSN, error) {
	hi, lo, ok := strings.Cut(s, "/")
	if !ok || hi == "" || lo == "" || len(hi) > 8 || len(lo) > 8 {
		return 0, fmt.Errorf("invalid LSN %q: want two hexadecimal numbers separated by a slash", s)
	}
	h, err := strconv.ParseUint(hi, 16, 32)
	if err != nil {
		return 0, fmt.Errorf("invalid LSN %q: %w", s, err)
	}
	l, err := strconv.ParseUint(lo, 16, 32)
	if err != nil {
		return 0, fmt.Errorf("invalid LSN %q: %w", s, err)
	}
	return LSN(h<<32 | l), nil
}

// String is the text form of the LSN, as pg_lsn prints it.
func (l LSN) String() string {
	return fmt.Sprintf("%X/%X", uint64(l)>>32, uint64(l)&0xFFFFFFFF)
}

// MarshalText makes an LSN appear in its text form in reports.
func (l LSN) MarshalText() ([]byte, error) {
	return []byte(l.String()), nil
}

// UnmarshalText parses the text form of an LSN.
func (l *LSN) UnmarshalText(b []byte) error {
	v, err := ParseLSN(string(b))
	if err != nil {
		return err
	}
	*l = v
	return nil
}

// parseNullLSN parses an LSN that a query may return as NULL (no WAL
// received yet, for instance): NULL is 0, the LSN before any WAL.
func parseNullLSN(s *string) (LSN, error) {
	if s == nil {
		return 0, nil
	}
	return ParseLSN(*s)
}
