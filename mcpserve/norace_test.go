//go:build !race

package mcpserve_test

const raceBuild = false
