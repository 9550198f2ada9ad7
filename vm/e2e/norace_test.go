//go:build !race

package e2e

// raceDetector: see race_test.go.
const raceDetector = false
