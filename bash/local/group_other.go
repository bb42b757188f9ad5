//go:build !linux

package local

// sessionGroups has no portable implementation: callers then reach only the
// leader's process group, through kill(-sid, …), which counts zombies as
// members and misses processes that moved to another group.
func sessionGroups(int) (pgids []int, ok bool) { return nil, false }
