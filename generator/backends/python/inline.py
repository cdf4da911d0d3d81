"""An AST pass over a rendered codec module: inline per-element calls into the loops that make them.

The templates emit one function per struct (``_fdecode_record``, ``_fencode_header``...), which keeps them
small and readable.  In the hot loops (one call per record, one per header) the call itself is a large
share of the time, so this pass splices the callee's body into the loop instead:

* only the optimistic decoders and encoders (``_fdecode_*``, ``_fencode_*``) and ``decode_run`` (the loop
  over a run of legacy log entries) are touched; the checked ones (``_decode_*``, ``_encode_*``) stay as
  rendered, so error reports keep their precise paths;
* only call sites inside a ``for``/``while`` loop are inlined (that is where the calls repeat);
* the callee's locals are renamed ``<name>_<struct>_`` (schema names may not end in ``_``, so the new
  names cannot meet a schema field), its parameters become the caller's arguments, and its final
  ``return value, pos`` becomes an assignment;
* callees are processed bottom-up (headers into records, then records into batches); recursive ones
  (a v0/v1 wrapper holding messages of its own kind) are left alone;
* a function no longer called from anywhere is dropped;
* last, reads of the (frozen) decode options inside loops are hoisted to the top of the function.

Anything outside these shapes is left as it is, so the pass can only remove calls, fold what a constant
argument leaves behind and move reads of frozen options, never change what the code computes.  The rewritten functions are spliced back into the module text; the rest of the
module (comments included) is untouched.
"""

from __future__ import annotations

import ast
import re

INLINE_PREFIXES = ("_fdecode_", "_fencode_")
#: public loops over optimistic decoders (a run of legacy log entries): rewritten too, and always kept
INLINE_ROOTS = ("decode_run",)


def _rewritable(name: str) -> bool:
    return name.startswith(INLINE_PREFIXES) or name in INLINE_ROOTS


class _Rename(ast.NodeTransformer):
    def __init__(self, mapping: dict[str, ast.expr | str]):
        self.mapping = mapping

    def visit_Name(self, node: ast.Name):
        new = self.mapping.get(node.id)
        if new is None:
            return node
        if isinstance(new, str):
            return ast.copy_location(ast.Name(id=new, ctx=node.ctx), node)
        return ast.copy_location(_clone(new), node)

    def visit_ExceptHandler(self, node: ast.ExceptHandler):
        self.generic_visit(node)
        new = self.mapping.get(node.name) if node.name else None
        if isinstance(new, str):
            node.name = new
        return node


class _LoopAware(ast.NodeTransformer):
    """A transformer that knows how many loops enclose the node it visits (``loop_depth``)."""

    loop_depth = 0

    def _loop(self, node):
        self.loop_depth += 1
        self.generic_visit(node)
        self.loop_depth -= 1
        return node

    visit_For = _loop
    visit_While = _loop


class _Fold(ast.NodeTransformer):
    """Simplify what binding a parameter to a constant leaves behind (``restamp_`` bound to False):
    ``False and x`` and ``a if False else b``, exactly what Python would evaluate, and the ``x = x``
    that may leave."""

    def visit_BoolOp(self, node: ast.BoolOp):
        self.generic_visit(node)
        first = node.values[0]
        if isinstance(node.op, ast.And) and isinstance(first, ast.Constant) and first.value is False:
            return first
        return node

    def visit_Assign(self, node: ast.Assign):
        self.generic_visit(node)
        t = node.targets
        if len(t) == 1 and isinstance(t[0], ast.Name) and isinstance(node.value, ast.Name) and t[0].id == node.value.id:
            return ast.Pass()  # ``x = x`` once the other branch is gone
        return node

    def visit_IfExp(self, node: ast.IfExp):
        self.generic_visit(node)
        if isinstance(node.test, ast.Constant) and isinstance(node.test.value, bool):
            return node.body if node.test.value else node.orelse
        return node


def _memo(f):
    """``f(fn)`` kept on the function's node: asked of a callee at each of its call sites, after the callee was
    finished (functions are rewritten bottom-up, each before its callers)."""
    attr = f"_kfmt_{f.__name__}"

    def memoised(fn: ast.FunctionDef):
        if attr not in fn.__dict__:
            fn.__dict__[attr] = f(fn)
        return fn.__dict__[attr]

    memoised.__wrapped__ = f  # type: ignore[attr-defined]  # what a caller still being rewritten asks
    memoised.attr = attr  # type: ignore[attr-defined]  # where it is kept (a caller may seed it)
    return memoised


