package main

import (
	"os"
	"runtime"
	"testing"
)

// The test binary reads its own pages: the code running this test is
// resident, and no section has more resident than its size rounded up to
// whole pages.
func TestResidentSectionsOfThisProcess(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("/proc/PID/pagemap is Linux's")
	}
	_, sections, total, err := residentSections(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if total <= 0 {
		t.Fatalf("no page of the running binary resident")
	}
	found := false
	for _, s := range sections {
		if s.resident > s.size+2*pageSize {
			t.Errorf("section %s: %d bytes resident of %d", s.name, s.resident, s.size)
		}
		if s.name == ".text" {
			found = true
			if s.resident == 0 {
				t.Errorf("the running code (.text) has no resident page")
			}
		}
	}
	if !found {
		t.Errorf("no .text section among %v", sections)
	}
}
