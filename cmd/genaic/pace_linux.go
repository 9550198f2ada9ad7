package main

import (
	"runtime"
	"syscall"
	"time"
)

// newPacer returns the open loop's wait. Go's time.Sleep wakes on the
// runtime's poller, whose timeout is whole milliseconds on Linux (a 33 µs
// sleep lasts about 1.1 ms on the machines measured), so that an open loop
// paced by it at thousands of requests a second sends them in bursts once
// a millisecond, not at its arrivals. This one locks the calling
// goroutine's thread, sets the thread's timer slack to 1 ns
// (PR_SET_TIMERSLACK; the default 50 µs is added to every sleep) and
// sleeps in nanosleep, which wakes within tens of microseconds there. The
// thread is never unlocked, so that it ends with its goroutine and its
// slack with it: call it from a goroutine of its own.
func newPacer() func(time.Duration) {
	runtime.LockOSThread()
	const prSetTimerSlack = 29
	if _, _, errno := syscall.Syscall6(syscall.SYS_PRCTL, prSetTimerSlack, 1, 0, 0, 0, 0); errno != 0 {
		return time.Sleep
	}
	return func(d time.Duration) {
		ts := syscall.NsecToTimespec(d.Nanoseconds())
		for syscall.Nanosleep(&ts, &ts) == syscall.EINTR {
		}
	}
}
