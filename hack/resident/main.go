// Command resident prints how much of a running process's binary is
// resident in its memory, per ELF section: the file-backed part of the
// process's RSS, and which part of the binary it is (code, read-only data,
// the function table that stack walks read).
//
// Usage (as root, or as the process's owner): go run ./hack/resident -pid PID
//
// It reads /proc/PID/maps for the mappings of the process's executable and
// /proc/PID/pagemap for which of their pages are present.
package main

import (
	"bufio"
	"debug/elf"
	"encoding/binary"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

const pageSize = 4096

func main() {
	pid := flag.Int("pid", 0, "the process to inspect")
	flag.Parse()
	if *pid <= 0 {
		fmt.Fprintln(os.Stderr, "resident: -pid is required")
		os.Exit(2)
	}
	if err := run(*pid, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "resident:", err)
		os.Exit(1)
	}
}

func run(pid int, out io.Writer) error {
	exe, sections, total, err := residentSections(pid)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "%s: %.1f MiB of the binary resident\n", exe, mib(total))
	fmt.Fprintf(out, "%-20s %10s %10s\n", "section", "size MiB", "resident")
	for _, s := range sections {
		fmt.Fprintf(out, "%-20s %10.2f %10.2f\n", s.name, mib(s.size), mib(s.resident))
	}
	return nil
}

// section is one of the binary's sections loaded from its file, with how
// many of its bytes are resident, in whole pages.
type section struct {
	name           string
	size, resident int
}

// residentSections reads which pages of pid's executable are resident, in
// all (total) and per section.
func residentSections(pid int) (exe string, sections []section, total int, err error) {
	exe, err = os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
	if err != nil {
		return "", nil, 0, err
	}
	present, err := presentPages(pid, exe)
	if err != nil {
		return "", nil, 0, err
	}
	f, err := elf.Open(fmt.Sprintf("/proc/%d/exe", pid))
	if err != nil {
		return "", nil, 0, fmt.Errorf("read the binary's sections: %w", err)
	}
	defer f.Close()
	for _, s := range f.Sections {
		if s.Flags&elf.SHF_ALLOC == 0 || s.Type == elf.SHT_NOBITS || s.Size == 0 {
			continue // not loaded from the file
		}
		n := 0
		for page := s.Addr &^ (pageSize - 1); page < s.Addr+s.Size; page += pageSize {
			if present[page] {
				n++
			}
		}
		sections = append(sections, section{name: s.Name, size: int(s.Size), resident: n * pageSize})
	}
	return exe, sections, len(present) * pageSize, nil
}

// presentPages are the pages of exe's mappings in the process that are
// in its memory, by address.
func presentPages(pid int, exe string) (map[uint64]bool, error) {
	maps, err := os.Open(fmt.Sprintf("/proc/%d/maps", pid))
	if err != nil {
		return nil, err
	}
	defer maps.Close()
	pagemap, err := os.Open(fmt.Sprintf("/proc/%d/pagemap", pid))
	if err != nil {
		return nil, err
	}
	defer pagemap.Close()
	present := map[uint64]bool{}
	lines := bufio.NewScanner(maps)
	for lines.Scan() {
		fields := strings.Fields(lines.Text())
		if len(fields) < 6 || fields[5] != exe {
			continue
		}
		from, to, ok := strings.Cut(fields[0], "-")
		if !ok {
			continue
		}
		lo, err := strconv.ParseUint(from, 16, 64)
		if err != nil {
			return nil, err
		}
		hi, err := strconv.ParseUint(to, 16, 64)
		if err != nil {
			return nil, err
		}
		// One 64-bit entry per page; bit 63 says the page is present.
		entries := make([]byte, (hi-lo)/pageSize*8)
		if _, err := pagemap.ReadAt(entries, int64(lo/pageSize*8)); err != nil {
			return nil, fmt.Errorf("read pagemap: %w", err)
		}
		for i := 0; i < len(entries); i += 8 {
			if binary.LittleEndian.Uint64(entries[i:])>>63 == 1 {
				present[lo+uint64(i/8)*pageSize] = true
			}
		}
	}
	return present, lines.Err()
}

func mib(bytes int) float64 { return float64(bytes) / (1 << 20) }
