"""Builds libcgram from the repository this folder sits in (cargo build
--release) and the llama.cpp adapter (a C compiler), and puts both shared
libraries inside the `cgram` package, so that the wheel carries them:
`pip install ./python` from the repository root."""

import os
import shlex
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

from setuptools import Distribution, setup
from setuptools.command.build_py import build_py

try:
    from setuptools.command.bdist_wheel import bdist_wheel
except ImportError:  # setuptools before 70.1
    from wheel.bdist_wheel import bdist_wheel

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

# The library under the name its loader records (build.rs: the SONAME on
# Linux, the install name on macOS), so that the adapter linked against it
# finds the very file cgram/__init__.py loads: one libcgram per process.
if sys.platform == "win32":
    BUILT, LIBRARY, ADAPTER = "cgram.dll", "cgram.dll", None
elif sys.platform == "darwin":
    BUILT, LIBRARY, ADAPTER = "libcgram.dylib", "libcgram.0.dylib", "libcgram_llama.dylib"
else:
    BUILT, LIBRARY, ADAPTER = "libcgram.so", "libcgram.so.0", "libcgram_llama.so"


def build_adapter(dest: Path) -> None:
    """The llama.cpp adapter (adapters/llama/cgram_llama.c) as a shared
    library beside libcgram, for cgram.llama_cpp: compiled against cgram's
    own declaration of the llama.cpp interface it uses
    (cgram_llama_abi.h), with libllama left unlinked. Its llama_*
    functions are those of the libllama llama-cpp-python loaded, made
    global by cgram.llama_cpp.install() before this library is loaded."""
    cc = os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc"
    args = shlex.split(cc) + [
        "-std=gnu11", "-O2", "-fPIC", "-shared", "-Wall", "-Wextra",
        "-DCGRAM_LLAMA_OWN_ABI", "-DCGRAM_LLAMA_RUNTIME_LOOKUP",
        "-I", str(ROOT / "include"), "-I", str(ROOT / "adapters" / "llama"),
        str(ROOT / "adapters" / "llama" / "cgram_llama.c"),
        "-o", str(dest / ADAPTER), str(dest / LIBRARY),
    ]
    if sys.platform == "darwin":
        args += ["-undefined", "dynamic_lookup", "-Wl,-rpath,@loader_path",
                 "-Wl,-install_name,@rpath/" + ADAPTER]
    else:
        args += ["-Wl,-rpath,$ORIGIN", "-lpthread", "-ldl", "-lm"]
    subprocess.run(args, check=True)


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
        for stale in dest.glob("*cgram*.*"):
            if stale.suffix not in (".py", ".typed"):
                stale.unlink()
        shutil.copy2(target / "release" / BUILT, dest / LIBRARY)
        # The release profile keeps debug information (for profilers): 35 MB
        # of the library's 36 on Linux. The wheel carries the code only.
        strip = shutil.which("strip")
        if strip and sys.platform != "win32":
            subprocess.run([strip, "-S", str(dest / LIBRARY)], check=True)
        if ADAPTER:
            build_adapter(dest)


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
