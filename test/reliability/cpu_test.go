package reliability

import (
	"os"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

// The CPU time of a process is read from /proc, and a line that cannot be
// read is an error, never 0 s: "no busy retry loop" must not pass on a
// figure it failed to read.
func TestCPUSeconds(t *testing.T) {
	g := NewWithT(t)
	// A command name with spaces and parentheses, as proc(5) allows.
	stat := "4242 (a (b) c) S 1 4242 4242 0 -1 4194560 1650 0 0 0 123 45 0 0 20 0 9 0 1234 0 0"
	g.Expect(parseCPUSeconds(stat)).To(Equal(1.68))
	for _, bad := range []string{
		"",
		"4242 no-command-name S 1",
		"4242 (short) S 1 4242",
		"4242 (x) S 1 4242 4242 0 -1 4194560 1650 0 0 0 ?? 45 0 0",
	} {
		_, err := parseCPUSeconds(bad)
		g.Expect(err).To(HaveOccurred(), "%q", bad)
	}

	// This process, working until its CPU time moves on (a tick is 10 ms;
	// at most 30 s on a machine busy with other work).
	before, err := cpuSeconds(os.Getpid())
	g.Expect(err).NotTo(HaveOccurred())
	after := before
	for deadline := time.Now().Add(30 * time.Second); after <= before && time.Now().Before(deadline); {
		for i := range uint64(1 << 20) {
			work += i * i
		}
		after, err = cpuSeconds(os.Getpid())
		g.Expect(err).NotTo(HaveOccurred())
	}
	g.Expect(after).To(BeNumerically(">", before), "CPU time read from /proc/%d/stat", os.Getpid())
}

// work keeps the loop of TestCPUSeconds from being compiled away.
var work uint64
