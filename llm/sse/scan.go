package sse

import "github.com/dshq/dsh/internal/jsonscan"

// JSONScanner is the validating, reflection-free JSON walker the adapters
// parse stream events with. It lives in internal/jsonscan so that package
// llm, which this one imports, decodes content blocks with it too.
type JSONScanner = jsonscan.Scanner

// JSONSyntaxError is a malformed document found by a [JSONScanner].
type JSONSyntaxError = jsonscan.SyntaxError
