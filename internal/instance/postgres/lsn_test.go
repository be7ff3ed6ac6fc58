package postgres

import (
	"encoding/json"
	"testing"
)

func TestParseLSN(t *testing.T) {
	tests := map[string]struct {
		in      string
		want    LSN
		wantErr bool
	}{
		"zero":            {in: "0/0", want: 0},
		"low":             {in: "0/1500708", want: 0x1500708},
		"high":            {in: "16/B374D848", want: 0x16B374D848},
		"lower case":      {in: "16/b374d848", want: 0x16B374D848},
		"max":             {in: "FFFFFFFF/FFFFFFFF", want: ^LSN(0)},
		"no slash":        {in: "1500708", wantErr: true},
		"empty half":      {in: "0/", wantErr: true},
		"too long":        {in: "1FFFFFFFF/0", wantErr: true},
		"not hexadecimal": {in: "0/XYZ", wantErr: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := ParseLSN(tc.in)
			if (err != nil) != tc.wantErr {
				t.Fatalf("ParseLSN(%q) error %v, want error %v", tc.in, err, tc.wantErr)
			}
			if got != tc.want {
				t.Errorf("ParseLSN(%q) = %d, want %d", tc.in, got, tc.want)
			}
			if !tc.wantErr {
				if back, _ := ParseLSN(got.String()); back != got {
					t.Errorf("%s does not parse back", got)
				}
			}
		})
	}
}

func TestLSNText(t *testing.T) {
	b, err := json.Marshal(struct{ L LSN }{0x16B374D848})
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != `{"L":"16/B374D848"}` {
		t.Errorf("got %s", b)
	}
	var v struct{ L LSN }
	if err := json.Unmarshal(b, &v); err != nil || v.L != 0x16B374D848 {
		t.Errorf("got %v, %v", v.L, err)
	}
}
