package vm

import "sync/atomic"

// Copies counts the host copies the runtime makes, by reason, so that a
// test (and `genaic run --stats`) can show no hidden copies happen.
type Copies struct {
	bytes, count atomic.Int64
	byReason     [copyReasons]atomic.Int64
}

// CopyReason says why the runtime copied payload.
type CopyReason int

// Copy reasons.
const (
	CopyPack      CopyReason = iota // concatenating items along a packed axis
	CopyPad                         // writing items into a padded rectangle
	CopyStack                       // stacking request rows
	CopyCompanion                   // recomputing companions for a group
	CopyGather                      // a compaction that cannot be a reslice
	CopyUnstack                     // handing out rows stacked on an inner axis
	copyReasons
)

var copyReasonNames = [...]string{"pack", "pad", "stack", "companion", "gather", "unstack"}

func (r CopyReason) String() string { return copyReasonNames[r] }

// Add records a copy of n bytes.
func (c *Copies) Add(r CopyReason, n int64) { c.AddCopies(r, n, 1) }

// AddCopies records copies copies of n bytes in all: a port's items are
// counted once per group.
func (c *Copies) AddCopies(r CopyReason, n, copies int64) {
	c.bytes.Add(n)
	c.count.Add(copies)
	c.byReason[r].Add(n)
}

// Bytes returns the bytes copied so far.
func (c *Copies) Bytes() int64 { return c.bytes.Load() }

// Count returns the number of copies so far.
func (c *Copies) Count() int64 { return c.count.Load() }

// ByReason returns the bytes copied for each reason.
func (c *Copies) ByReason() map[string]int64 {
	out := map[string]int64{}
	for i := range copyReasons {
		if n := c.byReason[i].Load(); n > 0 {
			out[CopyReason(i).String()] = n
		}
	}
	return out
}
