//go:build race

package serve

// raceDetector says the tests run under the race detector, whose own
// memory (shadow words and the state of every goroutine it has seen)
// grows with the traffic and is counted in RSS.
const raceDetector = true
