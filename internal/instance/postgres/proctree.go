package postgres

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

// descendants lists the processes below pid, children first, read from
// /proc. PostgreSQL's children each start a session of their own, so they
// share neither the postmaster's process group nor its fate: a signal to
// the group reaches the postmaster alone.
func descendants(pid int) []int {
	children := map[int][]int{}
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, path := range stats {
		child, parent, ok := readParent(path)
		if ok {
			children[parent] = append(children[parent], child)
		}
	}
	var found []int
	queue := []int{pid}
	for len(queue) > 0 {
		next := queue[0]
		queue = queue[1:]
		for _, child := range children[next] {
			found = append(found, child)
			queue = append(queue, child)
		}
	}
	return found
}

// readParent reads a process's pid and its parent's from its stat file.
func readParent(path string) (pid, parent int, ok bool) {
	stat, err := os.ReadFile(path)
	if err != nil {
		return 0, 0, false
	}
	// The command name in parentheses may hold spaces and parentheses.
	open, end := bytes.IndexByte(stat, '('), bytes.LastIndexByte(stat, ')')
	if open < 0 || end < open {
		return 0, 0, false
	}
	fields := bytes.Fields(stat[end+1:])
	if len(fields) < 2 {
		return 0, 0, false
	}
	pid, err = strconv.Atoi(string(bytes.TrimSpace(stat[:open])))
	if err != nil {
		return 0, 0, false
	}
	parent, err = strconv.Atoi(string(fields[1]))
	return pid, parent, err == nil
}

// running says whether pid is a process that has not exited: a zombie
// (exited, not yet reaped) holds no memory nor files any more.
func running(pid int) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	end := bytes.LastIndexByte(stat, ')')
	fields := bytes.Fields(stat[end+1:])
	return len(fields) > 0 && string(fields[0]) != "Z"
}

// waitExited waits until none of pids runs, or until timeout.
func waitExited(pids []int, timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for {
		left := pids[:0]
		for _, pid := range pids {
			if running(pid) {
				left = append(left, pid)
			}
		}
		pids = left
		if len(pids) == 0 {
			return true
		}
		if !time.Now().Before(deadline) {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// killAll sends SIGKILL to each of pids, ignoring those already gone.
func killAll(pids []int) error {
	var errs []error
	for _, pid := range pids {
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
