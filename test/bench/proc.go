package main

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

// clockTicks is USER_HZ, the unit of utime and stime in /proc/PID/stat. It
// is 100 on every Linux architecture Go supports.
const clockTicks = 100

// cpuSeconds is the user+system CPU time a process has used, from
// /proc/PID/stat.
func cpuSeconds(pid int) (float64, error) {
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
	return (utime + stime) / clockTicks, nil
}

// memoryKiB reads VmRSS and VmHWM (peak RSS) of a process, in KiB.
func memoryKiB(pid int) (rss, hwm int64, err error) {
	m, err := readMemory(pid)
	return m.rss, m.hwm, err
}

// memory is a process's resident memory from /proc/PID/status, in KiB:
// anonymous memory (heap, stacks) and file-backed pages (the mapped binary).
type memory struct{ rss, hwm, anon, file int64 }

func readMemory(pid int) (memory, error) {
	var m memory
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
			target = &m.rss
		case strings.HasPrefix(line, "VmHWM:"):
			target = &m.hwm
		case strings.HasPrefix(line, "RssAnon:"):
			target = &m.anon
		case strings.HasPrefix(line, "RssFile:"):
			target = &m.file
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

// machineBusySeconds is the CPU time all processes of the machine have
// used since boot, from the first line of /proc/stat: everything but idle
// and iowait.
func machineBusySeconds() (float64, error) {
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
	return busy / clockTicks, nil
}

// processName is the base name of a process's executable, from its command
// line.
func processName(pid int) string {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil || len(data) == 0 {
		return fmt.Sprintf("pid-%d", pid)
	}
	argv0, _, _ := strings.Cut(string(data), "\x00")
	return filepath.Base(argv0)
}

// cpuSnapshot is the CPU seconds of named processes at one moment.
type cpuSnapshot map[string]float64

// diff returns the CPU seconds used by each process between two snapshots.
func (after cpuSnapshot) diff(before cpuSnapshot) map[string]float64 {
	out := map[string]float64{}
	for name, v := range after {
		out[name] = round3(v - before[name])
	}
	return out
}

// rssSampler samples the RSS of the operator process every interval, across
// restarts of the operator: set tells it the current PID.
type rssSampler struct {
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

func startRSSSampler(interval time.Duration) *rssSampler {
	s := &rssSampler{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		ticker := time.NewTicker(interval)
		defer ticker.Stop()
		for {
			select {
			case <-s.stop:
				return
			case <-ticker.C:
				s.sample()
			}
		}
	}()
	return s
}

func (s *rssSampler) set(pid int) {
	s.mu.Lock()
	s.pid = pid
	s.mu.Unlock()
	s.sample()
}

func (s *rssSampler) sample() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.pid == 0 {
		return
	}
	m, err := readMemory(s.pid)
	if err != nil {
		return
	}
	s.samples++
	if m.rss > s.peakKiB {
		s.peakKiB, s.anonAtPeak, s.fileAtPeak = m.rss, m.anon, m.file
	}
	s.peakAnonKiB = max(s.peakAnonKiB, m.anon)
}

// peak returns the highest RSS seen so far, in KiB, and the number of
// samples.
func (s *rssSampler) peak() (int64, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.peakKiB, s.samples
}

// split returns the anonymous and file-backed parts of the peak sample, and
// the highest anonymous RSS seen, in KiB.
func (s *rssSampler) split() (anonAtPeak, fileAtPeak, peakAnon int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.anonAtPeak, s.fileAtPeak, s.peakAnonKiB
}

func (s *rssSampler) close() {
	select {
	case <-s.stop:
	default:
		close(s.stop)
	}
	<-s.done
}

// machineInfo describes the machine the benchmark ran on.
type machineInfo struct {
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

func describeMachine() machineInfo {
	m := machineInfo{
		NProc:      runtime.NumCPU(),
		GoVersion:  runtime.Version(),
		GOOS:       runtime.GOOS,
		GOARCH:     runtime.GOARCH,
		ClockTicks: clockTicks,
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

func round3(v float64) float64 {
	return float64(int64(v*1000+signHalf(v))) / 1000
}

func signHalf(v float64) float64 {
	if v < 0 {
		return -0.5
	}
	return 0.5
}
