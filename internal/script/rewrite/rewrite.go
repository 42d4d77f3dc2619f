// Package rewrite bounds what one step of a Starlark script can allocate,
// by rewriting its syntax tree before it is compiled. It imports only the
// Starlark syntax package; the builtins the rewritten calls name are
// package script's.
package rewrite

import (
	"go.starlark.net/syntax"
)

// Starlark's interpreter runs operators (+, *, %, |, <<), item assignment
// and comprehensions itself, with no hook, and a single one of these steps
// can allocate a gigabyte ("x" * 1000000000). So before a script is
// compiled its syntax tree is rewritten: every such operation becomes a call
// of a hidden builtin that computes the size of the result, charges it to
// the call's memory budget and only then does what the interpreter would
// have done. The hidden names begin with "$", which no identifier a script
// can write does, so scripts cannot shadow or reach them by name. Method
// lookups of the few methods that can allocate or run long (replace, join,
// split, extend, ...) become $attr(x, "name"), which returns a bounded
// version of the method.
//
// The rewritten calls keep the position of the operator, so that errors
// still point at the line and column the author wrote.

// Names of the hidden builtins the rewrite calls; package script defines
// them.
const (
	Binary   = "$binary"   // $binary("op", x, y)
	Inplace  = "$inplace"  // $inplace("op", x, y): x op= y
	AugIndex = "$augindex" // $augindex("op", x, k, y): x[k] op= y
	SetIndex = "$setindex" // $setindex(x, k, v): x[k] = v
	Grow     = "$grow"     // $grow(v): one more element of a comprehension
	Attr     = "$attr"     // $attr(x, "name")
)

// boundedOps are the binary operators whose result can be much larger than
// their operands.
var boundedOps = map[syntax.Token]bool{
	syntax.PLUS: true, syntax.STAR: true, syntax.PERCENT: true, syntax.PIPE: true, syntax.LTLT: true,
}

// BoundedMethods are the methods $attr wraps: those whose result can be
// much larger than their receiver, or that grow it, or that iterate over an
// argument that may be a huge range.
var BoundedMethods = map[string]bool{
	"replace": true, "join": true, "format": true, "split": true, "rsplit": true, "splitlines": true,
	"append": true, "extend": true, "insert": true, "update": true, "setdefault": true, "add": true,
	"union": true, "items": true, "keys": true, "values": true,
}

// File rewrites the statements of f in place.
func File(f *syntax.File) {
	f.Stmts = rewriteStmts(f.Stmts)
}

func rewriteStmts(stmts []syntax.Stmt) []syntax.Stmt {
	for i, s := range stmts {
		stmts[i] = rewriteStmt(s)
	}
	return stmts
}

func rewriteStmt(s syntax.Stmt) syntax.Stmt {
	switch s := s.(type) {
	case *syntax.AssignStmt:
		s.RHS = rewriteExpr(s.RHS)
		if s.Op == syntax.EQ {
			if ix, ok := s.LHS.(*syntax.IndexExpr); ok {
				// x[k] = v grows a dict by an entry: counted.
				return &syntax.ExprStmt{X: hiddenCall(SetIndex, ix.Lbrack,
					rewriteExpr(ix.X), rewriteExpr(ix.Y), s.RHS)}
			}
			s.LHS = rewriteTarget(s.LHS)
			return s
		}
		op := s.Op - syntax.PLUS_EQ + syntax.PLUS // x op= y
		switch lhs := s.LHS.(type) {
		case *syntax.Ident:
			if boundedOps[op] {
				s.RHS = hiddenCall(Inplace, s.OpPos, opLiteral(op, s.OpPos), lhs, s.RHS)
				s.Op = syntax.EQ
			}
			return s
		case *syntax.IndexExpr:
			if boundedOps[op] {
				// One call does the get, the operation and the set,
				// so that x and k are evaluated once, as before.
				return &syntax.ExprStmt{X: hiddenCall(AugIndex, s.OpPos, opLiteral(op, s.OpPos),
					rewriteExpr(lhs.X), rewriteExpr(lhs.Y), s.RHS)}
			}
			lhs.X, lhs.Y = rewriteExpr(lhs.X), rewriteExpr(lhs.Y)
			return s
		default:
			s.LHS = rewriteTarget(s.LHS)
			return s
		}
	case *syntax.DefStmt:
		rewriteParams(s.Params)
		s.Body = rewriteStmts(s.Body)
	case *syntax.ExprStmt:
		s.X = rewriteExpr(s.X)
	case *syntax.ForStmt:
		s.Vars = rewriteTarget(s.Vars)
		s.X = rewriteExpr(s.X)
		s.Body = rewriteStmts(s.Body)
	case *syntax.WhileStmt:
		s.Cond = rewriteExpr(s.Cond)
		s.Body = rewriteStmts(s.Body)
	case *syntax.IfStmt:
		s.Cond = rewriteExpr(s.Cond)
		s.True = rewriteStmts(s.True)
		s.False = rewriteStmts(s.False)
	case *syntax.ReturnStmt:
		if s.Result != nil {
			s.Result = rewriteExpr(s.Result)
		}
	}
	return s
}

