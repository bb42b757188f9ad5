package local

import (
	"bytes"
	"os"
	"strconv"
)

// liveMembers scans /proc for a non-zombie process whose process group is
// pgid. ok is false when /proc cannot be read.
func liveMembers(pgid int) (live, ok bool) {
	d, err := os.Open("/proc")
	if err != nil {
		return false, false
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return false, false
	}
	want := []byte(strconv.Itoa(pgid))
	for _, name := range names {
		if name == "" || name[0] < '0' || name[0] > '9' {
			continue
		}
		stat, err := os.ReadFile("/proc/" + name + "/stat")
		if err != nil {
			continue // exited meanwhile
		}
		state, pgrp, ok := parseStat(stat)
		if ok && state != 'Z' && state != 'X' && bytes.Equal(pgrp, want) {
			return true, true
		}
	}
	return false, true
}

// parseStat extracts the state and process group from /proc/PID/stat:
// "pid (comm) state ppid pgrp …", where comm may itself contain spaces and
// parentheses, hence the search for the last ')'.
func parseStat(stat []byte) (state byte, pgrp []byte, ok bool) {
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, nil, false
	}
	fields := bytes.Fields(stat[i+1:])
	if len(fields) < 3 || len(fields[0]) != 1 {
		return 0, nil, false
	}
	return fields[0][0], fields[2], true
}
