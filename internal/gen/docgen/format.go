package docgen

import (
	"go/ast"
	"go/printer"
	"go/token"
	"io"
)

func formatNode(w io.Writer, n ast.Node) error {
	return printer.Fprint(w, token.NewFileSet(), n)
}
