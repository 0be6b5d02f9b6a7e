"""The Python packages' dependency rules, checked on the source as scripts/check-dependencies.ts
checks the TypeScript modules: each package imports only the packages listed for it (so no two
import each other in a circle), tests included. A package missing from the table fails the check,
so a new one is placed when it is added.

  agentmath_sandbox  the in-jail runner: Python's standard library only (it runs inside the jail)
  agentmath_models   our architectures, registered with transformers; model folders
  agentmath_engine   the engine: serves any model
  agentmath_train    the trainer: trains any model (it reuses the engine's process helpers and,
                     in the GPU check, measures the engine beside itself)
"""

import ast
import os
import unittest

ALLOWED = {
    "agentmath_sandbox": set(),
    "agentmath_models": set(),
    "agentmath_engine": {"agentmath_models"},
    "agentmath_train": {"agentmath_models", "agentmath_engine"},
}
ROOT = os.path.dirname(os.path.abspath(__file__))


def imported_packages(path: str) -> set:
    with open(path, encoding="utf-8") as handle:
        tree = ast.parse(handle.read(), path)
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return {name for name in names if name.startswith("agentmath_")}


class PackageDependencyTest(unittest.TestCase):
    def test_every_package_is_placed(self):
        packages = {name for name in os.listdir(ROOT) if os.path.isfile(os.path.join(ROOT, name, "__init__.py"))}
        self.assertEqual(packages, set(ALLOWED))

    def test_imports_follow_the_rules(self):
        found = []
        for package, allowed in ALLOWED.items():
            for folder, _, files in os.walk(os.path.join(ROOT, package)):
                for name in sorted(files):
                    if not name.endswith(".py"):
                        continue
                    path = os.path.join(folder, name)
                    for other in sorted(imported_packages(path) - allowed - {package}):
                        found.append(f"{os.path.relpath(path, ROOT)} imports {other}")
        self.assertEqual(found, [], "imports against the rules in this file's table")


if __name__ == "__main__":
    unittest.main()
