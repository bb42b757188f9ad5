//go:build !race

package headless_test

const raceBuild = false
