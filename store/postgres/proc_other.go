//go:build !linux

package postgres

// machineKey is unknown here: no lease is ever judged dead by its pid, only
// by its expiry.
func machineKey() string { return "" }

func processStart(int) int64 { return 0 }
