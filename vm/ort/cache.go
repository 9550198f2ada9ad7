//go:build cgo

package ort

import (
	"sync"

	ortgo "github.com/yalue/onnxruntime_go"

	"github.com/genaic/genaic/backend"
)

// valueCacheSize bounds the ORT input values a session keeps: a runner
// passes each of its group buffers in as many shapes as its groups take
// (a padded image batch, its offsets, owners and lengths: four values per
// shape), and a workload's groups cycle through dozens of shapes; a cache
// smaller than the cycle misses on every call.
const valueCacheSize = 256

// maxCachedBytes bounds the size of a cached input: making a value is worth
// saving where the run is short, which means small inputs.
const maxCachedBytes = 1 << 20

// maxCacheBytes bounds the input memory the cache keeps alive in all.
const maxCacheBytes = 32 << 20

// maxCachedRank bounds the rank of a cached input (the key holds the shape
// in a fixed array, so that it is comparable without allocating).
const maxCachedRank = 8

// valueCache keeps the ORT values made over callers' input buffers. Making
// one costs more than a small graph's whole run in onnxruntime_go (a cgo
// call into ONNX Runtime to create it and one to release it), and the VM
// passes the same group buffers again and again. A value is keyed by the
// buffer's address, dtype and shape: the same memory seen as the same
// tensor. ONNX Runtime reads the buffer in place at every run, so what the
// caller wrote into it since is what the graph sees. A cached value holds
// its Go slice, so the buffer cannot be freed, nor its address reused by
// another, while the value is cached: that is why the key may be an
// address. The cost is that the cache keeps buffers alive after their
// owner has dropped them: up to valueCacheSize of them, of at most
// maxCachedBytes each and maxCacheBytes in all.
//
// Eviction is CLOCK (second chance): a value used since the hand last
// passed it stays, so that a caller's reused buffers outlive a stream of
// fresh ones, at a constant cost per miss. Values are counted while runs
// use them: an evicted value in use is destroyed by the last run to
// release it.
type valueCache struct {
	mu      sync.Mutex
	entries map[uint64]*cachedValue // by valueKey.sum
	ring    []*cachedValue          // the cached values, in the hand's order; nil: a free slot
	free    []int                   // the ring's free slots
	hand    int
	bytes   int64 // the cached inputs' size
	closed  bool
}

// valueKey is a buffer seen as a tensor of a shape. The map is keyed by
// its sum, which a few multiplications make (a call looks up every input,
// and hashing the whole key cost more than the rest of the lookup); a hit
// compares the entry's whole key and its dtype (which the same buffer is
// seldom seen as two of), and two keys of one sum share no entry: the
// second is used uncached.
type valueKey struct {
	addr uintptr
	shape
}

// shape is a tensor's extents in a fixed array, comparable without
// allocating: part of the input cache's keys and the scratch outputs'.
type shape struct {
	rank int
	dims [maxCachedRank]int64
}

// shapeOf holds extents of at most maxCachedRank axes (false beyond).
func shapeOf(extents []int64) (shape, bool) {
	if len(extents) > maxCachedRank {
		return shape{}, false
	}
	s := shape{rank: len(extents)}
	copy(s.dims[:], extents)
	return s, true
}

// sum mixes the address and the extents into the map's key.
func (k *valueKey) sum() uint64 {
	const m = 0x9e3779b97f4a7c15 // 2^64 / the golden ratio, odd
	h := (uint64(k.addr) ^ uint64(k.rank)<<56) * m
	for _, d := range k.dims[:k.rank] {
		h = (h ^ uint64(d)) * m
	}
	return h ^ h>>31
}

type cachedValue struct {
	key     valueKey
	dtype   string
	v       ortgo.Value
	bytes   int64
	n       int64 // its elements: what the shape holds, and the data did
	refs    int   // runs using v now
	used    bool  // used since the hand last passed it
	evicted bool  // out of the map: destroyed once refs is 0
}

// keyOf returns a tensor's cache key, or false when it is not cached: a
// rank beyond maxCachedRank, more than maxCachedBytes, or a scalar, whose
// value holds a copy of its element rather than reading its buffer
// (scalarValue).
func keyOf(t *backend.Tensor) (valueKey, bool) {
	sh, ok := shapeOf(t.Shape)
	if !ok || t.Bytes() > maxCachedBytes || len(t.Shape) == 0 {
		return valueKey{}, false
	}
	return valueKey{addr: dataAddr(t.Data), shape: sh}, true
}

// acquire fills held with a value over each checked tensor's data, from
// the cache or new, and must be followed by release(held) once the run no
// longer uses them. On error it returns the index of the tensor that failed.
func (c *valueCache) acquire(ts []*backend.Tensor, held, last []*cachedValue) (int, error) {
	c.hits(ts, held, last)
	return c.fill(ts, held)
}

