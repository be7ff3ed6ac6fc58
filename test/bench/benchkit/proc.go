package benchkit

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"
)

// ClockTicks is USER_HZ, the unit of utime and stime in /proc/PID/stat. It
// is 100 on every Linux architecture Go supports.
const ClockTicks = 100

// CPUSeconds is the user+system CPU time a process has used, from
// /proc/PID/stat.
func CPUSeconds(pid int) (float64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name (field 2) is in parentheses and may hold spaces.
	s := string(data)
	end := strings.LastIndexByte(s, ')')
	if end < 0 {
		return 0, fmt.Errorf("unexpected /proc/%d/stat", pid)
	}
	fields := strings.Fields(s[end+1:])
	// fields[0] is field 3 (state); utime is field 14, stime field 15.
	if len(fields) < 13 {
		return 0, fmt.Errorf("unexpected /proc/%d/stat", pid)
	}
	utime, err1 := strconv.ParseFloat(fields[11], 64)
	stime, err2 := strconv.ParseFloat(fields[12], 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("unexpected /proc/%d/stat", pid)
	}
	return (utime + stime) / ClockTicks, nil
}

// MemoryKiB reads VmRSS and VmHWM (peak RSS) of a process, in KiB.
func MemoryKiB(pid int) (rss, hwm int64, err error) {
	m, err := ReadMemory(pid)
	return m.RSS, m.HWM, err
}

// Memory is a process's resident memory from /proc/PID/status, in KiB:
// anonymous memory (heap, stacks) and file-backed pages (the mapped binary).
type Memory struct{ RSS, HWM, Anon, File int64 }

// ReadMemory reads a process's Memory.
func ReadMemory(pid int) (Memory, error) {
	var m Memory
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return m, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		var target *int64
		switch {
		case strings.HasPrefix(line, "VmRSS:"):
			target = &m.RSS
		case strings.HasPrefix(line, "VmHWM:"):
			target = &m.HWM
		case strings.HasPrefix(line, "RssAnon:"):
			target = &m.Anon
		case strings.HasPrefix(line, "RssFile:"):
			target = &m.File
		default:
			continue
		}
		fields := strings.Fields(line)
		if len(fields) >= 2 {
			*target, _ = strconv.ParseInt(fields[1], 10, 64)
		}
	}
	return m, sc.Err()
}

// MachineBusySeconds is the CPU time all processes of the machine have
// used since boot, from the first line of /proc/stat: everything but idle
// and iowait.
func MachineBusySeconds() (float64, error) {
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, err
	}
	line, _, _ := strings.Cut(string(data), "\n")
	fields := strings.Fields(line)
	if len(fields) < 8 || fields[0] != "cpu" {
		return 0, fmt.Errorf("unexpected /proc/stat")
	}
	busy := 0.0
	for i, f := range fields[1:] {
		if i == 3 || i == 4 { // idle, iowait
			continue
		}
		if i >= 8 { // guest time is already in user time
			break
		}
		v, err := strconv.ParseFloat(f, 64)
		if err != nil {
			return 0, fmt.Errorf("unexpected /proc/stat")
		}
		busy += v
	}
	return busy / ClockTicks, nil
}

// ProcessName is the base name of a process's executable, from its command
// line.
func ProcessName(pid int) string {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil || len(data) == 0 {
		return fmt.Sprintf("pid-%d", pid)
	}
	argv0, _, _ := strings.Cut(string(data), "\x00")
	return filepath.Base(argv0)
}

// CPUSnapshot is the CPU seconds of named processes at one moment.
type CPUSnapshot map[string]float64

// Diff returns the CPU seconds used by each process between two snapshots.
func (after CPUSnapshot) Diff(before CPUSnapshot) map[string]float64 {
	out := map[string]float64{}
	for name, v := range after {
		out[name] = Round3(v - before[name])
	}
	return out
}

// RSSSampler samples the RSS of one process every interval, across
// restarts of that process: Set tells it the current PID.
type RSSSampler struct {
	mu      sync.Mutex
	pid     int
	peakKiB int64
	// anonAtPeak and fileAtPeak split the peak sample; peakAnonKiB is the
	// highest anonymous RSS seen.
	anonAtPeak, fileAtPeak, peakAnonKiB int64
	samples                             int
	stop                                chan struct{}
	done                                chan struct{}
}

// StartRSSSampler starts sampling, every interval, the process that Set
// names.
func StartRSSSampler(interval time.Duration) *RSSSampler {
	s := &RSSSampler{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		ticker := time.NewTicker(interval)
		defer ticker.Stop()
		for {
			select {
			case <-s.stop:
				return
			case <-ticker.C:
				s.Sample()
			}
		}
	}()
	return s
}

// Set makes pid the sampled process, and samples it.
func (s *RSSSampler) Set(pid int) {
	s.mu.Lock()
	s.pid = pid
	s.mu.Unlock()
	s.Sample()
}

// Sample samples the process now.
func (s *RSSSampler) Sample() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.pid == 0 {
		return
	}
	m, err := ReadMemory(s.pid)
	if err != nil {
		return
	}
	s.samples++
	if m.RSS > s.peakKiB {
		s.peakKiB, s.anonAtPeak, s.fileAtPeak = m.RSS, m.Anon, m.File
	}
	s.peakAnonKiB = max(s.peakAnonKiB, m.Anon)
}

// Peak returns the highest RSS seen so far, in KiB, and the number of
// samples.
func (s *RSSSampler) Peak() (int64, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.peakKiB, s.samples
}

