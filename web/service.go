package web

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
)

// Default preference orders for automatic selection: dedicated search APIs
// first, then answer engines, then model-backed search (a full model call
// per query).
var (
	DefaultSearchOrder = []string{"exa", "brave", "searxng", "perplexity", "deepseek"}
	DefaultFetchOrder  = []string{"local"}
)

// Cache defaults.
const (
	DefaultCacheTTL     = 5 * time.Minute
	DefaultCacheEntries = 128
	DefaultCacheBytes   = 32 << 20
)

// Options configure a [Service].
type Options struct {
	// SearchProvider and FetchProvider pin a provider by id. A pinned
	// provider that is not registered or not available is an error; there
	// is no fallback to another provider.
	SearchProvider string
	FetchProvider  string
	// SearchOrder and FetchOrder rank providers for automatic selection
	// (nil: DefaultSearchOrder, DefaultFetchOrder). Available providers not
	// named come after, by id.
	SearchOrder []string
	FetchOrder  []string
	// CacheTTL is how long a fetched page is reused within a session
	// (0: DefaultCacheTTL; negative disables the cache). CacheEntries and
	// CacheBytes bound the cache (0: the defaults).
	CacheTTL     time.Duration
	CacheEntries int
	CacheBytes   int
	// Now is the clock (tests); nil means time.Now.
	Now func() time.Time
}

// Service holds the provider registries and serves searches and fetches.
// It is safe for concurrent use.
type Service struct {
	opts   Options
	mu     sync.RWMutex
	search map[string]SearchProvider
	fetch  map[string]FetchProvider
	cache  *cache
}

