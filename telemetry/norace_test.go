//go:build !race

package telemetry_test

const raceBuild = false