class _Facts:
    """What the pass asks of a function, gathered in one walk: the names it stores (``stored``), every name it
    uses with its parameters (``names``), those it stores other than by ``+=`` (``rebound``), the functions it
    calls by name (``calls``), its ``return`` statements, whether it has a loop, and whether it holds a nested
    function, lambda, ``global``, ``nonlocal`` or ``yield`` (``nested``)."""

    __slots__ = ("stored", "names", "rebound", "calls", "returns", "loops", "nested")

    def __init__(self, fn: ast.FunctionDef):
        self.stored: set[str] = set()
        self.names: set[str] = {a.arg for a in fn.args.args}
        self.calls: set[str] = set()
        self.returns: list[ast.Return] = []
        self.loops = self.nested = False
        stores: list[ast.Name] = []
        aug: set[int] = set()
        for node in ast.walk(fn):
            if isinstance(node, ast.Name):
                self.names.add(node.id)
                if isinstance(node.ctx, ast.Store):
                    self.stored.add(node.id)
                    stores.append(node)
            elif isinstance(node, ast.Call):
                if isinstance(node.func, ast.Name):
                    self.calls.add(node.func.id)
            elif isinstance(node, ast.ExceptHandler):
                if node.name:
                    self.names.add(node.name)
                    self.stored.add(node.name)
            elif isinstance(node, ast.AugAssign):
                aug.add(id(node.target))
            elif isinstance(node, ast.Return):
                self.returns.append(node)
            elif isinstance(node, (ast.For, ast.While)):
                self.loops = True
            elif isinstance(node, _NESTED) and node is not fn:
                self.nested = True
        self.rebound = {n.id for n in stores if id(n) not in aug}


_NESTED = (ast.FunctionDef, ast.Lambda, ast.Global, ast.Nonlocal, ast.Yield)


@_memo
def _facts(fn: ast.FunctionDef) -> _Facts:
    return _Facts(fn)


def _stored(fn: ast.FunctionDef) -> set[str]:
    return _facts(fn).stored


@_memo
def _inlinable(fn: ast.FunctionDef) -> bool:
    facts = _facts(fn)
    if fn.name in facts.calls or fn.args.vararg or fn.args.kwarg or fn.args.kwonlyargs or facts.nested:
        return False
    if fn.name.startswith("_fdecode_"):
        last = fn.body[-1]
        return (
            len(facts.returns) == 1
            and isinstance(last, ast.Return)
            and isinstance(last.value, ast.Tuple)
            and len(last.value.elts) == 2
            and isinstance(last.value.elts[1], ast.Name)
        )
    return not facts.returns


def _clone(node):
    """A deep copy of an AST (faster than copy.deepcopy, without the pass's notes on function nodes)."""
    if isinstance(node, list):
        return [_clone(x) for x in node]
    if not isinstance(node, ast.AST) or isinstance(node, ast.expr_context):
        return node
    new = node.__class__.__new__(node.__class__)
    new.__dict__.update({k: _clone(v) for k, v in node.__dict__.items() if not k.startswith("_kfmt_")})
    return new


def _body_for(
    callee: ast.FunctionDef, args: list[ast.expr], caller_names: set[str], caller_locals: set[str], result: str | None
):
    """The callee's statements specialised for one call site, or None if the site does not fit."""
    params = [a.arg for a in callee.args.args]
    defaults = [None] * (len(params) - len(callee.args.defaults)) + list(callee.args.defaults)
    if len(args) > len(params) or any(isinstance(n, (ast.Call, ast.NamedExpr, ast.Await)) for a in args
                                      for n in ast.walk(a)):  # fmt: skip
        return None
    facts = _facts(callee)
    stored = facts.stored
    suffix = callee.name.split("_", 2)[-1]
    mapping: dict[str, ast.expr | str] = {}
    prologue: list[ast.stmt] = []
    pos_param = None
    if result is not None:
        ret = callee.body[-1]
        assert isinstance(ret, ast.Return) and isinstance(ret.value, ast.Tuple)  # `return value, pos`
        elt = ret.value.elts[1]
        assert isinstance(elt, ast.Name)
        pos_param = elt.id
    for i, p in enumerate(params):
        arg = args[i] if i < len(args) else defaults[i]
        if arg is None:
            return None
        simple = isinstance(arg, (ast.Name, ast.Constant))
        if simple and (p not in stored or (isinstance(arg, ast.Name) and (p == pos_param or p not in facts.rebound))):
            mapping[p] = arg.id if isinstance(arg, ast.Name) else arg
        else:
            local = f"{p}_{suffix}_"
            mapping[p] = local
            prologue.append(ast.Assign(targets=[ast.Name(id=local, ctx=ast.Store())], value=_clone(arg),
                                       lineno=0))  # fmt: skip
    used = set(caller_names)
    for name in sorted(stored - set(params)):
        new = f"{name}_{suffix}_"
        if new in used:
            return None
        mapping[name] = new
        used.add(new)
    # a global the callee reads must not be shadowed by a local of the caller
    loads = facts.names - set(params) - stored
    if loads & caller_locals:
        return None
    fn = _Rename(mapping).visit(_clone(callee))
    body = fn.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]  # docstring
    if result is not None:
        ret = body[-1]
        body = body[:-1] + [ast.Assign(targets=[ast.Name(id=result, ctx=ast.Store())], value=ret.value.elts[0],
                                       lineno=0)]  # fmt: skip
    folded = [_Fold().visit(stmt) for stmt in prologue + body]
    return [stmt for stmt in folded if not isinstance(stmt, ast.Pass)] or folded