// fill is acquire once hits has run: it makes a value for every tensor
// that found none in the cache.
func (c *valueCache) fill(ts []*backend.Tensor, held []*cachedValue) (int, error) {
	for i, t := range ts {
		if held[i] != nil {
			continue
		}
		key, ok := keyOf(t)
		v, err := newValue(t)
		if err != nil {
			return i, err
		}
		held[i] = &cachedValue{key: key, dtype: t.DType, v: v, bytes: t.Bytes(), n: t.Len(), refs: 1, evicted: !ok}
		if ok {
			c.insert(held[i])
		}
	}
	return 0, nil
}

// hits fills held with the cached values of ts, under one lock. last
// holds, per input, the value the same call held before (nil: none): a
// caller passing the same buffers again, as the VM's runners do, finds it
// there without hashing a key. Bit i of again (for the first 64 inputs)
// says that input i was found so: over the same data, of the same length,
// as the same dtype and shape, as the call's last run passed there.
func (c *valueCache) hits(ts []*backend.Tensor, held, last []*cachedValue) (again uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, t := range ts {
		if e := last[i]; e != nil && !e.evicted && e.over(t) {
			e.refs++
			e.used = true
			held[i] = e
			if i < 64 {
				again |= 1 << i
			}
			continue
		}
		key, ok := keyOf(t)
		if !ok {
			continue
		}
		if e := c.entries[key.sum()]; e != nil && e.key == key && e.dtype == t.DType {
			e.refs++
			e.used = true
			held[i] = e
		}
	}
	return again
}

// over reports whether e is a value over t's data as t's dtype and shape,
// the data as long as the value's.
func (e *cachedValue) over(t *backend.Tensor) bool {
	if e.dtype != t.DType || e.key.rank != len(t.Shape) {
		return false
	}
	if addr, n := dataSpan(t.Data); addr != e.key.addr || int64(n) != e.n {
		return false
	}
	for i, d := range t.Shape {
		if e.key.dims[i] != d {
			return false
		}
	}
	return true
}

// insert adds a value made outside the lock. A value another run cached
// for the same key meanwhile stays; the new one is then used once, uncached.
func (c *valueCache) insert(e *cachedValue) {
	c.mu.Lock()
	defer c.mu.Unlock()
	sum := e.key.sum()
	if _, dup := c.entries[sum]; dup || c.closed {
		e.evicted = true
		return
	}
	if c.entries == nil {
		c.entries = make(map[uint64]*cachedValue, valueCacheSize)
	}
	// Room for one more value, within both bounds. A value is at most
	// maxCachedBytes, so an empty cache always has room.
	for len(c.entries) >= valueCacheSize || c.bytes+e.bytes > maxCacheBytes {
		c.evictAt(c.victim())
	}
	if n := len(c.free); n > 0 {
		c.ring[c.free[n-1]] = e
		c.free = c.free[:n-1]
	} else {
		c.ring = append(c.ring, e)
	}
	c.entries[sum] = e
	c.bytes += e.bytes
}

// victim advances the hand past free slots and the values used since it
// last passed them, and returns the slot of the first one that was not.
// The cache holds a value.
func (c *valueCache) victim() int {
	for {
		e := c.ring[c.hand]
		if e != nil && !e.used {
			return c.hand
		}
		if e != nil {
			e.used = false
		}
		c.hand = (c.hand + 1) % len(c.ring)
	}
}

// evictAt evicts the value in slot i, freeing the slot.
func (c *valueCache) evictAt(i int) {
	c.evict(c.ring[i])
	c.ring[i] = nil
	c.free = append(c.free, i)
}

// evict takes a value out of the map, destroying it unless a run uses it.
func (c *valueCache) evict(e *cachedValue) {
	delete(c.entries, e.key.sum())
	c.bytes -= e.bytes
	e.evicted = true
	if e.refs == 0 {
		e.v.Destroy()
	}
}

// release ends a run's use of the values it acquired (nil entries are
// skipped: an acquire that failed part way), and keeps in last those still
// cached, for the next run of the same call (hits); nil where there is none,
// so that last keeps no evicted value, nor its buffer, alive.
func (c *valueCache) release(held, last []*cachedValue) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, e := range held {
		last[i] = nil
		if e == nil {
			continue
		}
		e.refs--
		if e.evicted && e.refs == 0 {
			e.v.Destroy()
		}
		if !e.evicted {
			last[i] = e
		}
	}
}

// close destroys every cached value (those in use, once released) and
// caches nothing more.
func (c *valueCache) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	for _, e := range c.entries {
		c.evict(e)
	}
	c.ring, c.free = nil, nil
}
