//go:build race

package storetest

// raceEnabled: the race detector slows the crash children (and the pure-Go
// SQLite inside them) roughly tenfold, so the default run count halves.
const raceEnabled = true
