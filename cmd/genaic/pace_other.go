//go:build !linux

package main

import "time"

// newPacer returns the open loop's wait (pace_linux.go says why Linux
// has its own).
func newPacer() func(time.Duration) { return time.Sleep }
