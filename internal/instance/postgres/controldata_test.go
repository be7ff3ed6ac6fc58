package postgres

import (
	"os"
	"strings"
	"testing"
)

func TestParseControlData(t *testing.T) {
	tests := map[string]struct {
		file         string
		state        string
		clean        bool
		inRecovery   bool
		systemID     uint64
		redo         LSN
		timeline     uint32
		lastModified string
	}{
		"after initdb (shut down)": {
			file: "testdata/controldata-shut-down.txt", state: ClusterStateShutDown, clean: true,
			systemID: 7714713247171996487, redo: 0x1500708, timeline: 1, lastModified: "Wed Dec  2 14:27:32 2026",
		},
		"the same cluster running, or crashed": {
			file: "testdata/controldata-in-production.txt", state: ClusterStateInProduction, clean: false,
			systemID: 7714713247171996487, redo: 0x1500708, timeline: 1, lastModified: "Wed Dec  2 14:27:32 2026",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			out, err := os.ReadFile(tc.file)
			if err != nil {
				t.Fatal(err)
			}
			cd, err := ParseControlData(string(out))
			if err != nil {
				t.Fatal(err)
			}
			if cd.ClusterState != tc.state || cd.CleanShutdown() != tc.clean || cd.InRecoveryState() != tc.inRecovery ||
				cd.SystemIdentifier != tc.systemID || cd.RedoLSN != tc.redo || cd.TimelineID != tc.timeline {
				t.Errorf("got state %q (clean %v, in recovery %v), system identifier %d, REDO %s, timeline %d",
					cd.ClusterState, cd.CleanShutdown(), cd.InRecoveryState(), cd.SystemIdentifier, cd.RedoLSN, cd.TimelineID)
			}
			if got := cd.Fields["pg_control last modified"]; got != tc.lastModified {
				t.Errorf("a value with colons: got %q", got)
			}
		})
	}
}

func TestParseControlDataRefusesOtherOutput(t *testing.T) {
	for name, out := range map[string]string{
		"empty":          "",
		"another locale": "Identificateur du système de base de données : 7714711753382534790\n",
		"bad LSN": strings.Join([]string{
			"Database system identifier: 1", "Database cluster state: shut down",
			"Latest checkpoint location: 0/1", "Latest checkpoint's REDO location: nope",
			"Latest checkpoint's TimeLineID: 1", "Minimum recovery ending location: 0/0",
			"Min recovery ending loc's timeline: 0",
		}, "\n"),
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := ParseControlData(out); err == nil {
				t.Error("accepted")
			}
		})
	}
}
