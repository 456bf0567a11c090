# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""Every Sphinx cross-reference in a docstring of the package or of tools/ (``:mod:``, ``:func:``,
``:class:``, ``:meth:``, ``:data:``, ``:attr:``, ``:exc:``) names something that exists, so a
docstring cannot keep pointing at a module or function that moved or went.

The targets are resolved from the source (no module is imported, so no backend or torch is
needed): ``.x.y`` as a relative import of the docstring's module would be, ``..x`` one package
up; a bare name in the enclosing class, then the module, then as an absolute dotted name.
Names outside the package and tools/ (``sys.setprofile``) are looked up in the standard library
by importing it.
"""

import ast
import importlib
import re
from pathlib import Path

import pytest

from support.common import REPO

pytestmark = pytest.mark.repository

ROLE = re.compile(r":(mod|func|class|meth|data|attr|exc|obj|const):`~?([^`<>]+?)(?:\(\))?`")
ROOTS = ("dense_perception", "tools")


def _module_files() -> dict[str, Path]:
    """Dotted module name -> file, for the package and tools/ (a package is its __init__)."""
    files = {}
    for root in ROOTS:
        for path in (REPO / root).rglob("*.py"):
            parts = path.relative_to(REPO).with_suffix("").parts
            files[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return files


FILES = _module_files()
_TREES: dict[str, ast.Module] = {}


def _tree(module: str) -> ast.Module:
    if module not in _TREES:
        _TREES[module] = ast.parse(FILES[module].read_text())
    return _TREES[module]


def _package(module: str) -> str:
    """The package a relative import in ``module`` starts from."""
    return module if FILES[module].name == "__init__.py" else module.rpartition(".")[0]


def _top_level(body: list[ast.stmt]) -> list[ast.stmt]:
    """A body's statements, those under if/try/with blocks included (conditional definitions)."""
    out = []
    for node in body:
        out.append(node)
        for field in ("body", "orelse", "finalbody", "handlers"):
            out += _top_level([n for n in getattr(node, field, []) if isinstance(n, ast.stmt)]
                              if field != "handlers" else
                              [s for h in getattr(node, field, []) for s in h.body])
    return out


def _bound(body: list[ast.stmt], module: str) -> dict[str, ast.AST | str]:
    """The names a body binds: definitions and assignments (their node) and imports (the full
    dotted name they stand for)."""
    names: dict[str, ast.AST | str] = {}
    for node in _top_level(body):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names[node.name] = node
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                for name in ast.walk(target):
                    if isinstance(name, ast.Name):
                        names[name.id] = node
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names[node.target.id] = node
        elif isinstance(node, ast.Import):
            for alias in node.names:
                names[alias.asname or alias.name.split(".")[0]] = \
                    alias.name if alias.asname else alias.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                package = _package(module).split(".")
                package = package[:len(package) - node.level + 1]
                base = ".".join(package + ([base] if base else []))
            for alias in node.names:
                names[alias.asname or alias.name] = f"{base}.{alias.name}"
    return names


def _instance_attributes(cls: ast.ClassDef) -> set[str]:
    """The names a class's methods assign on ``self``."""
    return {node.attr for node in ast.walk(cls) if isinstance(node, ast.Attribute)
            and isinstance(node.ctx, ast.Store) and isinstance(node.value, ast.Name)
            and node.value.id == "self"}


def _in_class(cls: ast.ClassDef, parts: list[str], module: str) -> bool:
    if not parts:
        return True
    if len(parts) == 1 and parts[0] in _instance_attributes(cls):
        return True
    member = _bound(cls.body, module).get(parts[0])
    if member is None:  # inherited: look in the bases this module can name
        return any(_resolve_dotted(_base_name(base, module), parts, module)
                   for base in cls.bases if _base_name(base, module))
    return _in_binding(member, parts[1:], module)