class _Inliner(_LoopAware):
    def __init__(self, funcs: dict[str, ast.FunctionDef], caller: ast.FunctionDef, facts: _Facts):
        self.funcs = funcs
        self.caller = caller
        self.changed = False
        # ``facts``: the caller's before any inlining: sites in sibling branches may share names
        self.names = facts.names
        self.locals = {a.arg for a in caller.args.args} | facts.stored
        self.loops = facts.loops

    def _site(self, node: ast.stmt):
        """(callee, args, result var) for ``r, pos = _fdecode_x(...)`` or ``_fencode_x(...)``."""
        if (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Tuple)
            and len(node.targets[0].elts) == 2
            and all(isinstance(e, ast.Name) for e in node.targets[0].elts)
            and isinstance(node.value, ast.Call)
            and isinstance(node.value.func, ast.Name)
            and node.value.func.id.startswith("_fdecode_")
            and not node.value.keywords
        ):
            res, pos = (e.id for e in node.targets[0].elts if isinstance(e, ast.Name))
            args = node.value.args
            if len(args) < 2 or not isinstance(args[1], ast.Name) or args[1].id != pos:
                return None
            return node.value.func.id, args, res
        if (
            isinstance(node, ast.Expr)
            and isinstance(node.value, ast.Call)
            and isinstance(node.value.func, ast.Name)
            and node.value.func.id.startswith("_fencode_")
            and not node.value.keywords
        ):
            return node.value.func.id, node.value.args, None
        return None

    def generic_visit(self, node):
        """Statements only: a call site is a statement, and no statement is inside an expression."""
        for fieldname, old in ast.iter_fields(node):
            if not isinstance(old, list) or not old or isinstance(old[0], ast.expr):
                continue
            out = []
            for item in old:
                if isinstance(item, ast.stmt) and self.loop_depth:
                    site = self._site(item)
                    callee = self.funcs.get(site[0]) if site else None
                    if callee is not None and callee is not self.caller and _inlinable(callee):
                        body = _body_for(callee, site[1], self.names, self.locals, site[2])
                        if body is not None:
                            out.extend(body)
                            self.changed = True
                            continue
                if isinstance(item, ast.AST):
                    item = self.visit(item)
                out.append(item)
            setattr(node, fieldname, out)
        return node


class _HoistOptions(_LoopAware):
    """``opts.<limit>`` read inside a loop becomes a local read once at the top of the function."""

    def __init__(self):
        self.found: set[str] = set()

    def visit_Attribute(self, node: ast.Attribute):
        self.generic_visit(node)
        if (
            self.loop_depth
            and isinstance(node.value, ast.Name)
            and node.value.id == "opts"
            and isinstance(node.ctx, ast.Load)
        ):
            self.found.add(node.attr)
            return ast.copy_location(ast.Name(id=f"opts_{node.attr}_", ctx=ast.Load()), node)
        return node


