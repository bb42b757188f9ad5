//go:build linux

package postgres

import (
	"bytes"
	"os"
	"strconv"
	"strings"
)

// machineKey names the process-ID space this process lives in: the
// kernel's boot id and the PID namespace. Two holders with the same key see
// the same processes, so one can tell whether the other is still running.
func machineKey() string {
	boot, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	ns, err := os.Readlink("/proc/self/ns/pid")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(boot)) + "/" + ns
}

// processStart returns the start time of pid in clock ticks since boot
// (field 22 of /proc/PID/stat), 0 when the process does not exist. With the
// pid it identifies a process even after its pid is reused.
func processStart(pid int) int64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	// The command name (field 2) may hold spaces and parentheses: count
	// fields after its last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0
	}
	fields := strings.Fields(string(b[i+1:]))
	// fields[0] is field 3 (state); starttime is field 22.
	if len(fields) < 20 {
		return 0
	}
	if fields[0] == "Z" || fields[0] == "X" {
		return 0 // exited, not yet reaped: it writes nothing more
	}
	v, _ := strconv.ParseInt(fields[19], 10, 64)
	return v
}
