package local

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"slices"
	"strconv"

	"golang.org/x/sys/unix"
)

// sessionGroups scans /proc for the live (non-zombie) members of session sid
// and returns their distinct process groups; ok is false when /proc cannot
// be read. It runs once whenever a command ends, so it is kept cheap on a
// machine with thousands of processes: the directory is read in place into a
// pooled buffer (no string per process), membership is tested with
// getsid(2), one system call per process, and only members have their
// /proc/PID/stat read (for the state and the group).
func sessionGroups(sid int) (pgids []int, ok bool) {
	fd, err := unix.Open("/proc", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, false
	}
	defer unix.Close(fd)
	bp := readBufPool.Get().(*[]byte)
	defer readBufPool.Put(bp)
	buf := *bp
	for {
		n, err := unix.Getdents(fd, buf)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return nil, false
		}
		if n <= 0 {
			return pgids, true
		}
		for d := buf[:n]; len(d) >= 19; {
			// struct linux_dirent64: ino u64, off s64, reclen u16, type u8, name.
			reclen := int(binary.NativeEndian.Uint16(d[16:18]))
			if reclen < 19 || reclen > len(d) {
				return nil, false
			}
			pid, isPid := atoiName(d[19:reclen])
			d = d[reclen:]
			if !isPid {
				continue
			}
			s, err := unix.Getsid(pid)
			if errors.Is(err, unix.ESRCH) || err == nil && s != sid {
				continue // exited meanwhile, or not ours
			} // any other error (a security module): let the stat decide
			stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
			if err != nil {
				continue // exited meanwhile
			}
			state, pgrp, session, ok := parseStat(stat)
			if !ok || state == 'Z' || state == 'X' || session != sid {
				continue
			}
			if !slices.Contains(pgids, pgrp) {
				pgids = append(pgids, pgrp)
			}
		}
	}
}

// atoiName parses a NUL-terminated directory entry name that is all digits.
func atoiName(name []byte) (int, bool) {
	n, digits := 0, 0
	for _, c := range name {
		if c == 0 {
			break
		}
		if c < '0' || c > '9' || digits >= 9 {
			return 0, false
		}
		n = n*10 + int(c-'0')
		digits++
	}
	return n, digits > 0
}

// parseStat extracts the state, process group and session from
// /proc/PID/stat: "pid (comm) state ppid pgrp session …", where comm may
// itself contain spaces and parentheses, hence the search for the last ')'.
func parseStat(stat []byte) (state byte, pgrp, session int, ok bool) {
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, 0, 0, false
	}
	fields := bytes.Fields(stat[i+1:])
	if len(fields) < 4 || len(fields[0]) != 1 {
		return 0, 0, 0, false
	}
	pgrp, err1 := strconv.Atoi(string(fields[2]))
	session, err2 := strconv.Atoi(string(fields[3]))
	if err1 != nil || err2 != nil {
		return 0, 0, 0, false
	}
	return fields[0][0], pgrp, session, true
}
