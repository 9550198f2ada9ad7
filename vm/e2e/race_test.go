//go:build race

package e2e

// raceDetector reports whether the tests run under the race detector,
// whose slowdown (several times, unevenly) makes timing-dependent outcomes
// meaningless: such tests still run, for the races, but do not judge them.
const raceDetector = true
