"""The package's layers import one way (read from the source, module level and inside
functions alike): the operator layer never imports a front end, and no two
subpackages import each other in a cycle."""
import ast
import os

SRC = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "src")
PKG = os.path.join(SRC, "mxnet")
FRONT_ENDS = ("mxnet.ndarray", "mxnet.symbol", "mxnet.autograd", "mxnet.gluon",
              "mxnet.module", "mxnet.numpy", "mxnet.numpy_extension")


def _modules():
    """{module name: path} for every module of the package."""
    out = {}
    for root, _, files in os.walk(PKG):
        for f in files:
            if f.endswith(".py"):
                path = os.path.join(root, f)
                rel = os.path.relpath(path, SRC)[:-3].replace(os.sep, ".")
                out[rel[:-len(".__init__")] if rel.endswith(".__init__") else rel] = path
    return out


def _imports(name, path, known=None):
    """Absolute names of every module ``name`` imports, anywhere in its source (``from
    m import x`` counts as m.x when that is a module of ``known``, else as m)."""
    is_pkg = path.endswith("__init__.py")
    with open(path, encoding="utf-8") as fh:
        tree = ast.parse(fh.read())
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".")
                base = base[:len(base) - node.level + (1 if is_pkg else 0)]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module
            for a in node.names:
                sub = f"{mod}.{a.name}"
                found.add(sub if known is None or sub in known else mod)
    return {m for m in found if m and m.split(".")[0] == "mxnet"}


def _under(mod, prefix):
    return mod == prefix or mod.startswith(prefix + ".")


def test_operator_layer_imports_no_front_end():
    bad = []
    mods = _modules()
    for name, path in mods.items():
        if _under(name, "mxnet.operator"):
            bad += [f"{name} -> {m}" for m in _imports(name, path, mods)
                    if any(_under(m, fe) for fe in FRONT_ENDS)]
    assert not bad, "the operator layer imports front ends:\n" + "\n".join(sorted(bad))


# Cycles not cut yet. This list may only shrink (it is empty: keep it so).
KNOWN_CYCLES = []


def _subpackage(mod):
    """The top-level unit a module belongs to: mxnet.<x> (a subpackage or module)."""
    parts = mod.split(".")
    return ".".join(parts[:2]) if len(parts) > 1 else mod


def test_no_cycle_among_subpackages():
    mods = _modules()
    units = {_subpackage(n) for n in mods} - {"mxnet"}   # the root only gathers them
    graph = {}
    for name, path in mods.items():
        src = _subpackage(name)
        for m in _imports(name, path, mods):
            dst = _subpackage(m)
            if src in units and dst in units and dst != src:
                graph.setdefault(src, set()).add(dst)
    cycles = _cycles(graph)
    gone = [c for c in KNOWN_CYCLES if c not in cycles]
    assert not gone, f"cut already, remove from KNOWN_CYCLES: {gone}"
    cycles = [c for c in cycles if c not in KNOWN_CYCLES]
    assert not cycles, "import cycles between subpackages:\n" + "\n".join(
        " -> ".join(c) for c in cycles)


def _cycles(graph):
    """One witness path per strongly connected component with more than one node."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out