// NewService returns an empty service.
func NewService(o Options) *Service {
	if o.SearchOrder == nil {
		o.SearchOrder = DefaultSearchOrder
	}
	if o.FetchOrder == nil {
		o.FetchOrder = DefaultFetchOrder
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	s := &Service{opts: o, search: map[string]SearchProvider{}, fetch: map[string]FetchProvider{}}
	if o.CacheTTL >= 0 {
		s.cache = newCache(cmpOr(o.CacheTTL, DefaultCacheTTL), cmpOr(o.CacheEntries, DefaultCacheEntries),
			cmpOr(o.CacheBytes, DefaultCacheBytes), o.Now)
	}
	return s
}

func cmpOr[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

// RegisterSearch adds a search provider. Ids are unique per kind; the
// returned function removes the provider.
func (s *Service) RegisterSearch(p SearchProvider) (dispose func(), err error) {
	return register(s, s.search, p)
}

// RegisterFetch adds a fetch provider.
func (s *Service) RegisterFetch(p FetchProvider) (dispose func(), err error) {
	return register(s, s.fetch, p)
}

type provider interface {
	ID() string
	Available() error
}

func register[P provider](s *Service, m map[string]P, p P) (func(), error) {
	id := p.ID()
	if id == "" {
		return nil, errors.New("web: a provider must have an id")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, dup := m[id]; dup {
		return nil, Errorf(CodeDuplicateProvider, "a web provider with id %q is already registered", id)
	}
	m[id] = p
	var once sync.Once
	return func() {
		once.Do(func() {
			s.mu.Lock()
			defer s.mu.Unlock()
			delete(m, id)
		})
	}, nil
}

// Close closes every registered provider that implements io.Closer (the
// local fetcher's idle connections) and joins their errors. The service
// stays usable.
func (s *Service) Close() error {
	s.mu.RLock()
	var closers []io.Closer
	for _, id := range sortedKeys(s.fetch) {
		if c, ok := s.fetch[id].(io.Closer); ok {
			closers = append(closers, c)
		}
	}
	for _, id := range sortedKeys(s.search) {
		if c, ok := s.search[id].(io.Closer); ok {
			closers = append(closers, c)
		}
	}
	s.mu.RUnlock()
	var errs []error
	for _, c := range closers {
		errs = append(errs, c.Close())
	}
	return errors.Join(errs...)
}

// SearchProvider returns the provider searches go to, or a
// PROVIDER_UNAVAILABLE error saying why there is none.
func (s *Service) SearchProvider() (SearchProvider, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return selectProvider("search", s.search, s.opts.SearchProvider, s.opts.SearchOrder)
}

// FetchProvider returns the provider fetches go to.
func (s *Service) FetchProvider() (FetchProvider, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return selectProvider("fetch", s.fetch, s.opts.FetchProvider, s.opts.FetchOrder)
}

// SearchProviders lists the registered search provider ids, sorted.
func (s *Service) SearchProviders() []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return sortedKeys(s.search)
}

// FetchProviders lists the registered fetch provider ids, sorted.
func (s *Service) FetchProviders() []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return sortedKeys(s.fetch)
}

func sortedKeys[P any](m map[string]P) []string {
	ids := make([]string, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

// selectProvider: the pinned id, else the first available provider in
// order, else the first available one by id. The result depends only on
// the registry's contents, never on registration order.
func selectProvider[P provider](kind string, m map[string]P, pinned string, order []string) (P, error) {
	var zero P
	if pinned != "" {
		p, ok := m[pinned]
		if !ok {
			ids := sortedKeys(m)
			known := "none are registered"
			if len(ids) > 0 {
				known = "registered: " + strings.Join(ids, ", ")
			}
			return zero, Errorf(CodeProviderUnavailable, "the configured web %s provider %q is not registered (%s)", kind, pinned, known)
		}
		if err := p.Available(); err != nil {
			return zero, Wrap(CodeProviderUnavailable, err, "the configured web %s provider %q is not available: %v", kind, pinned, err)
		}
		return p, nil
	}
	ids := sortedKeys(m)
	sort.SliceStable(ids, func(i, j int) bool { return rank(order, ids[i]) < rank(order, ids[j]) })
	var reasons []string
	for _, id := range ids {
		err := m[id].Available()
		if err == nil {
			return m[id], nil
		}
		reasons = append(reasons, fmt.Sprintf("%s: %v", id, err))
	}
	if len(reasons) == 0 {
		return zero, Errorf(CodeProviderUnavailable, "no web %s provider is registered", kind)
	}
	return zero, Errorf(CodeProviderUnavailable, "no web %s provider is available (%s)", kind, strings.Join(reasons, "; "))
}

func rank(order []string, id string) int {
	if i := slices.Index(order, id); i >= 0 {
		return i
	}
	return len(order)
}

// Search runs req on the selected provider, then drops sources outside the
// domain filters and duplicate URLs and cuts the list to req.Count.
func (s *Service) Search(ctx context.Context, req SearchRequest) (*SearchResult, error) {
	if strings.TrimSpace(req.Query) == "" {
		return nil, errors.New("web: the search query is empty")
	}
	if req.Count < 0 {
		req.Count = 0
	}
	req.AllowedDomains = normalizeDomains(req.AllowedDomains)
	req.BlockedDomains = normalizeDomains(req.BlockedDomains)
	p, err := s.SearchProvider()
	if err != nil {
		return nil, err
	}
	if err := ContextError(ctx, "web search"); err != nil {
		return nil, err
	}
	res, err := p.Search(ctx, req)
	if err != nil {
		return nil, err
	}
	if res == nil {
		return nil, Errorf(CodeProviderError, "web search provider %q returned no result", p.ID())
	}
	out := *res
	if out.Provider == "" {
		out.Provider = p.ID()
	}
	if out.Query == "" {
		out.Query = req.Query
	}
	out.Sources = nil
	seen := map[string]bool{}
	for _, src := range res.Sources {
		if src.URL == "" || seen[src.URL] || !domainAllowed(src.URL, req.AllowedDomains, req.BlockedDomains) {
			continue
		}
		seen[src.URL] = true
		out.Sources = append(out.Sources, src)
	}
	if req.Count > 0 && len(out.Sources) > req.Count {
		out.Sources = out.Sources[:req.Count]
		out.Truncated = true
	}
	return &out, nil
}

// Fetch fetches req.URL with the selected provider, answering from the
// session's cache when the same URL was fetched within the cache TTL.
func (s *Service) Fetch(ctx context.Context, req FetchRequest) (*FetchResult, error) {
	p, err := s.FetchProvider()
	if err != nil {
		return nil, err
	}
	key := cacheKey{session: req.SessionID, provider: p.ID(), url: strings.TrimSpace(req.URL)}
	if s.cache != nil && !req.NoCache {
		if r, ok := s.cache.get(key); ok {
			r.Cached = true
			return r, nil
		}
	}
	if err := ContextError(ctx, "web fetch"); err != nil {
		return nil, err
	}
	res, err := p.Fetch(ctx, req)
	if err != nil {
		return nil, err
	}
	if res == nil {
		return nil, Errorf(CodeProviderError, "web fetch provider %q returned no result", p.ID())
	}
	if res.Provider == "" {
		res.Provider = p.ID()
	}
	if res.FetchedAt.IsZero() {
		res.FetchedAt = s.opts.Now()
	}
	if s.cache != nil {
		s.cache.put(key, res)
	}
	out := *res
	return &out, nil
}

// normalizeDomains lower-cases domain filters and strips what a model tends
// to add: a scheme, a path, a port, "*." and surrounding dots.
func normalizeDomains(ds []string) []string {
	var out []string
	for _, d := range ds {
		d = strings.ToLower(strings.TrimSpace(d))
		if i := strings.Index(d, "://"); i >= 0 {
			d = d[i+3:]
		}
		if i := strings.IndexAny(d, "/?#"); i >= 0 {
			d = d[:i]
		}
		if i := strings.LastIndex(d, ":"); i >= 0 && !strings.Contains(d[i:], "]") {
			d = d[:i]
		}
		d = strings.TrimPrefix(d, "*.")
		d = strings.Trim(d, ".")
		if d != "" && !slices.Contains(out, d) {
			out = append(out, d)
		}
	}
	return out
}

// domainAllowed reports whether rawURL's host passes the filters: it must
// match an allowed domain (when any are given) and no blocked one. A domain
// matches itself and its subdomains.
func domainAllowed(rawURL string, allowed, blocked []string) bool {
	if len(allowed) == 0 && len(blocked) == 0 {
		return true
	}
	u, err := url.Parse(rawURL)
	if err != nil {
		return false
	}
	host := strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")
	for _, d := range blocked {
		if domainMatch(host, d) {
			return false
		}
	}
	if len(allowed) == 0 {
		return true
	}
	for _, d := range allowed {
		if domainMatch(host, d) {
			return true
		}
	}
	return false
}

func domainMatch(host, domain string) bool {
	return host == domain || strings.HasSuffix(host, "."+domain)
}
