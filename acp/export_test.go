package acp

// SetSyncAccountBelow sets the history length up to which a load sums the
// cost of what it does not replay before it answers; the returned func
// restores it.
func SetSyncAccountBelow(n int64) (restore func()) {
	old := syncAccountBelow
	syncAccountBelow = n
	return func() { syncAccountBelow = old }
}
