package web

import (
	"container/list"
	"sync"
	"time"
)

// cache keeps fetch results per (session, provider, URL) for a TTL, bounded
// by entry count and content bytes (least recently used go first). Expired
// entries are dropped lazily; the cache starts no goroutine.
type cache struct {
	ttl        time.Duration
	maxEntries int
	maxBytes   int
	now        func() time.Time

	mu    sync.Mutex
	ll    *list.List // front = most recently used
	items map[cacheKey]*list.Element
	bytes int
}

type cacheKey struct{ session, provider, url string }

type cacheEntry struct {
	key     cacheKey
	res     FetchResult
	expires time.Time
}

func newCache(ttl time.Duration, entries, bytes int, now func() time.Time) *cache {
	return &cache{ttl: ttl, maxEntries: entries, maxBytes: bytes, now: now, ll: list.New(), items: map[cacheKey]*list.Element{}}
}

func (c *cache) get(k cacheKey) (*FetchResult, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.items[k]
	if !ok {
		return nil, false
	}
	e := el.Value.(*cacheEntry)
	if !c.now().Before(e.expires) {
		c.remove(el)
		return nil, false
	}
	c.ll.MoveToFront(el)
	r := e.res
	return &r, true
}

func (c *cache) put(k cacheKey, r *FetchResult) {
	size := len(r.Content)
	if size > c.maxBytes {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.items[k]; ok {
		c.remove(el)
	}
	e := &cacheEntry{key: k, res: *r, expires: c.now().Add(c.ttl)}
	e.res.Cached = false
	c.items[k] = c.ll.PushFront(e)
	c.bytes += size
	now := c.now()
	// Drop expired entries from the cold end, then evict until within bounds.
	for el := c.ll.Back(); el != nil; {
		prev := el.Prev()
		if !now.Before(el.Value.(*cacheEntry).expires) {
			c.remove(el)
		}
		el = prev
	}
	for c.ll.Len() > c.maxEntries || c.bytes > c.maxBytes {
		c.remove(c.ll.Back())
	}
}

func (c *cache) remove(el *list.Element) {
	e := el.Value.(*cacheEntry)
	c.ll.Remove(el)
	delete(c.items, e.key)
	c.bytes -= len(e.res.Content)
}

func (c *cache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ll.Len()
}
