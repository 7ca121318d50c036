"""Builds libcgram from the repository this folder sits in (cargo build
--release) and puts the shared library inside the `cgram` package, so that
the wheel carries it: `pip install ./python` from the repository root."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

from setuptools import Distribution, setup
from setuptools.command.build_py import build_py

try:
    from setuptools.command.bdist_wheel import bdist_wheel
except ImportError:  # setuptools before 70.1
    from wheel.bdist_wheel import bdist_wheel

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

if sys.platform == "win32":
    LIBRARY = "cgram.dll"
elif sys.platform == "darwin":
    LIBRARY = "libcgram.dylib"
else:
    LIBRARY = "libcgram.so"


class BuildWithLibrary(build_py):
    def run(self):
        super().run()
        target = Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))
        subprocess.run(
            ["cargo", "build", "--release", "--lib", "--manifest-path", str(ROOT / "Cargo.toml")],
            check=True,
            env={**os.environ, "CARGO_TARGET_DIR": str(target)},
        )
        dest = Path(self.build_lib) / "cgram"
        dest.mkdir(parents=True, exist_ok=True)
        shutil.copy2(target / "release" / LIBRARY, dest / LIBRARY)


class BinaryDistribution(Distribution):
    """A wheel for this platform: it holds a shared library."""

    def has_ext_modules(self):
        return True


class AnyPythonWheel(bdist_wheel):
    """The library is loaded with ctypes, not built against Python: one
    wheel per platform serves every Python 3 (py3-none-<platform>)."""

    def get_tag(self):
        _, _, platform = super().get_tag()
        return "py3", "none", platform


setup(
    cmdclass={"build_py": BuildWithLibrary, "bdist_wheel": AnyPythonWheel},
    distclass=BinaryDistribution,
)
