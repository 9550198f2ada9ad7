//go:build !race

package serve

// raceDetector says the tests run under the race detector (race_test.go).
const raceDetector = false
