// Package docs holds dsh's design documentation: the architecture overview,
// the design records under rfc/, and the generated catalog of interception
// points and built-in tools. There is no code here beyond the go:generate
// directives below; the tests beside this file fail when a generated file is
// stale, when a design record breaks the folder and naming rules, or when a
// relative link in the Markdown points nowhere.
//
// Regenerate everything with:
//
//	go generate ./docs/...
package docs

//go:generate go run github.com/dshq/dsh/internal/gen/rfcindex
//go:generate go run github.com/dshq/dsh/internal/gen/catalog