def _base_name(base: ast.expr, module: str) -> str | None:
    """A base class's dotted name as the module binds it (None: not a plain name)."""
    if isinstance(base, ast.Name):
        bound = _bound(_tree(module).body, module).get(base.id)
        if isinstance(bound, str):
            return bound
        if isinstance(bound, ast.ClassDef):
            return f"{module}.{base.id}"
    return None


def _resolve_dotted(name: str, more: list[str], module: str) -> bool:
    """Whether ``name`` (dotted, absolute) followed by ``more`` attributes exists."""
    return _resolve(name.split(".") + more)


def _in_binding(binding: ast.AST | str, rest: list[str], module: str) -> bool:
    if isinstance(binding, str):  # an imported name: follow it
        return _resolve(binding.split(".") + rest)
    if isinstance(binding, ast.ClassDef):
        return _in_class(binding, rest, module)
    return not rest  # a function or a value: nothing below it to check


def _in_module(module: str, parts: list[str]) -> bool:
    if not parts:
        return True
    if f"{module}.{parts[0]}" in FILES:
        return _in_module(f"{module}.{parts[0]}", parts[1:])
    binding = _bound(_tree(module).body, module).get(parts[0])
    return binding is not None and _in_binding(binding, parts[1:], module)


def _resolve(parts: list[str]) -> bool:
    """Whether the absolute dotted name ``parts`` exists (in the package, tools/ or elsewhere)."""
    if parts[0] in ROOTS:
        return parts[0] in FILES and _in_module(parts[0], parts[1:])
    for cut in range(len(parts), 0, -1):  # outside: import the longest module prefix
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for attr in parts[cut:]:
            if not hasattr(obj, attr):
                return False
            obj = getattr(obj, attr)
        return True
    return False


def _resolves(target: str, module: str, cls: ast.ClassDef | None) -> bool:
    """Whether a reference written in ``module`` (inside ``cls``, if any) names something."""
    if target.startswith("."):
        dots = len(target) - len(target.lstrip("."))
        package = _package(module).split(".")
        base = package[:len(package) - dots + 1]
        return bool(base) and _resolve(base + target[dots:].split("."))
    parts = target.split(".")
    return ((cls is not None and _in_class(cls, parts, module))
            or _in_module(module, parts) or _resolve(parts))


def _references() -> list[tuple[str, int, str, str, ast.ClassDef | None]]:
    """(module, line, role, target, enclosing class) of every reference in a docstring (a
    string statement: module, class and function docstrings, and attribute docstrings)."""
    found = []

    def visit(node: ast.AST, module: str, cls: ast.ClassDef | None) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.Expr) and isinstance(child.value, ast.Constant) \
                    and isinstance(child.value.value, str):
                for match in ROLE.finditer(child.value.value):
                    found.append((module, child.lineno, match.group(1), match.group(2), cls))
            visit(child, module, child if isinstance(child, ast.ClassDef) else cls)

    for module in sorted(FILES):
        visit(_tree(module), module, None)
    return found


def test_references_are_found():
    """The walk sees the references (a broken pattern would pass everything)."""
    refs = _references()
    roles = {role for _, _, role, _, _ in refs}
    assert len(refs) > 100 and {"mod", "func", "class", "meth", "data"} <= roles


def test_a_stale_reference_is_caught():
    """The resolver says no to names that do not exist, relative or absolute."""
    module = "dense_perception.core.settings.table"
    assert _resolves(".row.ParamSpec", module, None)
    assert _resolves("dataclasses.replace", module, None)
    assert not _resolves(".row.NoSuchSpec", module, None)
    assert not _resolves(".no_such_module", module, None)
    assert not _resolves("dense_perception.core.no_such_module", module, None)
    assert not _resolves("dataclasses.no_such_function", module, None)


def test_every_docstring_reference_names_something_that_exists():
    stale = [f"{FILES[module].relative_to(REPO)}:{line}: :{role}:`{target}`"
             for module, line, role, target, cls in _references()
             if not _resolves(target, module, cls)]
    assert stale == [], "references to nothing:\n" + "\n".join(stale)
