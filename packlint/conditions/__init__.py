"""The condition language of the rule table: a small, typed, three-valued expression language over one
variant of the launch model.

    expr     := or
    or       := and ('or' and)*
    and      := not ('and' not)*
    not      := 'not' not | cmp
    cmp      := sum (('==' | '!=' | '<' | '<=' | '>' | '>=') sum | 'in' '[' literal (',' literal)* ']')?
    sum      := prod (('+' | '-') prod)*
    prod     := unary (('*' | '/' | '%') unary)*
    unary    := '-' unary | atom
    atom     := INT | STRING | 'true' | 'false' | NAME | NAME '(' args ')' | '(' expr ')'

Types are `bool`, `int` and `str`; every expression is type-checked when the table loads, names and
functions are resolved then, and regexes are compiled then. Nothing is ever passed to `eval`/`exec`.

At run time a value is a Python bool/int/str, or `Unk`: a value packlint does not have. `Unk` has three
kinds: `unknown` (the launch model could not determine it: a rule over it is *undecided* and may be
reported as an info), `invalid` (the value is known but meaningless for the operation, e.g. `int('true')`,
which another rule reports) and `absent` (the variable or flag is not there at all). Any operation on an
`Unk` gives an `Unk`, except that `false and X` is false and `true or X` is true (Kleene logic); a rule
fires only when its condition is exactly `True`.

The package, one concern per module (data flows top to bottom):

    syntax.py      tokenizer and parser: text -> untyped tree (ConditionError, parse)
    tree.py        the typed tree and its evaluation: Unk, Expr and its nodes, EvalContext, the
                   FUNCTIONS registry
    compile.py     names and types: Scope, check, compile_condition; message templates
    functions/     the built-in functions, by domain: core (launch model), derived (sizes, settings),
                   codebase (the launched code)
"""

from __future__ import annotations

from packlint.conditions.compile import Scope, Template, check, compile_condition, compile_template
from packlint.conditions.functions import FUNCTIONS  # the registry, filled by this import
from packlint.conditions.functions.derived import Setting
from packlint.conditions.syntax import Binary, Call, ConditionError, InList, Name, Node, Unary, parse
from packlint.conditions.tree import BOOL, INT, STR, EvalContext, Expr, PredicateBody, Unk

__all__ = [
    "BOOL",
    "FUNCTIONS",
    "INT",
    "STR",
    "Binary",
    "Call",
    "ConditionError",
    "EvalContext",
    "Expr",
    "InList",
    "Name",
    "Node",
    "PredicateBody",
    "Scope",
    "Setting",
    "Template",
    "Unary",
    "Unk",
    "check",
    "compile_condition",
    "compile_template",
    "parse",
]
