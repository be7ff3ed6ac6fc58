package postgres

import (
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/bidi"
	"golang.org/x/text/unicode/norm"
)

// saslPrep prepares a password the way PostgreSQL's pg_saslprep does
// (src/common/saslprep.c, RFC 4013), so that a verifier computed here
// matches what a libpq client derives from the same password:
//
//   - a pure ASCII password is used as it is;
//   - otherwise non-ASCII spaces become spaces, characters "commonly mapped
//     to nothing" are dropped, and the result is NFKC-normalized;
//   - a password that is not UTF-8, becomes empty, or holds a prohibited
//     character or a bad mix of directions (checked, as PostgreSQL does,
//     on the mapped password before normalization) is used as it is.
//
// Two approximations, both for characters a password rarely holds: RFC
// 3454's table of code points unassigned in Unicode 3.2 and its
// directionality tables are taken from Go's newer Unicode data, so a
// character assigned after Unicode 3.2 counts as assigned here.
func saslPrep(password string) string {
	if isASCII(password) || !utf8.ValidString(password) {
		return password
	}
	mapped := make([]rune, 0, len(password))
	for _, r := range password {
		switch {
		case unicode.Is(nonASCIISpace, r):
			mapped = append(mapped, ' ')
		case unicode.Is(mappedToNothing, r):
		default:
			mapped = append(mapped, r)
		}
	}
	if len(mapped) == 0 {
		return password
	}
	randAL, l := false, false
	for _, r := range mapped {
		if unicode.Is(prohibitedOutput, r) || !assigned(r) {
			return password
		}
		switch bidiClass(r) {
		case bidi.R, bidi.AL:
			randAL = true
		case bidi.L:
			l = true
		}
	}
	if randAL {
		first, last := bidiClass(mapped[0]), bidiClass(mapped[len(mapped)-1])
		if l || (first != bidi.R && first != bidi.AL) || (last != bidi.R && last != bidi.AL) {
			return password
		}
	}
	return norm.NFKC.String(string(mapped))
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

func bidiClass(r rune) bidi.Class {
	p, _ := bidi.LookupRune(r)
	return p.Class()
}

// assigned tells whether r is an assigned character: in some general
// category of Go's Unicode tables (private use and surrogates are
// prohibited separately).
func assigned(r rune) bool {
	for _, t := range unicode.Categories {
		if unicode.Is(t, r) {
			return true
		}
	}
	return false
}

// nonASCIISpace is RFC 3454 table C.1.2.
var nonASCIISpace = &unicode.RangeTable{R16: []unicode.Range16{
	{0x00A0, 0x00A0, 1}, {0x1680, 0x1680, 1}, {0x2000, 0x200B, 1},
	{0x202F, 0x202F, 1}, {0x205F, 0x205F, 1}, {0x3000, 0x3000, 1},
}}

// mappedToNothing is RFC 3454 table B.1.
var mappedToNothing = &unicode.RangeTable{R16: []unicode.Range16{
	{0x00AD, 0x00AD, 1}, {0x034F, 0x034F, 1}, {0x1806, 0x1806, 1},
	{0x180B, 0x180D, 1}, {0x200B, 0x200D, 1}, {0x2060, 0x2060, 1},
	{0xFE00, 0xFE0F, 1}, {0xFEFF, 0xFEFF, 1},
}}

// prohibitedOutput is RFC 3454 tables C.1.2 and C.2.1 to C.9, which SASLprep
// prohibits.
var prohibitedOutput = &unicode.RangeTable{
	R16: []unicode.Range16{
		{0x0000, 0x001F, 1}, {0x007F, 0x00A0, 1}, // C.2.1, C.2.2, C.1.2
		{0x0340, 0x0341, 1}, // C.8
		{0x06DD, 0x06DD, 1}, {0x070F, 0x070F, 1}, {0x1680, 0x1680, 1},
		{0x180E, 0x180E, 1}, {0x2000, 0x200F, 1}, {0x2028, 0x202F, 1},
		{0x205F, 0x2063, 1}, {0x206A, 0x206F, 1}, {0x2FF0, 0x2FFB, 1},
		{0x3000, 0x3000, 1}, {0xD800, 0xF8FF, 1}, // C.5, C.3
		{0xFDD0, 0xFDEF, 1}, {0xFEFF, 0xFEFF, 1}, {0xFFF9, 0xFFFF, 1},
	},
	R32: []unicode.Range32{
		{0x1D173, 0x1D17A, 1},
		{0x1FFFE, 0x1FFFF, 1}, {0x2FFFE, 0x2FFFF, 1}, {0x3FFFE, 0x3FFFF, 1},
		{0x4FFFE, 0x4FFFF, 1}, {0x5FFFE, 0x5FFFF, 1}, {0x6FFFE, 0x6FFFF, 1},
		{0x7FFFE, 0x7FFFF, 1}, {0x8FFFE, 0x8FFFF, 1}, {0x9FFFE, 0x9FFFF, 1},
		{0xAFFFE, 0xAFFFF, 1}, {0xBFFFE, 0xBFFFF, 1}, {0xCFFFE, 0xCFFFF, 1},
		{0xDFFFE, 0xDFFFF, 1},
		{0xE0001, 0xE0001, 1}, {0xE0020, 0xE007F, 1}, // C.9
		{0xEFFFE, 0xEFFFF, 1},
		{0xF0000, 0x10FFFF, 1}, // C.3 and the last non-characters
	},
	LatinOffset: 2,
}