def _hoist_options(fn: ast.FunctionDef) -> bool:
    """Read the options a function's loops use once, before them: ``DecodeOptions`` is a frozen
    dataclass, so the value cannot change in between.  Returns whether anything moved."""
    if "opts" not in {a.arg for a in fn.args.args} or "opts" in _stored(fn):
        return False
    t = _HoistOptions()
    t.visit(fn)
    if not t.found:
        return False
    first = 1 if fn.body and isinstance(fn.body[0], ast.Expr) and isinstance(fn.body[0].value, ast.Constant) else 0
    loads = [
        ast.Assign(
            targets=[ast.Name(id=f"opts_{a}_", ctx=ast.Store())],
            value=ast.Attribute(value=ast.Name(id="opts", ctx=ast.Load()), attr=a, ctx=ast.Load()),
            lineno=0,
        )
        for a in sorted(t.found)
    ]
    fn.body[first:first] = loads
    return True


def inline_module(source: str) -> str:
    """Inline the hot per-element calls of a generated codec module; returns the new source."""
    skeleton, used = _split(source)
    tree = ast.parse(skeleton)  # the rewritable functions alone: most of a module is checked code, left as it is
    funcs = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
    before = {name: _Facts(f) for name, f in funcs.items() if _rewritable(name)}  # one walk each, as rendered
    order = _bottom_up(funcs, before)
    changed: set[str] = set()
    for f in order:
        inl = _Inliner(funcs, f, before[f.name])
        if inl.loops:  # call sites are inlined only inside loops
            inl.visit(f)
        if inl.changed:
            changed.add(f.name)
        else:  # as rendered: what its callers ask of it is what was gathered
            f.__dict__.setdefault(_facts.attr, before[f.name])
    for f in order:  # after all inlining: a callee's hoisted reads would land back inside its caller's loop
        if before[f.name].loops and _hoist_options(f):  # inlining adds no loop to a function without one
            changed.add(f.name)
    if not changed:
        return source
    live = _live(tree, funcs, lambda name: _facts(funcs[name]).calls, used)
    lines = source.splitlines(keepends=True)
    edits = []
    for node in tree.body:
        if not isinstance(node, ast.FunctionDef) or not _rewritable(node.name):
            continue
        start, stop = node.lineno - 1, node.end_lineno
        if node.name not in live:
            edits.append((start, stop, ""))
        elif node.name in changed:
            ast.fix_missing_locations(node)
            edits.append((start, stop, ast.unparse(node) + "\n"))
    for start, stop, text in sorted(edits, reverse=True):
        lines[start:stop] = [text]
    return "".join(lines)


def _bottom_up(funcs: dict, facts: dict[str, _Facts]) -> list[ast.FunctionDef]:
    """The rewritable functions, each after everything it calls."""
    order: list[ast.FunctionDef] = []
    seen: set[str] = set()

    def visit(f: ast.FunctionDef, stack: tuple = ()):
        if f.name in seen or f.name in stack:
            return
        for c in sorted(facts[f.name].calls):
            if c in funcs and c.startswith(INLINE_PREFIXES):
                visit(funcs[c], stack + (f.name,))
        seen.add(f.name)
        order.append(f)

    for name, f in funcs.items():
        if _rewritable(name):
            visit(f)
    return order


def _split(source: str) -> tuple[str, set[str]]:
    """The module's rewritable top-level functions, every other line blank (line numbers kept), and every
    identifier the other lines hold (what they may call)."""
    kept, rest = [], []
    keep = False
    for line in source.splitlines(keepends=True):
        if _TOP.match(line):  # a top-level statement starts (not a continuation, a comment or a blank line)
            m = _DEF.match(line)
            keep = m is not None and _rewritable(m.group(1))
        kept.append(line if keep else "\n")
        if not keep:
            rest.append(line)
    return "".join(kept), set(_NAME.findall("".join(rest)))


_TOP = re.compile(r"[A-Za-z_@]")
_DEF = re.compile(r"def (\w+)\(")
_NAME = re.compile(r"[A-Za-z_]\w*")


def _live(tree: ast.Module, funcs: dict, calls, used: set[str]) -> set[str]:
    """Functions reachable from the code that is kept (entry points, everything not inlinable, and ``used``: the
    names the module's other code holds); ``calls(name)``: what a function calls by name now."""
    called: set[str] = set(INLINE_ROOTS) | used
    for node in tree.body:
        if not (isinstance(node, ast.FunctionDef) and node.name.startswith(INLINE_PREFIXES)):
            called |= {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
    live: set[str] = set()
    todo = [n for n in called if n in funcs]
    while todo:
        n = todo.pop()
        if n in live:
            continue
        live.add(n)
        todo.extend(c for c in calls(n) if c in funcs)
    return live
