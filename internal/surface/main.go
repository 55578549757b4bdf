// Command surface measures a package's exported API: its top-level
// exported identifiers (types, functions, constants, variables), the
// distinct names of the exported methods of its exported types, and the exported fields of its
// exported struct types (embedded ones counted once). Test files are
// skipped.
//
//	go run ./internal/surface [dir]
package main

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"strings"
)

func main() {
	dir := "."
	if len(os.Args) > 1 {
		dir = os.Args[1]
	}
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, dir, func(fi os.FileInfo) bool {
		return !strings.HasSuffix(fi.Name(), "_test.go")
	}, 0)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	var idents, fields int
	methods := map[string]bool{}
	for name, pkg := range pkgs {
		if name == "main" {
			continue
		}
		for _, f := range pkg.Files {
			for _, d := range f.Decls {
				switch d := d.(type) {
				case *ast.FuncDecl:
					switch {
					case d.Recv != nil && d.Name.IsExported() && ast.IsExported(typeName(d.Recv.List[0].Type)):
						methods[d.Name.Name] = true
					case d.Recv == nil && d.Name.IsExported():
						idents++
					}
				case *ast.GenDecl:
					for _, s := range d.Specs {
						switch s := s.(type) {
						case *ast.TypeSpec:
							if !s.Name.IsExported() {
								continue
							}
							idents++
							if st, ok := s.Type.(*ast.StructType); ok {
								fields += exportedFields(st)
							}
						case *ast.ValueSpec:
							for _, n := range s.Names {
								if n.IsExported() {
									idents++
								}
							}
						}
					}
				}
			}
		}
	}
	fmt.Printf("top-level exported identifiers %d\ndistinct exported method names %d\nexported struct fields %d\n", idents, len(methods), fields)
}

func exportedFields(st *ast.StructType) int {
	n := 0
	for _, f := range st.Fields.List {
		if len(f.Names) == 0 { // embedded: counted once, by its type's name
			if ast.IsExported(typeName(f.Type)) {
				n++
			}
			continue
		}
		for _, name := range f.Names {
			if name.IsExported() {
				n++
			}
		}
	}
	return n
}

func typeName(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.Ident:
		return e.Name
	case *ast.StarExpr:
		return typeName(e.X)
	case *ast.IndexExpr:
		return typeName(e.X)
	case *ast.IndexListExpr:
		return typeName(e.X)
	case *ast.SelectorExpr:
		return e.Sel.Name
	}
	return ""
}