// Split returns the anonymous and file-backed parts of the peak sample, and
// the highest anonymous RSS seen, in KiB.
func (s *RSSSampler) Split() (anonAtPeak, fileAtPeak, peakAnon int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.anonAtPeak, s.fileAtPeak, s.peakAnonKiB
}

// Close stops the sampling.
func (s *RSSSampler) Close() {
	select {
	case <-s.stop:
	default:
		close(s.stop)
	}
	<-s.done
}

// ProcessPeak is what ProcessSampler saw of one process.
type ProcessPeak struct {
	// Name is what the process was tracked as (such as an instance
	// manager's pod); PID its process ID.
	Name string `json:"name"`
	PID  int    `json:"pid"`
	// HWMMiB is the last VmHWM read, the kernel's exact peak up to that
	// moment: a process that has exited cannot be read, so its last sample
	// is what is known. PeakRSSMiB is the highest VmRSS sampled.
	HWMMiB     float64 `json:"vmHWMMiB"`
	PeakRSSMiB float64 `json:"peakRSSMiB"`
	Samples    int     `json:"samples"`
	// CPUSeconds is the process's CPU time at its last sample.
	CPUSeconds float64 `json:"cpuSeconds"`
}

// ProcessSampler samples, every interval, the memory and CPU of every
// process that a lookup names at that moment: processes that come and go
// (the instance managers of pods that are deleted and made again) are each
// recorded under their name and PID.
type ProcessSampler struct {
	lookup func() map[string]int
	mu     sync.Mutex
	seen   map[int]*ProcessPeak
	order  []int
	stop   chan struct{}
	done   chan struct{}
}

// StartProcessSampler samples the processes that lookup returns (name →
// PID) every interval, until Close.
func StartProcessSampler(interval time.Duration, lookup func() map[string]int) *ProcessSampler {
	s := &ProcessSampler{lookup: lookup, seen: map[int]*ProcessPeak{}, stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		ticker := time.NewTicker(interval)
		defer ticker.Stop()
		for {
			s.Sample()
			select {
			case <-s.stop:
				return
			case <-ticker.C:
			}
		}
	}()
	return s
}

// Sample samples every process lookup names now.
func (s *ProcessSampler) Sample() {
	for name, pid := range s.lookup() {
		m, err := ReadMemory(pid)
		if err != nil {
			continue
		}
		cpu, cpuErr := CPUSeconds(pid)
		s.mu.Lock()
		p, ok := s.seen[pid]
		if !ok || p.Name != name {
			p = &ProcessPeak{Name: name, PID: pid}
			s.seen[pid] = p
			s.order = append(s.order, pid)
		}
		p.Samples++
		p.HWMMiB = max(p.HWMMiB, Round3(float64(m.HWM)/1024))
		p.PeakRSSMiB = max(p.PeakRSSMiB, Round3(float64(m.RSS)/1024))
		if cpuErr == nil {
			p.CPUSeconds = Round3(cpu)
		}
		s.mu.Unlock()
	}
}

// Processes are the processes seen so far, in the order first seen.
func (s *ProcessSampler) Processes() []ProcessPeak {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]ProcessPeak, 0, len(s.order))
	for _, pid := range s.order {
		out = append(out, *s.seen[pid])
	}
	return out
}

// Close takes one last sample and stops the sampling.
func (s *ProcessSampler) Close() {
	s.Sample()
	select {
	case <-s.stop:
	default:
		close(s.stop)
	}
	<-s.done
}

// Machine describes the machine the benchmark ran on.
type Machine struct {
	NProc       int     `json:"nproc"`
	CPUModel    string  `json:"cpuModel"`
	MemTotalMiB int64   `json:"memTotalMiB"`
	Kernel      string  `json:"kernel"`
	GoVersion   string  `json:"goVersion"`
	GOOS        string  `json:"goos"`
	GOARCH      string  `json:"goarch"`
	LoadAvg     string  `json:"loadAvgAtStart"`
	Hostname    string  `json:"hostname"`
	ClockTicks  float64 `json:"clockTicksPerSecond"`
}

// DescribeMachine reads what Machine holds.
func DescribeMachine() Machine {
	m := Machine{
		NProc:      runtime.NumCPU(),
		GoVersion:  runtime.Version(),
		GOOS:       runtime.GOOS,
		GOARCH:     runtime.GOARCH,
		ClockTicks: ClockTicks,
	}
	if data, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for line := range strings.SplitSeq(string(data), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPUModel = strings.TrimSpace(v)
				break
			}
		}
	}
	if data, err := os.ReadFile("/proc/meminfo"); err == nil {
		for line := range strings.SplitSeq(string(data), "\n") {
			if strings.HasPrefix(line, "MemTotal:") {
				if f := strings.Fields(line); len(f) >= 2 {
					kib, _ := strconv.ParseInt(f[1], 10, 64)
					m.MemTotalMiB = kib / 1024
				}
			}
		}
	}
	if data, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(data))
	}
	if data, err := os.ReadFile("/proc/loadavg"); err == nil {
		m.LoadAvg = strings.TrimSpace(string(data))
	}
	m.Hostname, _ = os.Hostname()
	return m
}

// LoadAvg is the first three fields of /proc/loadavg, or "".
func LoadAvg() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(data))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}

// Round3 rounds to three decimals, half away from zero.
func Round3(v float64) float64 {
	return float64(int64(v*1000+signHalf(v))) / 1000
}

func signHalf(v float64) float64 {
	if v < 0 {
		return -0.5
	}
	return 0.5
}
