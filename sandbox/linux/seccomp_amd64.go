//go:build linux && amd64

package linux

import "golang.org/x/sys/unix"

// seccompFilters returns the helper's filters as seccompgen compiled them
// ahead for amd64 (seccomp_table_amd64.go; TestSeccompTableIsCurrent
// recompiles them and fails when the table is stale).
func seccompFilters() ([][]unix.SockFilter, error) {
	return [][]unix.SockFilter{seccompArchAMD64, seccompDenyAMD64}, nil
}
