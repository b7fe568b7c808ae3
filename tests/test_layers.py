"""The package layout holds (docs/architecture.md): no import cycle, imports go one way
(runtime <- passes <- autodiff; inside runtime, the op layer ``runtime.core`` <- the NumPy-named
layer ``runtime.numpy``), the NumPy-named layer reaches the op layer only through its public
surface, and no module outgrows 1,000 lines.

Imports are read from the source with ``ast``, deferred (function-level) imports included, since a
cycle hidden in a function body is still a cycle; only ``if TYPE_CHECKING:`` blocks are left out.
"""

from __future__ import annotations

import ast
import functools
import inspect
from pathlib import Path

import pytest

import runtime

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("runtime", "passes", "autodiff")

#: op-layer modules the NumPy-named layer must not import: they run ops below the public op
#: functions (kernels, the executor's plan caches, recording hooks, in-place writes, memory checks)
EXECUTOR_INTERNALS = (
    "runtime.core.kernels",
    "runtime.core.hooks",
    "runtime.core.inplace",
    "runtime.core.chunked",
    "runtime.core.memory",
    "runtime.core.operators",
)
#: of the executor, the NumPy-named layer takes only what turns data into Tensors
EXECUTOR_PUBLIC = frozenset({"asarray", "as_tensor"})


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES: dict[str, Path] = {
    _module_name(path): path for package in PACKAGES for path in sorted((ROOT / package).rglob("*.py"))
}


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _import_nodes(tree: ast.AST) -> list[ast.Import | ast.ImportFrom]:
    """Every import statement, at any depth, outside ``if TYPE_CHECKING:`` blocks."""
    found: list[ast.Import | ast.ImportFrom] = []

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            found.append(node)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return found


def imports_of(module: str) -> dict[str, set[str]]:
    """The project modules ``module`` imports, each with the names it takes from it."""
    path = MODULES[module]
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    out: dict[str, set[str]] = {}
    for node in _import_nodes(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name in MODULES:
                    out.setdefault(alias.name, set())
            continue
        base = node.module or ""
        if node.level:  # relative: from the package, up level - 1
            anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
            base = ".".join([*anchor, base] if base else anchor)
        for alias in node.names:
            target = f"{base}.{alias.name}"
            if target in MODULES:  # ``from package import submodule``
                out.setdefault(target, set())
            elif base in MODULES:
                out.setdefault(base, set()).add(alias.name)
    out.pop(module, None)
    return out


@functools.cache
def _graph() -> dict[str, dict[str, set[str]]]:
    """Each project module -> what it imports (``imports_of``): parsed on first use, not at
    collection, so only the worker that runs these tests reads the sources."""
    return {module: imports_of(module) for module in MODULES}


def _cycles() -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    graph = _graph()

    def connect(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            connect(v)
    return found


def test_the_walk_sees_the_imports_it_must_judge() -> None:
    """The walker itself: it finds a deferred import and a ``from package import module``."""
    assert "runtime.core.tensor" in _graph()["runtime.core.executor"]
    assert "runtime.core.lax" in _graph()["runtime.numpy.tensor_methods"]
    assert len(MODULES) > 100


def test_no_import_cycles() -> None:
    cycles = _cycles()
    assert not cycles, "import cycles (each line one strongly connected set of modules):\n" + "\n".join(
        " <-> ".join(c) for c in cycles
    )


def _layer(module: str) -> int:
    order = {"runtime": 0, "passes": 1, "autodiff": 2}
    return order[module.split(".")[0]]


def test_packages_import_one_way() -> None:
    """runtime <- passes <- autodiff: the runtime reaches autodiff only through its hooks."""
    wrong = [
        f"{module} imports {target}"
        for module, targets in _graph().items()
        for target in targets
        if _layer(target) > _layer(module)
    ]
    assert not wrong, "\n".join(wrong)


def test_the_op_layer_does_not_import_the_numpy_named_layer() -> None:
    wrong = [
        f"{module} imports {target}"
        for module, targets in _graph().items()
        if module.startswith("runtime.core")
        for target in targets
        if target.startswith("runtime.numpy") or target == "runtime"
    ]
    assert not wrong, "\n".join(wrong)


def test_the_numpy_named_layer_uses_only_the_public_op_layer() -> None:
    """Composed from the public op functions and vocabulary: no executor internals, no private
    name of the op layer, nothing but asarray/as_tensor of the executor itself."""
    wrong = []
    for module, targets in _graph().items():
        if not module.startswith("runtime.numpy"):
            continue
        for target, names in targets.items():
            if target.startswith(EXECUTOR_INTERNALS):
                wrong.append(f"{module} imports {target}")
            elif target == "runtime.core.executor" and names - EXECUTOR_PUBLIC:
                wrong.append(f"{module} imports {sorted(names - EXECUTOR_PUBLIC)} from the executor")
            elif target.startswith("runtime.core") and any(n.startswith("_") for n in names):
                wrong.append(f"{module} imports private {sorted(n for n in names if n.startswith('_'))} of {target}")
    assert not wrong, "\n".join(wrong)


#: modules that are one family's table and may pass the size limit (docs/architecture.md)
LONG_TABLES: frozenset[str] = frozenset()


@pytest.mark.parametrize("module", sorted(MODULES))
def test_no_module_is_over_1000_lines(module: str) -> None:
    lines = len(MODULES[module].read_text().splitlines())
    assert lines <= 1000 or module in LONG_TABLES, f"{module} has {lines} lines"


def _attached_stubs() -> list[str]:
    """The names Tensor declares for the type checker as attached from above."""
    from runtime.core import tensor

    tree = ast.parse(inspect.getsource(tensor.Tensor))
    cls = tree.body[0]
    assert isinstance(cls, ast.ClassDef)
    names: list[str] = []
    for node in cls.body:
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            for stub in node.body:
                if isinstance(stub, ast.FunctionDef):
                    names.append(stub.name)
                elif isinstance(stub, ast.Assign):
                    names.extend(t.id for t in stub.targets if isinstance(t, ast.Name))
    return names


def test_every_method_declared_as_attached_is_attached() -> None:
    """The type checker's view of Tensor and the class at run time agree: each declared method
    is on the class, put there by the layer that defines it (not left a declaration)."""
    stubs = _attached_stubs()
    assert len(stubs) > 60
    missing = [name for name in stubs if name not in vars(runtime.Tensor)]
    assert not missing, missing
    owners = {vars(runtime.Tensor)[name].__module__ for name in stubs if callable(vars(runtime.Tensor)[name])}
    assert owners == {
        "runtime.core.graph",
        "runtime.core.operators",
        "runtime.numpy.tensor_methods",
        "runtime.numpy.array_api.tensor_hooks",
        "runtime.numpy.shared_names",
    }
