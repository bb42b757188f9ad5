//go:build race

package headless_test

// Under -race the dsh binary the tests run is built with it too.
const raceBuild = true
