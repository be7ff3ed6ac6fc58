package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The committed results are their own golden files: results.md, the charts
// and results.json are what -rerender writes from results.json. A change of
// the report shows here; after it, rewrite them with
// go run ./test/bench -rerender -out test/bench/results (and .../n5000).
func TestCommittedResultsRenderAsCommitted(t *testing.T) {
	for _, dir := range []string{"results", filepath.Join("results", "n5000")} {
		t.Run(dir, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join(dir, "results.json"))
			if err != nil {
				t.Fatal(err)
			}
			out := t.TempDir()
			if err := os.WriteFile(filepath.Join(out, "results.json"), data, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := rerender(out); err != nil {
				t.Fatal(err)
			}
			written, err := os.ReadDir(out)
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range written {
				got, err := os.ReadFile(filepath.Join(out, f.Name()))
				if err != nil {
					t.Fatal(err)
				}
				want, err := os.ReadFile(filepath.Join(dir, f.Name()))
				if err != nil {
					t.Errorf("%s: rendered but not committed: %v", f.Name(), err)
					continue
				}
				if line, g, w, differ := firstDifference(string(got), string(want)); differ {
					t.Errorf("%s renders differently from the committed file, first at line %d:\n got: %s\nwant: %s", f.Name(), line, g, w)
				}
			}
		})
	}
}

// firstDifference is the first line where got and want differ, counted from
// 1, and that line of each.
func firstDifference(got, want string) (line int, g, w string, differ bool) {
	gl, wl := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := 0; i < max(len(gl), len(wl)); i++ {
		if i >= len(gl) || i >= len(wl) || gl[i] != wl[i] {
			if i < len(gl) {
				g = gl[i]
			}
			if i < len(wl) {
				w = wl[i]
			}
			return i + 1, g, w, true
		}
	}
	return 0, "", "", false
}

// Every results file kept in results/, the history's included, still reads
// and renders: fields were added and renamed over time, and the report
// must cope with what an old file lacks. The results of packages postgres
// and scale render through their own packages, as -rerender does.
func TestEveryKeptResultsFileRenders(t *testing.T) {
	count := 0
	err := filepath.WalkDir("results", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() != "results.json" {
			return err
		}
		count++
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		out := t.TempDir()
		if err := os.WriteFile(filepath.Join(out, "results.json"), data, 0o644); err != nil {
			return err
		}
		if err := rerender(out); err != nil {
			t.Errorf("%s: %v", path, err)
			return nil
		}
		md, err := os.ReadFile(filepath.Join(out, "results.md"))
		if err != nil {
			return err
		}
		if !strings.Contains(string(md), "## Targets") {
			t.Errorf("%s: no Targets section in\n%s", path, md)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if count < 2 {
		t.Fatalf("found %d results files under results/", count)
	}
}
