package e2e

import (
	"context"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/genaic/genaic/codegen/genrt"
	"github.com/genaic/genaic/vm"
)

// BenchmarkServed runs a workload as a server meets it: C callers that
// each send their next request as soon as the last is answered, through
// Run, on one engine (one runner, max_delay at its default). Every
// iteration takes the document four ways in turn: served by the callers,
// served by the same callers one request per invocation (an engine opened
// solo: what a server that does not group gives them), in lockstep
// (RunAll), and by the ideal's direct calls (BenchmarkWorkloads). A turn
// takes the document as many times as make the shorter served turn last
// bestTurn, at least servedDocs, as BenchmarkBest's do. It reports
// served/ideal, served/solo (grouping must pay where a server's callers
// meet it too) and lockstep/ideal, the requests per invocation when
// served, a group's mean time from its formation to its outputs, served
// and in lockstep, the CPU time of a request served and in the ideal's
// calls, and the documents a turn takes.
//
//	go test ./vm/e2e -run '^$' -bench Served -benchtime 30x -count 3
func BenchmarkServed(b *testing.B) {
	for _, w := range workloads {
		if w.name != "text_packed/short" && w.name != "image_padded/64" {
			continue
		}
		for _, callers := range []int{16, 64} {
			b.Run(fmt.Sprintf("%s/callers=%d", w.name, callers), func(b *testing.B) { benchServed(b, w, callers) })
		}
	}
}

// servedDocs is how many times a turn takes the document at least: the
// callers are not stopped between documents.
const servedDocs = 10

func benchServed(b *testing.B, w workload, callers int) {
	s := newBench(b, w)
	fx, reqs, direct := s.fx, s.reqs, s.ideal
	e := s.engine(b, genrt.WithMaxDelay(genrt.DefaultMaxDelay), genrt.WithWorkers(1))
	mustRun(b, e, reqs)
	solo := s.engine(b, genrt.WithSolo())
	mustRun(b, solo, reqs)

	cs := newCallers(b, callers, reqs)
	served, servedSolo := cs.serve(e), cs.serve(solo)
	docs := servedDocs // each way's turn: the document docs times (set below)
	lockstep := func() {
		for range docs {
			serveAll(context.Background(), e, reqs)
		}
	}
	ideal := func() {
		for range docs {
			direct()
		}
	}
	ideal()                                  // warm up
	shortest := time.Duration(math.MaxInt64) // of the served turns
	for _, way := range []func(){served, servedSolo} {
		t := time.Now()
		way()
		shortest = min(shortest, time.Since(t))
	}
	// Every way's turn grows alike, so that the shortest served turn
	// lasts bestTurn (BenchmarkBest says why).
	docs *= max(1, int((bestTurn+shortest-1)/shortest))
	cs.docs = docs
	ways := []func(){served, lockstep, ideal, servedSolo}
	times := make([]time.Duration, len(ways))
	var calls, requests int64    // of the served groups
	var runTime [2]time.Duration // of the served and the lockstep groups
	var runCalls [2]int64
	tn := newTurns(b, len(ways))
	b.ResetTimer()
	for b.Loop() {
		for i, way := range ways {
			before := e.Stats().Components[fx.Component]
			times[i] += tn.take(i, way)
			if i < 2 {
				after := e.Stats().Components[fx.Component]
				runTime[i] += after.RunTime - before.RunTime
				runCalls[i] += after.Invocations - before.Invocations
			}
			if i == 0 {
				after := e.Stats().Components[fx.Component]
				calls += after.Invocations - before.Invocations
				requests += after.Requests - before.Requests
			}
		}
	}
	b.ReportMetric(times[2].Seconds()/times[0].Seconds(), "served/ideal")
	b.ReportMetric(times[3].Seconds()/times[0].Seconds(), "served/solo")
	b.ReportMetric(times[2].Seconds()/times[1].Seconds(), "lockstep/ideal")
	b.ReportMetric(float64(requests)/float64(max(calls, 1)), "requests/call")
	// A group's time from its formation to its outputs (assembly and
	// invocation, the stats' run time), served and in lockstep: what work
	// beside it on the machine costs it.
	b.ReportMetric(runTime[0].Seconds()*1e6/float64(max(runCalls[0], 1)), "served-us/group")
	b.ReportMetric(runTime[1].Seconds()*1e6/float64(max(runCalls[1], 1)), "lockstep-us/group")
	// The CPU time of a request served and in the ideal's calls.
	perReq := float64(len(reqs) * docs * b.N)
	b.ReportMetric(tn.cpu[0].Seconds()*1e6/perReq, "served-cpu-us/req")
	b.ReportMetric(tn.cpu[2].Seconds()*1e6/perReq, "ideal-cpu-us/req")
	b.ReportMetric(float64(docs), "docs/turn")
	b.ReportMetric(0, "ns/op") // the sum of four ways means nothing
}

// callers are goroutines that send requests through Run as a server's
// connections do, each its next request as soon as its last is answered.
// They live as long as the benchmark; a round hands them docs documents'
// requests (servedDocs unless set) for the engine it serves them on.
type callers struct {
	b     *testing.B
	n     int
	reqs  []vm.Request
	docs  int
	send  func(vm.Request) // sends a request and waits for its answer
	next  atomic.Int64
	round sync.WaitGroup
	start chan struct{}
}

func newCallers(b *testing.B, n int, reqs []vm.Request) *callers {
	c := &callers{b: b, n: n, reqs: reqs, docs: servedDocs, start: make(chan struct{})}
	b.Cleanup(func() { close(c.start) })
	for range n {
		go func() {
			for range c.start {
				total := int64(c.docs * len(reqs))
				for i := c.next.Add(1) - 1; i < total; i = c.next.Add(1) - 1 {
					c.send(reqs[i%int64(len(reqs))])
				}
				c.round.Done()
			}
		}()
	}
	return c
}

// serve returns a round of the callers on engine on: docs documents'
// requests, answered.
func (c *callers) serve(on Runner) func() {
	return c.serveWith(func(req vm.Request) {
		r := on.Run(context.Background(), req)
		if r.Err != nil {
			c.b.Error(r.Err)
		}
		r.Release() // as a server does once it has written it
	})
}

// serveWith returns a round of the callers, each request sent by send.
func (c *callers) serveWith(send func(vm.Request)) func() {
	return func() {
		c.send = send
		c.next.Store(0)
		c.round.Add(c.n)
		for range c.n {
			c.start <- struct{}{}
		}
		c.round.Wait()
	}
}