// rewriteTarget rewrites the expressions inside an assignment target (the
// index of x[f(a+b)] = ...), not the target itself.
func rewriteTarget(e syntax.Expr) syntax.Expr {
	switch e := e.(type) {
	case *syntax.IndexExpr:
		e.X, e.Y = rewriteExpr(e.X), rewriteExpr(e.Y)
	case *syntax.DotExpr:
		e.X = rewriteExpr(e.X)
	case *syntax.TupleExpr:
		for i, x := range e.List {
			e.List[i] = rewriteTarget(x)
		}
	case *syntax.ListExpr:
		for i, x := range e.List {
			e.List[i] = rewriteTarget(x)
		}
	case *syntax.ParenExpr:
		e.X = rewriteTarget(e.X)
	}
	return e
}

// rewriteParams rewrites default values of parameters (name=value).
func rewriteParams(params []syntax.Expr) {
	for _, p := range params {
		if b, ok := p.(*syntax.BinaryExpr); ok && b.Op == syntax.EQ {
			b.Y = rewriteExpr(b.Y)
		}
	}
}

func rewriteExpr(e syntax.Expr) syntax.Expr {
	switch e := e.(type) {
	case nil:
		return nil
	case *syntax.BinaryExpr:
		e.X, e.Y = rewriteExpr(e.X), rewriteExpr(e.Y)
		if boundedOps[e.Op] && !obviouslySmall(e) {
			return hiddenCall(Binary, e.OpPos, opLiteral(e.Op, e.OpPos), e.X, e.Y)
		}
	case *syntax.CallExpr:
		e.Fn = rewriteExpr(e.Fn)
		for i, a := range e.Args {
			if b, ok := a.(*syntax.BinaryExpr); ok && b.Op == syntax.EQ {
				b.Y = rewriteExpr(b.Y) // name=value: the name stays
				continue
			}
			e.Args[i] = rewriteExpr(a)
		}
	case *syntax.Comprehension:
		for _, c := range e.Clauses {
			switch c := c.(type) {
			case *syntax.ForClause:
				c.Vars = rewriteTarget(c.Vars)
				c.X = rewriteExpr(c.X)
			case *syntax.IfClause:
				c.Cond = rewriteExpr(c.Cond)
			}
		}
		// Each element the comprehension makes passes through $grow,
		// which charges its slot.
		if de, ok := e.Body.(*syntax.DictEntry); ok {
			de.Key = rewriteExpr(de.Key)
			de.Value = hiddenCall(Grow, de.Colon, rewriteExpr(de.Value))
		} else {
			body := rewriteExpr(e.Body)
			start, _ := body.Span()
			e.Body = hiddenCall(Grow, start, body)
		}
	case *syntax.CondExpr:
		e.Cond, e.True, e.False = rewriteExpr(e.Cond), rewriteExpr(e.True), rewriteExpr(e.False)
	case *syntax.DictExpr:
		for _, x := range e.List {
			de := x.(*syntax.DictEntry)
			de.Key, de.Value = rewriteExpr(de.Key), rewriteExpr(de.Value)
		}
	case *syntax.DotExpr:
		e.X = rewriteExpr(e.X)
		if BoundedMethods[e.Name.Name] {
			name := &syntax.Literal{Token: syntax.STRING, TokenPos: e.NamePos, Raw: `"` + e.Name.Name + `"`, Value: e.Name.Name}
			return hiddenCall(Attr, e.Dot, e.X, name)
		}
	case *syntax.IndexExpr:
		e.X, e.Y = rewriteExpr(e.X), rewriteExpr(e.Y)
	case *syntax.LambdaExpr:
		rewriteParams(e.Params)
		e.Body = rewriteExpr(e.Body)
	case *syntax.ListExpr:
		for i, x := range e.List {
			e.List[i] = rewriteExpr(x)
		}
	case *syntax.TupleExpr:
		for i, x := range e.List {
			e.List[i] = rewriteExpr(x)
		}
	case *syntax.ParenExpr:
		e.X = rewriteExpr(e.X)
	case *syntax.SliceExpr:
		e.X, e.Lo, e.Hi, e.Step = rewriteExpr(e.X), rewriteExpr(e.Lo), rewriteExpr(e.Hi), rewriteExpr(e.Step)
	case *syntax.UnaryExpr:
		e.X = rewriteExpr(e.X)
	}
	return e
}

// obviouslySmall reports operations whose result cannot be large whatever
// the other operand, which need no call: i + 1 (a number plus anything is
// a number or an error), s % 3 (one conversion of a small value), 1 << n
// (Starlark bounds the shift to 511 bits).
func obviouslySmall(e *syntax.BinaryExpr) bool {
	num := func(x syntax.Expr) bool {
		l, ok := x.(*syntax.Literal)
		return ok && (l.Token == syntax.INT || l.Token == syntax.FLOAT)
	}
	switch e.Op {
	case syntax.PLUS:
		return num(e.X) || num(e.Y)
	case syntax.PERCENT:
		return num(e.Y)
	case syntax.LTLT:
		return num(e.X)
	}
	return false
}

// hiddenCall returns the call name(args...) positioned at pos.
func hiddenCall(name string, pos syntax.Position, args ...syntax.Expr) *syntax.CallExpr {
	_, end := args[len(args)-1].Span()
	return &syntax.CallExpr{Fn: &syntax.Ident{NamePos: pos, Name: name}, Lparen: pos, Args: args, Rparen: end}
}

func opLiteral(op syntax.Token, pos syntax.Position) *syntax.Literal {
	s := op.String()
	return &syntax.Literal{Token: syntax.STRING, TokenPos: pos, Raw: `"` + s + `"`, Value: s}
}
