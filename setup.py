"""`pip install .` (pyproject.toml): builds the native part meshplan._meshplan with this tree's
CMake project (target _meshplan, Release) for the interpreter pip runs, and packages it with
python/meshplan. Needs what tools/setup installs (cmake, g++, pybind11-dev, python3-dev and the
libraries of CMakeLists.txt); CMake's own errors say what is missing. The CMake build folder is
build/pip-cmake (MESHPLAN_PIP_BUILD_DIR to change), kept between installs so that a rebuild is
incremental."""

import os
import shutil
import subprocess
import sys
import sysconfig

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = os.path.dirname(os.path.abspath(__file__))


class CMakeExtension(Extension):
    """An extension whose sources CMake builds (none listed for setuptools)."""

    def __init__(self, name, target):
        super().__init__(name, sources=[])
        self.target = target


class CMakeBuild(build_ext):
    """build_ext that configures and builds the CMake target of each CMakeExtension and copies
    the module it makes (build/python/meshplan/_meshplan<EXT_SUFFIX>) where setuptools packs it."""

    def build_extension(self, ext):
        build = os.environ.get("MESHPLAN_PIP_BUILD_DIR", os.path.join(ROOT, "build", "pip-cmake"))
        configure = ["cmake", "-S", ROOT, "-B", build, "-DCMAKE_BUILD_TYPE=Release",
                     "-DPython3_EXECUTABLE=" + sys.executable, "-DMESHPLAN_PYTHON=ON"]
        if shutil.which("ccache"):
            configure.append("-DCMAKE_CXX_COMPILER_LAUNCHER=ccache")
        subprocess.run(configure, check=True)
        jobs = str(os.cpu_count() or 2)
        subprocess.run(["cmake", "--build", build, "--target", ext.target, "-j", jobs], check=True)
        suffix = sysconfig.get_config_var("EXT_SUFFIX")
        built = os.path.join(build, "python", "meshplan", "_meshplan" + suffix)
        if not os.path.isfile(built):
            raise RuntimeError("CMake built no %s (pybind11-dev and python3-dev for %s found?)" % (built, sys.executable))
        target = self.get_ext_fullpath(ext.name)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        shutil.copyfile(built, target)


# setuptools' own build folder inside build/ (CMake's), not beside its files.
setup(ext_modules=[CMakeExtension("meshplan._meshplan", "_meshplan")], cmdclass={"build_ext": CMakeBuild},
      options={"build": {"build_base": os.path.join("build", "pip")}})
