package faults

import (
	"slices"
	"testing"
	"time"
)

func TestScheduleIsTheSameForTheSameSeed(t *testing.T) {
	a, err := Schedule(42, 30, DefaultKinds)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := Schedule(42, 30, DefaultKinds)
	c, _ := Schedule(43, 30, DefaultKinds)
	if !slices.Equal(a, b) {
		t.Errorf("seed 42 twice gave two schedules:\n%v\n%v", a, b)
	}
	if slices.Equal(a, c) {
		t.Errorf("seeds 42 and 43 gave the same schedule: %v", a)
	}
}

func TestSchedule(t *testing.T) {
	for _, tc := range []struct {
		name  string
		count int
		kinds []Kind
	}{
		{"none", 0, DefaultKinds},
		{"fewer than the kinds", 5, DefaultKinds},
		{"one round and a bit", 15, DefaultKinds},
		{"a long run", 300, AllKinds},
		{"one kind", 4, []Kind{PauseManager}},
		{"the data-loss kind", 3, []Kind{DeletePrimaryAndSyncStandby}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			faults, err := Schedule(7, tc.count, tc.kinds)
			if err != nil {
				t.Fatal(err)
			}
			if len(faults) != tc.count {
				t.Fatalf("%d faults, want %d", len(faults), tc.count)
			}
			seen := map[Kind]int{}
			for i, f := range faults {
				seen[f.Kind]++
				if f.Index != i+1 {
					t.Errorf("fault %d has index %d", i+1, f.Index)
				}
				if !slices.Contains(tc.kinds, f.Kind) {
					t.Errorf("%v: a kind not asked for", f)
				}
				s := specs[f.Kind]
				switch {
				case s.target == Any && f.Target != Primary && f.Target != Standby:
					t.Errorf("%v: target %q, want primary or standby", f, f.Target)
				case s.target != Any && f.Target != s.target:
					t.Errorf("%v: target %q, want %q", f, f.Target, s.target)
				}
				if f.Pick < 0 || f.Pick > 1 || (f.Target != Standby && f.Pick != 0) {
					t.Errorf("%v: pick %d", f, f.Pick)
				}
				if f.GraceSeconds < 0 || f.GraceSeconds > 1 || (!s.grace && f.GraceSeconds != 0) {
					t.Errorf("%v: grace %d", f, f.GraceSeconds)
				}
				if f.Hold < s.minHold || f.Hold > s.maxHold {
					t.Errorf("%v: holds %s, want %s to %s", f, f.Hold, s.minHold, s.maxHold)
				}
			}
			// Rounds: within any full round, every kind once.
			if rounds := tc.count / len(tc.kinds); rounds > 0 {
				for _, k := range tc.kinds {
					if seen[k] < rounds {
						t.Errorf("%s injected %d times in %d full rounds", k, seen[k], rounds)
					}
				}
			}
		})
	}
}

func TestScheduleRefusesWhatItCannotDraw(t *testing.T) {
	for name, kinds := range map[string][]Kind{"no kind": nil, "an unknown kind": {"unplug-the-rack"}} {
		if _, err := Schedule(1, 3, kinds); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	if _, err := Schedule(1, -1, DefaultKinds); err == nil {
		t.Error("a negative count: no error")
	}
}

func TestParseKinds(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []Kind
		err  bool
	}{
		{in: "default", want: DefaultKinds},
		{in: "all", want: AllKinds},
		{in: "kill-postgres, pause-manager,kill-postgres", want: []Kind{KillPostgres, PauseManager}},
		{in: "pause-manager,default", want: append([]Kind{PauseManager}, slices.DeleteFunc(slices.Clone(DefaultKinds), func(k Kind) bool { return k == PauseManager })...)},
		{in: "", err: true},
		{in: "kill-postgres,reboot", err: true},
	} {
		got, err := ParseKinds(tc.in)
		if (err != nil) != tc.err || !slices.Equal(got, tc.want) {
			t.Errorf("ParseKinds(%q) = %v, %v; want %v (error: %t)", tc.in, got, err, tc.want, tc.err)
		}
	}
	if !slices.Equal(DefaultKinds, AllKinds) {
		t.Errorf("DefaultKinds %v: every kind, %v", DefaultKinds, AllKinds)
	}
}

func TestFaultString(t *testing.T) {
	for _, tc := range []struct {
		f    Fault
		want string
	}{
		{Fault{Index: 3, Kind: DeletePrimary, Target: Primary, GraceSeconds: 1}, "#3 delete-primary (primary 0) grace 1s"},
		{Fault{Index: 4, Kind: PausePostgres, Target: Standby, Pick: 1, Hold: 2500 * time.Millisecond}, "#4 pause-postgres (standby 1) for 2.5s"},
		{Fault{Index: 5, Kind: StopAPIServer, Hold: 12 * time.Second}, "#5 stop-apiserver for 12s"},
	} {
		if got := tc.f.String(); got != tc.want {
			t.Errorf("%q, want %q", got, tc.want)
		}
	}
}
